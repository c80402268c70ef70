#include "web/web_context.h"

#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "web/host_functions.h"

extern const char kWebRuntimeJs[];
extern const std::size_t kWebRuntimeJsSize;

namespace isolane {

bool createWebContext(IsolateOwner& owner, ContextState& state, WebContext* out,
                      std::string* error) {
  v8::Isolate* isolate = owner.isolate();
  v8::Isolate::Scope isolateScope(isolate);
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = v8::Context::New(isolate);
  state.attachTo(context);
  out->context.Reset(isolate, context);

  JsScope js(owner, out->context);
  // Apps get no `eval`-from-strings restrictions here on purpose: that is a policy question for a
  // later issue; the bundle itself is trusted code.
  v8::Local<v8::Object> host = makeHostObject(js);
  std::ignore = context->Global()->Set(context, js.str("__isolane_host"), host);
  if (state.testHooks) {
    std::ignore = context->Global()->Set(context, js.str("__capturedLogs"), v8::Array::New(isolate));
  }

  v8::TryCatch tryCatch(isolate);
  v8::Local<v8::String> source =
      v8::String::NewFromUtf8(isolate, kWebRuntimeJs, v8::NewStringType::kNormal,
                              static_cast<int>(kWebRuntimeJsSize))
          .ToLocalChecked();
  v8::ScriptOrigin origin(isolate, js.str("isolane:web-runtime.js"));
  v8::Local<v8::Script> script;
  if (!v8::Script::Compile(context, source, &origin).ToLocal(&script) ||
      script->Run(context).IsEmpty()) {
    *error = "web runtime failed to start: " + describeException(js, tryCatch);
    return false;
  }
  isolate->PerformMicrotaskCheckpoint();
  v8::Local<v8::Value> dispatch;
  if (!host->Get(context, js.str("dispatch")).ToLocal(&dispatch) || !dispatch->IsFunction()) {
    *error = "web runtime did not define host.dispatch";
    return false;
  }
  out->dispatch.Reset(isolate, dispatch.As<v8::Function>());
  out->host.Reset(isolate, host);
  if (state.testHooks) {
    std::ignore = context->Global()->Set(context, js.str("__dispatch"), dispatch);
  }
  return true;
}

}  // namespace isolane

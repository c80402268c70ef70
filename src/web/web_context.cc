#include "web/web_context.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "web/host_functions.h"

extern const char kWebRuntimeJs[];
extern const std::size_t kWebRuntimeJsSize;

namespace isolane {
namespace {

// V8's code cache for the runtime bundle, shared by every isolate of the process: the first
// isolate compiles the bundle and records the cache, later ones consume it instead of parsing
// and compiling 700 KB of JavaScript again (about 20 ms saved per new isolate).
class RuntimeCodeCache {
 public:
  // A copy for one compile (V8 takes ownership of what it is given), or null.
  v8::ScriptCompiler::CachedData* take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes_.empty() || rejected_) return nullptr;
    auto* copy = new std::uint8_t[bytes_.size()];
    std::memcpy(copy, bytes_.data(), bytes_.size());
    return new v8::ScriptCompiler::CachedData(copy, static_cast<int>(bytes_.size()),
                                              v8::ScriptCompiler::CachedData::BufferOwned);
  }
  void store(v8::Local<v8::UnboundScript> script) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!bytes_.empty()) return;
    std::unique_ptr<v8::ScriptCompiler::CachedData> data(
        v8::ScriptCompiler::CreateCodeCache(script));
    if (data && data->length > 0) bytes_.assign(data->data, data->data + data->length);
  }
  void reject() {
    std::lock_guard<std::mutex> lock(mutex_);
    rejected_ = true;  // a V8 flag mismatch, say: compile normally from now on
  }

 private:
  std::mutex mutex_;  // guards the fields below
  std::vector<std::uint8_t> bytes_;
  bool rejected_ = false;
};

RuntimeCodeCache& runtimeCodeCache() {
  static RuntimeCodeCache cache;
  return cache;
}

}  // namespace

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
  v8::ScriptOrigin origin(js.str("isolane:web-runtime.js"));
  v8::ScriptCompiler::CachedData* cached = runtimeCodeCache().take();
  v8::ScriptCompiler::Source compilerSource(source, origin, cached);
  v8::Local<v8::Script> script;
  bool compiled = v8::ScriptCompiler::Compile(context, &compilerSource,
                                              cached ? v8::ScriptCompiler::kConsumeCodeCache
                                                     : v8::ScriptCompiler::kNoCompileOptions)
                      .ToLocal(&script);
  if (compiled && cached && compilerSource.GetCachedData()->rejected) runtimeCodeCache().reject();
  bool ran = compiled && !script->Run(context).IsEmpty();
  // Recorded after the run, so the functions the bundle ran at start-up are in the cache too.
  if (ran && !cached) runtimeCodeCache().store(script->GetUnboundScript());
  if (!ran) {
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
    std::ignore = context->Global()->Set(context, js.str("__dispatchRaw"), dispatch);
  }
  return true;
}

}  // namespace isolane

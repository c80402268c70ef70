#include "web/web_context.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "web/host_functions.h"
#include "web/runtime_snapshot.h"

extern const char kWebRuntimeJs[];
extern const std::size_t kWebRuntimeJsSize;

namespace isolane {
namespace {

// The runtime bundle's source, as V8 sees it: the bytes embedded in the engine (the bundle is
// ASCII: esbuild escapes the rest), not a copy in every isolate's heap. Static and never freed;
// a snapshot records it as an external reference (runtimeSourceReference), so an isolate made from
// the snapshot points at these bytes again instead of carrying 740 KB of its own.
class RuntimeSource final : public v8::String::ExternalOneByteStringResource {
 public:
  const char* data() const override { return kWebRuntimeJs; }
  std::size_t length() const override { return kWebRuntimeJsSize; }

 protected:
  void Dispose() override {}  // shared by every isolate of the process
};

RuntimeSource& runtimeSource() {
  static RuntimeSource source;
  return source;
}

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

namespace {

// What both ways of making a context end with: keep `host` and the `dispatch` the bundle left on
// it, and give tests their hooks.
bool finish(JsScope& js, ContextState& state, v8::Local<v8::Object> host, WebContext* out,
            std::string* error) {
  v8::Isolate* isolate = js.isolate();
  v8::Local<v8::Context> context = js.context();
  v8::Local<v8::Value> dispatch;
  if (!host->Get(context, js.str("dispatch")).ToLocal(&dispatch) || !dispatch->IsFunction()) {
    *error = "web runtime did not define host.dispatch";
    return false;
  }
  out->dispatch.Reset(isolate, dispatch.As<v8::Function>());
  out->host.Reset(isolate, host);
  // The runtime's set-up of what V8 adds to each context itself (WebAssembly): see index.js.
  v8::Local<v8::Value> perContext;
  if (host->Get(context, js.str("perContext")).ToLocal(&perContext) && perContext->IsFunction()) {
    v8::TryCatch tryCatch(isolate);
    if (perContext.As<v8::Function>()->Call(context, host, 0, nullptr).IsEmpty()) {
      *error = "web runtime: per-context set-up failed: " + describeException(js, tryCatch);
      return false;
    }
  }
  if (state.testHooks) {
    std::ignore =
        context->Global()->Set(context, js.str("__capturedLogs"), v8::Array::New(isolate));
    std::ignore = context->Global()->Set(context, js.str("__dispatchRaw"), dispatch);
  }
  return true;
}

// V8 leaves the SharedArrayBuffer global out of the contexts a snapshot is made of (it adds it
// to each context made from the snapshot instead), but the bundle captures SharedArrayBuffer's
// prototype methods at start-up, as it does every builtin it uses. While the snapshot's bundle
// runs, the global is lent: the same constructor V8 adds later, found through a new buffer's
// prototype before any other script ran. Returns false if that went wrong.
bool lendSharedArrayBuffer(JsScope& js, bool lend) {
  v8::Local<v8::Context> context = js.context();
  v8::Local<v8::String> name = js.str("SharedArrayBuffer");
  if (!lend) return context->Global()->Delete(context, name).FromMaybe(false);
  v8::Local<v8::Value> constructor;
  if (!v8::SharedArrayBuffer::New(js.isolate(), 0)
           ->Get(context, js.str("constructor"))
           .ToLocal(&constructor) ||
      !constructor->IsFunction()) {
    return false;
  }
  return context->Global()
      ->DefineOwnProperty(context, name, constructor, v8::DontEnum)
      .FromMaybe(false);
}

}  // namespace

intptr_t runtimeSourceReference() { return reinterpret_cast<intptr_t>(&runtimeSource()); }

bool createWebContext(IsolateOwner& owner, ContextState& state, WebContext* out,
                      std::string* error) {
  return owner.snapshot() ? createWebContextFromSnapshot(owner, state, out, error)
                          : createWebContextFromSource(owner, state, out, error);
}

bool createWebContextFromSnapshot(IsolateOwner& owner, ContextState& state, WebContext* out,
                                  std::string* error) {
  v8::Isolate* isolate = owner.isolate();
  v8::Isolate::Scope isolateScope(isolate);
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context;
  if (!v8::Context::FromSnapshot(isolate, kSnapshotContextIndex).ToLocal(&context)) {
    *error = "web runtime: the snapshot holds no runtime context";
    return false;
  }
  state.attachTo(context);
  out->context.Reset(isolate, context);
  JsScope js(owner, out->context);
  v8::Local<v8::Object> host;
  if (!context->GetDataFromSnapshotOnce<v8::Object>(kSnapshotHostIndex).ToLocal(&host)) {
    *error = "web runtime: the snapshot's context has no host object";
    return false;
  }
  setHostTimeOrigin(js, host);  // the snapshot carries its maker's
  return finish(js, state, host, out, error);
}

bool createWebContextFromSource(IsolateOwner& owner, ContextState& state, WebContext* out,
                                std::string* error) {
  bool forSnapshot = owner.creator() != nullptr;
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

  if (forSnapshot && !lendSharedArrayBuffer(js, true)) {
    *error = "web runtime: cannot lend SharedArrayBuffer to the snapshot's bundle";
    return false;
  }
  v8::TryCatch tryCatch(isolate);
  v8::Local<v8::String> source =
      v8::String::NewExternalOneByte(isolate, &runtimeSource()).ToLocalChecked();
  v8::ScriptOrigin origin(js.str("isolane:web-runtime.js"));
  // A snapshot's maker neither takes nor makes code caches (V8 forbids it there).
  v8::ScriptCompiler::CachedData* cached = forSnapshot ? nullptr : runtimeCodeCache().take();
  v8::ScriptCompiler::Source compilerSource(source, origin, cached);
  v8::Local<v8::Script> script;
  bool compiled = v8::ScriptCompiler::Compile(context, &compilerSource,
                                              cached ? v8::ScriptCompiler::kConsumeCodeCache
                                                     : v8::ScriptCompiler::kNoCompileOptions)
                      .ToLocal(&script);
  if (compiled && cached && compilerSource.GetCachedData()->rejected) runtimeCodeCache().reject();
  bool ran = compiled && !script->Run(context).IsEmpty();
  // Recorded after the run, so the functions the bundle ran at start-up are in the cache too.
  if (ran && !cached && !forSnapshot) runtimeCodeCache().store(script->GetUnboundScript());
  if (!ran) {
    *error = "web runtime failed to start: " + describeException(js, tryCatch);
    return false;
  }
  isolate->PerformMicrotaskCheckpoint();
  if (forSnapshot && !lendSharedArrayBuffer(js, false)) {
    *error = "web runtime: cannot take SharedArrayBuffer back from the snapshot's bundle";
    return false;
  }
  return finish(js, state, host, out, error);
}

}  // namespace isolane

// EventLoop: host operations (outbound fetch, service-binding calls) and the events that
// complete them.
#include <tuple>

#include "obs/log.h"
#include "runtime/array_buffers.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {

std::uint64_t EventLoop::owningRequest(ContextState& state) {
  v8::Isolate* isolate = owner_.isolate();
  v8::Local<v8::Value> data = isolate->GetContinuationPreservedEmbedderData();
  if (!data.IsEmpty() && data->IsNumber()) {
    auto id = static_cast<std::uint64_t>(data.As<v8::Number>()->Value());
    // A request that has ended owns nothing more: its leftovers go with the running turn's.
    if (requests_.contains(id)) return id;
  }
  return state.currentRequest;
}

bool EventLoop::overOpLimit(ContextState& state) {
  std::uint64_t request = owningRequest(state);
  if (!requests_.contains(request) || hostOps_.countOf(request) < options_.maxHostOpsPerRequest) {
    return false;
  }
  v8::Isolate* isolate = owner_.isolate();
  std::string message = "too many fetches and service calls in flight for one request (" +
                        std::to_string(options_.maxHostOpsPerRequest) + ")";
  isolate->ThrowException(v8::Exception::RangeError(
      v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked()));
  return true;
}

std::uint64_t EventLoop::registerOp(ContextState& state, v8::Local<v8::Object> callbacks,
                                    HostOpKind kind, std::uint64_t id) {
  App* app = appByState_.at(&state);
  std::uint64_t request = owningRequest(state);
  hostOps_.add(id, app, request, v8::Global<v8::Object>(owner_.isolate(), callbacks), kind);
  return id;
}

void EventLoop::endHostOp(std::uint64_t op, HostOpKind kind) {
  if (kind == HostOpKind::kFetch) fetch_.abort(op);
  offload_.drop(op);  // offloaded work not started yet need not run
}

std::uint64_t EventLoop::fetchStart(ContextState& state, AppRequest request,
                                    std::chrono::milliseconds timeout,
                                    v8::Local<v8::Object> callbacks) {
  App* app = appByState_.at(&state);
  if (app->execution && app->execution->spec.outbound != OutboundMode::kNative) {
    // The runtime's fetch() is replaced for such an execution; this is the second lock.
    v8::Isolate* isolate = owner_.isolate();
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8Literal(isolate, "fetch() is disabled for this execution")));
    return 0;
  }
  if (overOpLimit(state)) return 0;
  FetchInit init;
  init.method = std::move(request.method);
  init.url = std::move(request.url);
  init.headers = std::move(request.headers);
  init.body = std::move(request.body);
  init.bodyHold = std::move(request.bodyHold);
  if (timeout.count() > 0) init.timeout = timeout;
  init.policy = FetchPolicy(app->spec.fetchAllow);
  // Executions share one egress policy (public addresses only): the master knows no app by their
  // names.
  init.app = app->execution ? std::string(kCodeModeEgressApp) : app->spec.name;
  // In process, this thread's own client performs it: connections shared within the app only
  // (FetchInit::poolKey). Over the wire the master decides.
  init.poolKey = app->execution ? std::string() : app->spec.name;
  std::uint64_t id = fetch_.start(std::move(init), fetchEvents_);
  return registerOp(state, callbacks, HostOpKind::kFetch, id);
}

void EventLoop::fetchPull(ContextState& state, std::uint64_t op) {
  auto* h = hostOps_.find(op);  // only the calling app's own fetches
  if (h && &h->owner->state == &state && h->kind == HostOpKind::kFetch) fetch_.pull(op);
}

void EventLoop::fetchAbort(ContextState& state, std::uint64_t op) {
  auto* h = hostOps_.find(op);
  if (h && &h->owner->state == &state && h->kind == HostOpKind::kFetch) fetch_.abort(op);
}

void EventLoop::serviceFetch(ContextState& state, AppRequest request,
                             v8::Local<v8::Object> callbacks) {
  if (overOpLimit(state)) return;
  std::uint64_t op = registerOp(state, callbacks, HostOpKind::kService, nextServiceOp_++);
  int depth = 0;
  if (auto* it = requests_.find(owningRequest(state)); it) {
    depth = it->job.depth + 1;
  }
  if (depth > kMaxServiceDepth) {
    serviceResults_.push_back(ServiceResult{
        op, AppResponse::failed(FailureKind::kHandlerError, "service bindings nested more than " +
                                                                std::to_string(kMaxServiceDepth) +
                                                                " deep (a binding cycle?)")});
    return;
  }
  if (!localApps_.knows(request.app)) {
    serviceResults_.push_back(ServiceResult{
        op, AppResponse::failed(FailureKind::kUnknownApp, "no app named '" + request.app + "'")});
    return;
  }
  request.requestId = state.currentRequestId.empty() ? "service" : state.currentRequestId;
  // Started after this turn: a turn never nests inside another.
  RequestJob job{std::move(request), [self = std::weak_ptr<EventLoop*>(self_), op](AppResponse r) {
                   // The called app runs in another isolate of this thread; this one may have
                   // been recycled or disposed since.
                   if (auto loop = self.lock()) {
                     (*loop)->serviceResults_.push_back(ServiceResult{op, std::move(r)});
                   }
                 }};
  job.depth = depth;
  deferredJobs_.push_back(std::move(job));
}

std::uint64_t EventLoop::offload(ContextState& state, OffloadWork work,
                                 v8::Local<v8::Object> callbacks) {
  if (overOpLimit(state)) return 0;
  // A "service" operation to the rest of the loop: nothing to abort in the fetch client. When its
  // request ends first, the result is dropped on arrival.
  std::uint64_t op = registerOp(state, callbacks, HostOpKind::kService, nextServiceOp_++);
  offload_.post(op, std::move(work));
  return op;
}

void EventLoop::callBack(JsScope& js, std::uint64_t op, const char* method, int argc,
                         v8::Local<v8::Value>* argv, bool last) {
  auto* h = hostOps_.find(op);
  if (!h) return;
  v8::Local<v8::Object> callbacks = h->callbacks.Get(js.isolate());
  // The operation is forgotten before JavaScript runs: the callback may end its request (which
  // removes the request's operations), and nothing here may point into hostOps_ by then.
  if (last) hostOps_.take(op);
  // The runtime's callbacks object has the methods as own properties; nothing else is called.
  v8::Local<v8::Value> fn = getOwn(js, callbacks, js.str(method));
  if (!fn.IsEmpty() && fn->IsFunction()) {
    std::ignore = fn.As<v8::Function>()->Call(js.context(), callbacks, argc, argv);
  }
}

void EventLoop::runHostEvents() {
  runStreamCancels();
  deliverBodies();
  // Only the calls made before this pass: calls they make wait for the next pass, so a chain of
  // bindings cannot keep the executor from its queue, timers and deadlines.
  if (!deferredJobs_.empty()) {  // most passes have none: no deque made (one allocates)
    std::deque<RequestJob> jobs;
    jobs.swap(deferredJobs_);
    for (RequestJob& job : jobs) localApps_.start(std::move(job));
  }
  while (!fetchEvents_.empty()) {
    FetchEvent event = std::move(fetchEvents_.front());
    fetchEvents_.pop_front();
    auto* h = hostOps_.find(event.op);
    if (!h) continue;  // its request ended
    App& app = *h->owner;
    turn(app, h->request, [&](JsScope& js, v8::TryCatch&) {
      v8::Isolate* isolate = js.isolate();
      switch (event.kind) {
        case FetchEvent::Kind::kHead: {
          v8::Local<v8::Value> argv[] = {v8::Integer::New(isolate, event.status),
                                         byteString(js, event.statusText),
                                         headerListArray(js, event.headers)};
          callBack(js, event.op, "onHead", 3, argv, false);
          break;
        }
        case FetchEvent::Kind::kChunk: {
          v8::Local<v8::ArrayBuffer> buffer;
          if (!newArrayBufferQuietly(isolate, event.data.size(), event.data.data())
                   .ToLocal(&buffer)) {
            fetch_.abort(event.op);
            v8::Local<v8::Value> argv[] = {js.str("no room for the response body"),
                                           js.str("too-large")};
            callBack(js, event.op, "onError", 2, argv, true);
            break;
          }
          v8::Local<v8::Value> argv[] = {v8::Uint8Array::New(buffer, 0, event.data.size())};
          callBack(js, event.op, "onChunk", 1, argv, false);
          break;
        }
        case FetchEvent::Kind::kEnd:
          callBack(js, event.op, "onEnd", 0, nullptr, true);
          break;
        case FetchEvent::Kind::kError: {
          if (event.errorKind == "policy") {
            logEvent(Level::kWarn, "fetch refused by policy",
                     {{"app", app.spec.name},
                      {"request", app.state.currentRequestId},
                      {"reason", event.data}});
          }
          v8::Local<v8::Value> argv[] = {js.str(event.data), js.str(event.errorKind)};
          callBack(js, event.op, "onError", 2, argv, true);
          break;
        }
      }
    });
  }
  while (!serviceResults_.empty()) {
    ServiceResult result = std::move(serviceResults_.front());
    serviceResults_.pop_front();
    auto* h = hostOps_.find(result.op);
    if (!h) continue;
    App& app = *h->owner;
    turn(app, h->request, [&](JsScope& js, v8::TryCatch&) {
      v8::Isolate* isolate = js.isolate();
      const AppResponse& r = result.response;
      if (r.failure != FailureKind::kNone) {
        v8::Local<v8::Value> argv[] = {
            js.str(std::string(failureCode(r.failure)) + ": " + r.failureDetail)};
        callBack(js, result.op, "onError", 1, argv, true);
        return;
      }
      v8::Local<v8::ArrayBuffer> buffer;
      if (!newArrayBufferQuietly(isolate, r.body.size(), r.body.data()).ToLocal(&buffer)) {
        v8::Local<v8::Value> argv[] = {js.str("no room for the service response body")};
        callBack(js, result.op, "onError", 1, argv, true);
        return;
      }
      v8::Local<v8::Value> argv[] = {v8::Integer::New(isolate, r.status),
                                     byteString(js, r.statusText), headerListArray(js, r.headers),
                                     v8::Uint8Array::New(buffer, 0, r.body.size())};
      callBack(js, result.op, "onResponse", 4, argv, true);
    });
  }
  for (auto& [opId, outcome] : offload_.collect()) {
    std::uint64_t op = opId;
    OffloadResult& result = outcome;
    auto* h = hostOps_.find(op);
    if (!h) continue;  // its request ended
    turn(*h->owner, h->request, [&](JsScope& js, v8::TryCatch&) {
      if (!result.errorName.empty()) {
        v8::Local<v8::Value> argv[] = {js.str(result.errorName), js.str(result.error)};
        callBack(js, op, "onError", 2, argv, true);
        return;
      }
      std::vector<v8::Local<v8::Value>> argv;
      for (const std::vector<std::uint8_t>& value : result.values) {
        v8::Local<v8::ArrayBuffer> buffer;
        if (!newArrayBufferQuietly(js.isolate(), value.size(), value.data()).ToLocal(&buffer)) {
          v8::Local<v8::Value> error[] = {js.str("OperationError"), js.str("out of memory")};
          callBack(js, op, "onError", 2, error, true);
          return;
        }
        argv.push_back(v8::Uint8Array::New(buffer, 0, value.size()));
      }
      callBack(js, op, "onDone", static_cast<int>(argv.size()), argv.data(), true);
    });
  }
}

}  // namespace isolane

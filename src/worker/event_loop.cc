#include "worker/event_loop.h"

#include <tuple>
#include "obs/log.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/array_buffers.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/app_response.h"

namespace isolane {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

double wallClockMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}


}  // namespace

EventLoop::EventLoop(const EventLoopOptions& options, const Clock& clock, LogSink& log,
                     Doorbell& wake)
    : options_(options),
      clock_(clock),
      log_(log),
      owner_(options.limits, [&wake] { wake.ring(); }),
      watchdog_([this] { owner_.terminate(); }),
      fetch_(wake, options.fetch) {
  // Installed for the isolate's whole life (it does nothing outside runForegroundTasks): a
  // reaction is visible to the hook only if the hook was installed when its promise was made,
  // and an `await` made in a request's turn may be resumed by a V8 task much later. The cost is
  // about 0.1 us per await.
  v8::Isolate::Scope scope(owner_.isolate());
  owner_.isolate()->SetPromiseHook(&EventLoop::promiseHook);
}

EventLoop::~EventLoop() {
  failAll(FailureKind::kShuttingDown, "executor stopped");
  // Globals must be reset before the isolate is disposed.
  hostOps_.clear();
  timers_.clear();
  apps_.clear();
}

template <typename Body>
void EventLoop::turn(App& app, std::uint64_t requestId, Body&& body) {
  v8::Isolate* isolate = owner_.isolate();
  nanoseconds budget = options_.cpuLimit;
  if (auto it = requests_.find(requestId); it != requests_.end()) {
    budget -= it->second.cpuUsed;
    app.state.currentRequestId = it->second.job.request.requestId;
  } else {
    app.state.currentRequestId.clear();
  }
  app.state.currentRequest = requestId;
  nanoseconds cpuStart = threadCpuTime();
  watchdog_.arm(budget);
  bool terminated;
  {
    JsScope js(owner_, app.web.context);
    // Promise reactions created in this turn remember the request; when one runs later, in
    // whichever turn, V8 restores it, so work it starts belongs to its own request.
    isolate->SetContinuationPreservedEmbedderData(
        requestId ? v8::Local<v8::Value>(v8::Number::New(isolate, static_cast<double>(requestId)))
                  : v8::Local<v8::Value>(v8::Undefined(isolate)));
    v8::TryCatch tryCatch(isolate);
    body(js, tryCatch);
    if (!tryCatch.HasTerminated() && !isolate->IsExecutionTerminating()) {
      isolate->PerformMicrotaskCheckpoint();
    }
    terminated = tryCatch.HasTerminated() || isolate->IsExecutionTerminating();
    isolate->SetContinuationPreservedEmbedderData(v8::Undefined(isolate));
  }
  bool byWatchdog = watchdog_.disarm();
  if (terminated) {
    // Microtasks the terminated code queued must die with it, not run in the next turn on
    // another request's budget. V8 empties the queue when a checkpoint is terminated.
    v8::Isolate::Scope isolateScope(isolate);
    v8::HandleScope handles(isolate);
    isolate->TerminateExecution();
    isolate->PerformMicrotaskCheckpoint();
  }
  if (terminated || byWatchdog) isolate->CancelTerminateExecution();
  bool heap = owner_.takeHeapLimitHit();
  nanoseconds used = threadCpuTime() - cpuStart;
  app.state.currentRequest = 0;
  app.state.currentRequestId.clear();

  auto it = requests_.find(requestId);
  if (it != requests_.end()) it->second.cpuUsed += used;
  if (!(terminated || byWatchdog || heap)) return;

  FailureKind kind = heap ? FailureKind::kHeapLimit : FailureKind::kCpuLimit;
  std::string detail =
      heap ? "the isolate's heap limit (" + std::to_string(options_.limits.heapMb) +
                 " MiB) was reached; execution was terminated"
           : "JavaScript used more than " + std::to_string(options_.cpuLimit.count()) +
                 " ms of CPU time; execution was terminated";
  if (it != requests_.end()) {
    fail(requestId, kind, detail);
  } else {
    logEvent(Level::kError, detail + " (outside a request)", {{"app", app.spec.name}});
  }
}

Status EventLoop::loadApp(const AppSpec& spec) {
  if (apps_.count(spec.name)) return Error{"an app named '" + spec.name + "' is already loaded"};
  auto app = std::make_unique<App>();
  app->spec = spec;
  app->state.appName = spec.name;
  app->state.timers = this;
  app->state.ops = this;
  app->state.log = &log_;
  app->state.modules = &app->modules;
  app->state.testHooks = spec.testHooks;
  appByState_[&app->state] = app.get();
  app->state.createdAt = std::chrono::steady_clock::now();
  app->state.timeOriginMs = wallClockMs();
  std::string error;
  if (!createWebContext(owner_, app->state, &app->web, &error)) return Error{error};

  bool loaded = false;
  turn(*app, 0, [&](JsScope& js, v8::TryCatch&) {
    v8::Isolate* isolate = js.isolate();
    // env is built before the app's module runs, so nothing the module does to prototypes can
    // reach how it is made.
    v8::Local<v8::Object> vars = v8::Object::New(isolate);
    for (const auto& [key, value] : spec.vars) setOwn(js, vars, js.str(key), js.str(value));
    std::vector<v8::Local<v8::Value>> services;
    for (const auto& [binding, target] : spec.services) {
      v8::Local<v8::Value> pair[] = {js.str(binding), js.str(target)};
      services.push_back(v8::Array::New(isolate, pair, 2));
    }
    // The runtime builds env: the vars, and a binding object per service.
    v8::Local<v8::Value> createEnv = getOwn(js, app->web.host.Get(isolate), js.str("createEnv"));
    v8::Local<v8::Value> env = vars;
    if (!createEnv.IsEmpty() && createEnv->IsFunction()) {
      v8::Local<v8::Value> argv[] = {vars,
                                     v8::Array::New(isolate, services.data(), services.size())};
      if (!createEnv.As<v8::Function>()->Call(js.context(), v8::Undefined(isolate), 2, argv)
               .ToLocal(&env) ||
          !env->IsObject()) {
        error = spec.modulePath + ": the runtime could not build env";
        return;
      }
    } else if (!spec.services.empty()) {
      error = spec.modulePath + ": service bindings need a runtime with host.createEnv";
      return;
    }
    app->env.Reset(isolate, env.As<v8::Object>());
    v8::Local<v8::Value> self = v8::External::New(isolate, this);
    v8::Local<v8::Function> respond, fail;
    if (!v8::Function::New(js.context(), &EventLoop::respondCallback, self, 6,
                           v8::ConstructorBehavior::kThrow)
             .ToLocal(&respond) ||
        !v8::Function::New(js.context(), &EventLoop::failCallback, self, 2,
                           v8::ConstructorBehavior::kThrow)
             .ToLocal(&fail)) {
      error = spec.modulePath + ": out of memory while preparing the app";
      return;
    }
    app->respond.Reset(isolate, respond);
    app->fail.Reset(isolate, fail);

    v8::Local<v8::Object> ns;
    if (!app->modules.loadMain(js, spec.modulePath, &error).ToLocal(&ns)) return;
    v8::Local<v8::Value> handler;
    v8::Local<v8::Value> fetch;
    if (!ns->Get(js.context(), js.str("default")).ToLocal(&handler) || !handler->IsObject() ||
        !handler.As<v8::Object>()->Get(js.context(), js.str("fetch")).ToLocal(&fetch) ||
        !fetch->IsFunction()) {
      error = spec.modulePath +
              ": the module's default export must be an object with a fetch(request, env, ctx) "
              "method, for example: export default { fetch(request) { return new "
              "Response('hi') } }";
      return;
    }
    app->handler.Reset(isolate, handler.As<v8::Object>());
    loaded = true;
  });
  if (!loaded) {
    if (error.empty()) error = spec.modulePath + ": loading was terminated (CPU or heap limit)";
    // Timers the failed module set must not outlive it.
    for (auto it = timers_.begin(); it != timers_.end();) {
      it = it->second.app == app.get() ? timers_.erase(it) : std::next(it);
    }
    for (auto it = hostOps_.begin(); it != hostOps_.end();) {
      if (it->second.app == app.get()) {
        if (!it->second.service) fetch_.abort(it->first);
        it = hostOps_.erase(it);
      } else {
        ++it;
      }
    }
    appByState_.erase(&app->state);
    {
      // The context and its handles go with the app; dispose them inside the isolate.
      v8::Isolate::Scope scope(owner_.isolate());
      app.reset();
    }
    return Error{error};
  }
  apps_.emplace(spec.name, std::move(app));
  return Status::success();
}

void EventLoop::startRequest(RequestJob job) {
  auto found = apps_.find(job.request.app);
  if (found == apps_.end()) {
    job.done(AppResponse::failed(FailureKind::kUnknownApp, "no app named " + job.request.app));
    return;
  }
  App& app = *found->second;
  std::uint64_t id = nextRequest_++;
  SteadyTime deadline =
      (job.received == SteadyTime{} ? clock_.now() : job.received) + options_.wallTimeout;
  if (job.cancelKey) byCancelKey_[job.cancelKey] = id;
  requests_.emplace(id, Request{id, std::move(job), &app, deadline, {}, false, {}, {}, 0});
  deadlines_.emplace(deadline, id);

  turn(app, id, [&](JsScope& js, v8::TryCatch& tryCatch) {
    v8::Isolate* isolate = js.isolate();
    const AppRequest& req = requests_.at(id).job.request;
    v8::Local<v8::Value> body = v8::Null(isolate);
    if (!req.body.empty()) {
      v8::Local<v8::ArrayBuffer> buffer;
      if (!newArrayBufferQuietly(isolate, req.body.size(), req.body.data()).ToLocal(&buffer)) {
        fail(id, FailureKind::kHeapLimit,
             "no room for the request body: the isolate's array buffer cap is reached");
        return;
      }
      body = v8::Uint8Array::New(buffer, 0, req.body.size());
    }
    // Positional arguments, no init object: nothing for an app's Object.prototype setters to take.
    v8::Local<v8::Value> argv[] = {v8::Number::New(isolate, static_cast<double>(id)),
                                   app.handler.Get(isolate),
                                   byteString(js, req.method),
                                   js.str(req.url),
                                   headerListArray(js, req.headers),
                                   body,
                                   js.str(req.requestId),
                                   app.env.Get(isolate),
                                   app.respond.Get(isolate),
                                   app.fail.Get(isolate)};
    v8::Local<v8::Value> abort;
    if (!app.web.dispatch.Get(isolate)
             ->Call(js.context(), v8::Undefined(isolate), std::size(argv), argv)
             .ToLocal(&abort)) {
      if (!tryCatch.HasTerminated()) {
        fail(id, FailureKind::kInternal, "dispatch threw: " + describeException(js, tryCatch));
      }
      return;
    }
    // dispatch returns how we abort request.signal when the client goes away. The request may
    // already be answered (and gone) if the handler returned a Response synchronously.
    auto it = requests_.find(id);
    if (it != requests_.end() && abort->IsFunction()) {
      it->second.abort.Reset(isolate, abort.As<v8::Function>());
    }
  });
}

// host natives: respond(id, status, statusText, headers, body, waitUntil) and fail(id, error).
// The runtime's dispatch calls exactly one of them per request; nothing they receive is trusted.
void EventLoop::respondCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  auto* self = static_cast<EventLoop*>(info.Data().As<v8::External>()->Value());
  std::uint64_t id = self->callingRequest(info);
  if (id == 0) return;
  auto it = self->requests_.find(id);
  JsScope js(self->owner_, it->second.app->web.context);
  Result<AppResponse> response = readAppResponse(js, info[1], info[2], info[3], info[4]);
  if (!response) {
    self->fail(id, FailureKind::kHandlerError, "the app's response was refused: " + response.error());
    return;
  }
  v8::Local<v8::Value> waitUntil = info[5];
  if (!waitUntil->IsPromise() ||
      waitUntil.As<v8::Promise>()->State() != v8::Promise::kPending) {
    self->finish(id, std::move(response.value()));
    return;
  }
  // ctx.waitUntil work: the answer goes out now, the request lives until the work settles.
  self->respond(id, std::move(response.value()));
  v8::Local<v8::Value> data[] = {v8::External::New(js.isolate(), self),
                                 v8::Number::New(js.isolate(), static_cast<double>(id))};
  v8::Local<v8::Function> settled;
  if (!v8::Function::New(js.context(), &EventLoop::waitUntilSettled,
                         v8::Array::New(js.isolate(), data, 2), 0, v8::ConstructorBehavior::kThrow)
           .ToLocal(&settled) ||
      waitUntil.As<v8::Promise>()->Then(js.context(), settled, settled).IsEmpty()) {
    self->finalize(id);  // cannot wait for it: end the request's background work now
  }
}

void EventLoop::failCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  auto* self = static_cast<EventLoop*>(info.Data().As<v8::External>()->Value());
  std::uint64_t id = self->callingRequest(info);
  if (id == 0) return;
  JsScope js(self->owner_, self->requests_.at(id).app->web.context);
  self->fail(id, FailureKind::kHandlerError, describeValue(js, info[1]));
}

std::uint64_t EventLoop::callingRequest(const v8::FunctionCallbackInfo<v8::Value>& info) {
  // The id must name a request in flight of the app whose context is calling.
  if (!info[0]->IsNumber()) return 0;
  double value = info[0].As<v8::Number>()->Value();
  if (!(value >= 1 && value < 9007199254740992.0)) return 0;
  auto id = static_cast<std::uint64_t>(value);
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second.responded) return 0;
  ContextState* state = ContextState::from(info.GetIsolate()->GetCurrentContext());
  if (state != &it->second.app->state) return 0;
  return id;
}

void EventLoop::waitUntilSettled(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Local<v8::Context> context = info.GetIsolate()->GetCurrentContext();
  auto data = info.Data().As<v8::Array>();
  auto* self = static_cast<EventLoop*>(
      data->Get(context, 0).ToLocalChecked().As<v8::External>()->Value());
  auto id = static_cast<std::uint64_t>(
      data->Get(context, 1).ToLocalChecked().As<v8::Number>()->Value());
  self->finalize(id);
}

void EventLoop::finish(std::uint64_t id, AppResponse response) {
  respond(id, std::move(response));
  finalize(id);
}

void EventLoop::respond(std::uint64_t id, AppResponse response) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second.responded) return;
  it->second.responded = true;
  auto done = std::move(it->second.job.done);
  done(std::move(response));
}

void EventLoop::finalize(std::uint64_t id) {
  auto node = requests_.extract(id);
  if (node.empty()) return;
  Request& req = node.mapped();
  deadlines_.erase({req.deadline, id});
  if (req.job.cancelKey) byCancelKey_.erase(req.job.cancelKey);
  cancelTimersOf(req.timers, id);
  compactTimerHeap();
  if (req.hostOps) {
    for (auto it = hostOps_.begin(); it != hostOps_.end();) {
      if (it->second.request == id) {
        if (!it->second.service) fetch_.abort(it->first);
        it = hostOps_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!req.responded && req.job.done) {
    req.job.done(AppResponse::failed(FailureKind::kInternal, "request ended without an answer"));
  }
}

void EventLoop::fail(std::uint64_t id, FailureKind kind, const std::string& detail) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  if (it->second.responded) {
    // Only waitUntil work was left; the client has its answer.
    logEvent(Level::kWarn, "waitUntil work ended early",
             {{"app", it->second.job.request.app}, {"request", it->second.job.request.requestId},
              {"code", failureCode(kind)}, {"error", detail}});
    finalize(id);
    return;
  }
  const AppRequest& req = it->second.job.request;
  logEvent(it->second.clientGone ? Level::kDebug : Level::kError, "request failed",
           {{"app", req.app}, {"request", req.requestId}, {"method", req.method}, {"url", req.url},
            {"code", failureCode(kind)}, {"error", detail}});
  finish(id, AppResponse::failed(kind, detail));
}

void EventLoop::failAll(FailureKind kind, const std::string& detail) {
  std::vector<std::uint64_t> ids;
  ids.reserve(requests_.size());
  for (const auto& [id, _] : requests_) ids.push_back(id);
  for (std::uint64_t id : ids) fail(id, kind, detail);
}

void EventLoop::expireDeadlines() {
  SteadyTime now = clock_.now();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    std::uint64_t id = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());  // before fail(): the entry must go even if the request did
    fail(id, FailureKind::kTimeout,
         "no response within " + std::to_string(options_.wallTimeout.count()) + " ms");
  }
}

void EventLoop::cancelRequest(std::uint64_t cancelKey) {
  auto key = byCancelKey_.find(cancelKey);
  if (key == byCancelKey_.end()) return;
  std::uint64_t id = key->second;
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second.responded) return;
  it->second.clientGone = true;
  logEvent(Level::kDebug, "client went away; aborting the request",
           {{"app", it->second.job.request.app}, {"request", it->second.job.request.requestId}});
  // Its pending fetches are aborted: their callbacks see "aborted".
  for (auto& [op, hostOp] : hostOps_) {
    if (hostOp.request == id && !hostOp.service) fetch_.abort(op);
  }
  if (!it->second.abort.IsEmpty()) {
    App& app = *it->second.app;
    turn(app, id, [&](JsScope& js, v8::TryCatch&) {
      auto r = requests_.find(id);
      if (r == requests_.end()) return;
      v8::Local<v8::Function> abort = r->second.abort.Get(js.isolate());
      r->second.abort.Reset();
      std::ignore = abort->Call(js.context(), v8::Undefined(js.isolate()), 0, nullptr);
    });
  }
}

std::uint64_t EventLoop::owningRequest(ContextState& state) {
  v8::Isolate* isolate = owner_.isolate();
  v8::Local<v8::Value> data = isolate->GetContinuationPreservedEmbedderData();
  if (!data.IsEmpty() && data->IsNumber()) {
    auto id = static_cast<std::uint64_t>(data.As<v8::Number>()->Value());
    // A request that has ended owns nothing more: its leftovers go with the running turn's.
    if (requests_.count(id)) return id;
  }
  return state.currentRequest;
}

bool EventLoop::overOpLimit(ContextState& state) {
  auto it = requests_.find(owningRequest(state));
  if (it == requests_.end() || it->second.hostOps < options_.maxHostOpsPerRequest) return false;
  v8::Isolate* isolate = owner_.isolate();
  std::string message = "too many fetches and service calls in flight for one request (" +
                        std::to_string(options_.maxHostOpsPerRequest) + ")";
  isolate->ThrowException(v8::Exception::RangeError(
      v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked()));
  return true;
}

std::uint64_t EventLoop::registerOp(ContextState& state, v8::Local<v8::Object> callbacks,
                                    bool service, std::uint64_t id) {
  App* app = appByState_.at(&state);
  std::uint64_t request = owningRequest(state);
  hostOps_.emplace(id, HostOp{app, request,
                              v8::Global<v8::Object>(owner_.isolate(), callbacks), service});
  if (auto it = requests_.find(request); it != requests_.end()) ++it->second.hostOps;
  return id;
}

std::uint64_t EventLoop::fetchStart(ContextState& state, AppRequest request,
                                    std::chrono::milliseconds timeout,
                                    v8::Local<v8::Object> callbacks) {
  App* app = appByState_.at(&state);
  if (overOpLimit(state)) return 0;
  FetchInit init;
  init.method = std::move(request.method);
  init.url = std::move(request.url);
  init.headers = std::move(request.headers);
  init.body = std::move(request.body);
  if (timeout.count() > 0) init.timeout = timeout;
  init.policy = FetchPolicy(app->spec.fetchAllow);
  std::uint64_t id = fetch_.start(std::move(init));
  return registerOp(state, callbacks, false, id);
}

void EventLoop::fetchPull(ContextState& state, std::uint64_t op) {
  auto it = hostOps_.find(op);
  if (it != hostOps_.end() && &it->second.app->state == &state && !it->second.service) {
    fetch_.pull(op);
  }
}

void EventLoop::fetchAbort(ContextState& state, std::uint64_t op) {
  auto it = hostOps_.find(op);
  if (it != hostOps_.end() && &it->second.app->state == &state && !it->second.service) {
    fetch_.abort(op);
  }
}

void EventLoop::serviceFetch(ContextState& state, AppRequest request,
                             v8::Local<v8::Object> callbacks) {
  if (overOpLimit(state)) return;
  std::uint64_t op = registerOp(state, callbacks, true, nextServiceOp_++);
  int depth = 0;
  if (auto it = requests_.find(owningRequest(state)); it != requests_.end()) {
    depth = it->second.job.depth + 1;
  }
  if (depth > kMaxServiceDepth) {
    serviceResults_.push_back(ServiceResult{
        op, AppResponse::failed(FailureKind::kHandlerError,
                                "service bindings nested more than " +
                                    std::to_string(kMaxServiceDepth) + " deep (a binding cycle?)")});
    return;
  }
  if (!apps_.count(request.app)) {
    serviceResults_.push_back(ServiceResult{
        op, AppResponse::failed(FailureKind::kUnknownApp, "no app named '" + request.app + "'")});
    return;
  }
  request.requestId = state.currentRequestId.empty() ? "service" : state.currentRequestId;
  // Started after this turn: a turn never nests inside another.
  RequestJob job{std::move(request), [this, op](AppResponse r) {
                   serviceResults_.push_back(ServiceResult{op, std::move(r)});
                 }};
  job.depth = depth;
  deferredJobs_.push_back(std::move(job));
}

void EventLoop::callBack(std::uint64_t op, const char* method, int argc,
                         v8::Local<v8::Value>* argv, bool last) {
  auto it = hostOps_.find(op);
  if (it == hostOps_.end()) return;
  v8::Isolate* isolate = owner_.isolate();
  v8::Local<v8::Object> callbacks = it->second.callbacks.Get(isolate);
  if (last) {
    // The operation is forgotten before JavaScript runs: the callback may end its request (which
    // erases the request's operations), and nothing here may point into hostOps_ by then.
    if (auto r = requests_.find(it->second.request); r != requests_.end() && r->second.hostOps) {
      --r->second.hostOps;
    }
    hostOps_.erase(it);
  }
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  // The runtime's callbacks object has the methods as own properties; nothing else is called.
  v8::Local<v8::Value> fn;
  v8::Local<v8::Name> key = v8::String::NewFromUtf8(isolate, method).ToLocalChecked();
  if (callbacks->HasOwnProperty(context, key).FromMaybe(false) &&
      callbacks->Get(context, key).ToLocal(&fn) && fn->IsFunction()) {
    std::ignore = fn.As<v8::Function>()->Call(context, callbacks, argc, argv);
  }
}

void EventLoop::runHostEvents() {
  // Only the calls made before this pass: calls they make wait for the next pass, so a chain of
  // bindings cannot keep the executor from its queue, timers and deadlines.
  std::deque<RequestJob> jobs;
  jobs.swap(deferredJobs_);
  for (RequestJob& job : jobs) startRequest(std::move(job));
  fetch_.drainInto(fetchEvents_);
  while (!fetchEvents_.empty()) {
    FetchEvent event = std::move(fetchEvents_.front());
    fetchEvents_.pop_front();
    auto it = hostOps_.find(event.op);
    if (it == hostOps_.end()) continue;  // its request ended
    App& app = *it->second.app;
    turn(app, it->second.request, [&](JsScope& js, v8::TryCatch&) {
      v8::Isolate* isolate = js.isolate();
      switch (event.kind) {
        case FetchEvent::Kind::kHead: {
          v8::Local<v8::Value> argv[] = {v8::Integer::New(isolate, event.status),
                                         byteString(js, event.statusText),
                                         headerListArray(js, event.headers)};
          callBack(event.op, "onHead", 3, argv, false);
          break;
        }
        case FetchEvent::Kind::kChunk: {
          v8::Local<v8::ArrayBuffer> buffer;
          if (!newArrayBufferQuietly(isolate, event.data.size(), event.data.data())
                   .ToLocal(&buffer)) {
            fetch_.abort(event.op);
            v8::Local<v8::Value> argv[] = {js.str("no room for the response body"),
                                           js.str("too-large")};
            callBack(event.op, "onError", 2, argv, true);
            break;
          }
          v8::Local<v8::Value> argv[] = {v8::Uint8Array::New(buffer, 0, event.data.size())};
          callBack(event.op, "onChunk", 1, argv, false);
          break;
        }
        case FetchEvent::Kind::kEnd:
          callBack(event.op, "onEnd", 0, nullptr, true);
          break;
        case FetchEvent::Kind::kError: {
          if (event.errorKind == "policy") {
            logEvent(Level::kWarn, "fetch refused by policy",
                     {{"app", app.spec.name}, {"request", app.state.currentRequestId},
                      {"reason", event.data}});
          }
          v8::Local<v8::Value> argv[] = {js.str(event.data), js.str(event.errorKind)};
          callBack(event.op, "onError", 2, argv, true);
          break;
        }
      }
    });
  }
  while (!serviceResults_.empty()) {
    ServiceResult result = std::move(serviceResults_.front());
    serviceResults_.pop_front();
    auto it = hostOps_.find(result.op);
    if (it == hostOps_.end()) continue;
    App& app = *it->second.app;
    turn(app, it->second.request, [&](JsScope& js, v8::TryCatch&) {
      v8::Isolate* isolate = js.isolate();
      const AppResponse& r = result.response;
      if (r.failure != FailureKind::kNone) {
        v8::Local<v8::Value> argv[] = {
            js.str(std::string(failureCode(r.failure)) + ": " + r.failureDetail)};
        callBack(result.op, "onError", 1, argv, true);
        return;
      }
      v8::Local<v8::ArrayBuffer> buffer;
      if (!newArrayBufferQuietly(isolate, r.body.size(), r.body.data()).ToLocal(&buffer)) {
        v8::Local<v8::Value> argv[] = {js.str("no room for the service response body")};
        callBack(result.op, "onError", 1, argv, true);
        return;
      }
      v8::Local<v8::Value> argv[] = {v8::Integer::New(isolate, r.status),
                                     byteString(js, r.statusText), headerListArray(js, r.headers),
                                     v8::Uint8Array::New(buffer, 0, r.body.size())};
      callBack(result.op, "onResponse", 4, argv, true);
    });
  }
}

std::pair<std::size_t, std::size_t> EventLoop::heapStatistics() {
  v8::HeapStatistics stats;
  owner_.isolate()->GetHeapStatistics(&stats);
  return {stats.used_heap_size(), stats.heap_size_limit()};
}

namespace {
// The loop whose post-task checkpoint is running on this (executor) thread: V8's promise hook is
// a plain function.
thread_local EventLoop* tlsReactionLoop = nullptr;
}  // namespace

void EventLoop::runForegroundTasks() {
  std::optional<std::chrono::steady_clock::time_point> due = owner_.nextForegroundTask();
  if (!due || *due > std::chrono::steady_clock::now()) return;
  v8::Isolate* isolate = owner_.isolate();
  // V8's own tasks (GC finalization, FinalizationRegistry cleanup, the end of a WebAssembly
  // compile): a FinalizationRegistry callback is app code, so the watchdog bounds them like a turn.
  watchdog_.arm(options_.cpuLimit);
  owner_.runForegroundTasks();
  bool tasksTerminated = watchdog_.disarm() || isolate->IsExecutionTerminating();
  // The promise reactions the tasks released (the code after `await WebAssembly.compile(...)`)
  // run now, outside any turn, so each is charged to the request it belongs to (V8 restores the
  // continuation data of the request that created it; the promise hook tells us when each
  // starts and ends) and bounded by what that request has left of its CPU budget. Microtasks a
  // reaction queues (queueMicrotask) run unhooked and count for the same request. The work of a
  // request that has ended is dropped.
  if (!tasksTerminated) {
    v8::Isolate::Scope scope(isolate);
    v8::HandleScope handles(isolate);
    reaction_ = Reaction{};
    tlsReactionLoop = this;
    startSegment(0);
    isolate->PerformMicrotaskCheckpoint();
    endSegment();
    tlsReactionLoop = nullptr;
  }
  bool terminated = tasksTerminated || reaction_.overBudget != 0 || reaction_.dropped ||
                    isolate->IsExecutionTerminating();
  if (terminated) {
    // As after a terminated turn: what the terminated code queued dies with it.
    v8::Isolate::Scope scope(isolate);
    v8::HandleScope handles(isolate);
    isolate->TerminateExecution();
    isolate->PerformMicrotaskCheckpoint();
    isolate->CancelTerminateExecution();
  }
  bool heap = owner_.takeHeapLimitHit();
  std::uint64_t culprit = reaction_.overBudget ? reaction_.overBudget : reaction_.last;
  if (heap && requests_.count(culprit)) {
    fail(culprit, FailureKind::kHeapLimit,
         "the isolate's heap limit (" + std::to_string(options_.limits.heapMb) +
             " MiB) was reached in code resumed by a V8 task; execution was terminated");
  } else if (reaction_.overBudget && requests_.count(reaction_.overBudget)) {
    fail(reaction_.overBudget, FailureKind::kCpuLimit,
         "JavaScript used more than " + std::to_string(options_.cpuLimit.count()) +
             " ms of CPU time; execution was terminated");
  } else if (tasksTerminated || heap) {
    logEvent(Level::kError,
             heap ? "the heap limit was reached in a V8 task; execution was terminated"
                  : "a V8 task ran past the CPU limit and was terminated",
             {{"limit_ms", static_cast<std::int64_t>(options_.cpuLimit.count())}});
  }
}

void EventLoop::promiseHook(v8::PromiseHookType type, v8::Local<v8::Promise>,
                            v8::Local<v8::Value>) {
  EventLoop* self = tlsReactionLoop;  // null outside runForegroundTasks: nothing to do
  if (!self || self->reaction_.stopped) return;
  if (type == v8::PromiseHookType::kBefore) {
    self->endSegment();
    v8::Local<v8::Value> data = self->owner_.isolate()->GetContinuationPreservedEmbedderData();
    self->startSegment(!data.IsEmpty() && data->IsNumber()
                           ? static_cast<std::uint64_t>(data.As<v8::Number>()->Value())
                           : 0);
  } else if (type == v8::PromiseHookType::kAfter) {
    // What runs next without a hook (a microtask this reaction queued) is still its work.
    std::uint64_t owner = self->reaction_.request;
    self->endSegment();
    self->startSegment(owner);
  }
}

// Starts charging CPU to `owner` (0: no request, module-level work) under the watchdog.
void EventLoop::startSegment(std::uint64_t owner) {
  nanoseconds budget = options_.cpuLimit;
  if (owner != 0) {
    auto it = requests_.find(owner);
    if (it == requests_.end()) {
      // Work of a request that has ended: nobody waits for it and nothing may run on its behalf.
      reaction_.dropped = reaction_.stopped = true;
      owner_.isolate()->TerminateExecution();
      return;
    }
    budget -= it->second.cpuUsed;
    if (budget <= nanoseconds(0)) {
      reaction_.overBudget = owner;
      reaction_.stopped = true;
      owner_.isolate()->TerminateExecution();
      return;
    }
    reaction_.last = owner;
  }
  reaction_.running = true;
  reaction_.request = owner;
  reaction_.cpuStart = threadCpuTime();
  watchdog_.arm(budget);
}

void EventLoop::endSegment() {
  if (!reaction_.running) return;
  reaction_.running = false;
  bool fired = watchdog_.disarm();
  nanoseconds used = threadCpuTime() - reaction_.cpuStart;
  auto it = requests_.find(reaction_.request);
  if (reaction_.request != 0 && it != requests_.end()) it->second.cpuUsed += used;
  if (fired) {
    reaction_.stopped = true;
    if (reaction_.request != 0 && it != requests_.end()) {
      reaction_.overBudget = reaction_.request;
    } else {
      reaction_.dropped = true;  // module-level work past the CPU limit
    }
  }
}

std::optional<std::chrono::steady_clock::time_point> EventLoop::nextForegroundTask() {
  return owner_.nextForegroundTask();
}

std::optional<SteadyTime> EventLoop::nextWake() const {
  std::optional<SteadyTime> wake;
  if (!timerHeap_.empty()) wake = timerHeap_.top().due;
  if (!deadlines_.empty() && (!wake || deadlines_.begin()->first < *wake)) {
    wake = deadlines_.begin()->first;
  }
  return wake;
}

std::uint32_t EventLoop::setTimer(ContextState& state, v8::Local<v8::Function> fn, double delayMs,
                                  bool repeat) {
  App* app = appByState_.at(&state);
  v8::Isolate* isolate = owner_.isolate();
  if (app->timerCount >= options_.maxTimersPerApp) {
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, "too many pending timers in this app").ToLocalChecked()));
    return 0;
  }
  // Ids are unique per isolate and never 0; skip ids still in use after wrap-around.
  do {
    if (++nextTimer_ == 0) nextTimer_ = 1;
  } while (timers_.count(nextTimer_));
  std::uint32_t id = nextTimer_;
  // Browsers clamp to at least 1 ms; so do we, which also keeps setInterval(f, 0) from starving
  // everything else.
  auto interval = duration_cast<nanoseconds>(
      std::chrono::duration<double, std::milli>(std::max(delayMs, 1.0)));
  if (delayMs > 2147483647.0) interval = std::chrono::milliseconds(2147483647);
  std::uint64_t generation = ++timerSeq_;
  std::uint64_t owner = owningRequest(state);
  timers_.emplace(id, Timer{app, owner, v8::Global<v8::Function>(isolate, fn), interval, repeat,
                            generation});
  if (auto r = requests_.find(owner); r != requests_.end()) {
    std::vector<std::uint32_t>& own = r->second.timers;
    if (own.size() >= 1024 && own.size() % 1024 == 0) {  // drop ids cleared since
      own.erase(std::remove_if(own.begin(), own.end(),
                               [&](std::uint32_t t) { return !timers_.count(t); }),
                own.end());
    }
    own.push_back(id);
  }
  ++app->timerCount;
  timerHeap_.push(HeapEntry{clock_.now() + interval, generation, id, generation});
  return id;
}

void EventLoop::clearTimer(ContextState& state, std::uint32_t id) {
  auto it = timers_.find(id);
  if (it == timers_.end() || &it->second.app->state != &state) return;  // not this app's timer
  --it->second.app->timerCount;
  timers_.erase(it);  // its heap entry is skipped when it comes up, or dropped by compaction
  compactTimerHeap();
}

// Cleared timers leave their heap entries until due (up to 24.8 days): rebuild the heap from the
// live timers once the stale entries outnumber them, so set-and-clear loops cannot grow it.
void EventLoop::compactTimerHeap() {
  if (timerHeap_.size() <= 2 * timers_.size() + 1024) return;
  std::vector<HeapEntry> live;
  live.reserve(timers_.size());
  while (!timerHeap_.empty()) {
    const HeapEntry& e = timerHeap_.top();
    auto it = timers_.find(e.id);
    if (it != timers_.end() && it->second.generation == e.generation) live.push_back(e);
    timerHeap_.pop();
  }
  timerHeap_ = decltype(timerHeap_)(std::greater<>(), std::move(live));
}

void EventLoop::cancelTimersOf(const std::vector<std::uint32_t>& ids, std::uint64_t requestId) {
  // Only the request's own timers: a scan of every timer would make each answer cost O(timers).
  for (std::uint32_t id : ids) {
    auto it = timers_.find(id);
    if (it != timers_.end() && it->second.request == requestId) {
      --it->second.app->timerCount;
      timers_.erase(it);
    }
  }
}

void EventLoop::runDueTimers() {
  // Only timers already due when we start: an interval re-armed during this pass waits for the
  // next one, so timers cannot starve new requests.
  SteadyTime now = clock_.now();
  while (!timerHeap_.empty() && timerHeap_.top().due <= now) {
    HeapEntry entry = timerHeap_.top();
    timerHeap_.pop();
    auto it = timers_.find(entry.id);
    if (it == timers_.end() || it->second.generation != entry.generation) continue;
    Timer& timer = it->second;
    App& app = *timer.app;
    std::uint64_t request = timer.request;
    v8::Global<v8::Function> fn;
    if (timer.repeat) {
      std::uint64_t generation = ++timerSeq_;
      timer.generation = generation;
      timerHeap_.push(HeapEntry{now + timer.interval, generation, entry.id, generation});
      fn.Reset(owner_.isolate(), timer.fn);
    } else {
      fn = std::move(timer.fn);
      --app.timerCount;
      timers_.erase(it);
    }
    turn(app, request, [&](JsScope& js, v8::TryCatch& tryCatch) {
      v8::Local<v8::Function> f = fn.Get(js.isolate());
      if (f->Call(js.context(), v8::Undefined(js.isolate()), 0, nullptr).IsEmpty() &&
          !tryCatch.HasTerminated()) {
        // As in browsers, a throwing timer callback is reported, not fatal to its request.
        logEvent(Level::kError, "uncaught exception in a timer callback",
                 {{"app", app.spec.name}, {"request", app.state.currentRequestId},
                  {"error", describeException(js, tryCatch)}});
      }
    });
  }
}

}  // namespace isolane

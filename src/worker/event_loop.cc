#include "worker/event_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <tuple>

#include "ipc/body_pipe.h"
#include "obs/log.h"
#include "runtime/array_buffers.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "web/runtime_snapshot.h"
#include "worker/event_loop_turn.h"

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
                     Doorbell& wake, ThreadShared shared)
    : options_(options),
      clock_(clock),
      log_(log),
      owner_(
          options.limits, [&wake] { wake.ring(); }, runtimeSnapshot()),
      watchdog_(shared.watchdog),
      fetch_(shared.fetch),
      localApps_(shared.apps),
      offload_(wake) {
  // Installed for the isolate's whole life (it does nothing outside runForegroundTasks): a
  // reaction is visible to the hook only if the hook was installed when its promise was made,
  // and an `await` made in a request's turn may be resumed by a V8 task much later. The cost is
  // about 0.1 us per await.
  v8::Isolate::Scope scope(owner_.isolate());
  owner_.isolate()->SetPromiseHook(&EventLoop::promiseHook);
}

EventLoop::~EventLoop() {
  failAll(FailureKind::kShuttingDown, "executor stopped");
  fetch_.forget(fetchEvents_);
  // Globals must be reset before the isolate is disposed.
  streamCancels_.clear();
  hostOps_.clearAll();
  timers_.clearAll();
  apps_.clear();
  prepared_.reset();
}

Status EventLoop::loadApp(const AppSpec& spec, AppLoadReport* report) {
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
  // A worker is handed its apps' files by the master (it could not open them); in process they
  // are read here.
  std::shared_ptr<const AppModules> modules = spec.modules;
  if (!modules) modules = std::make_shared<AppModules>(readAppModules(spec.modulePath, kMaxAppModuleBytes));

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
      if (!createEnv.As<v8::Function>()
               ->Call(js.context(), v8::Undefined(isolate), 2, argv)
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
    v8::Local<v8::Object> natives;
    if (!makeNatives(js, &natives)) {
      error = spec.modulePath + ": out of memory while preparing the app";
      return;
    }
    app->natives.Reset(isolate, natives);

    v8::Local<v8::Object> ns;
    if (!app->modules.loadMain(js, *modules, &error, spec.codeCache, spec.sourceSha256, report)
             .ToLocal(&ns)) {
      return;
    }
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
    discardApp(std::move(app));
    return Error{error};
  }
  apps_.emplace(spec.name, std::move(app));
  return Status::success();
}

void EventLoop::discardApp(std::unique_ptr<App> app) {
  // Timers the failed module set must not outlive it.
  timers_.clearOfOwner(app.get());
  hostOps_.removeOfOwner(app.get(),
                         [this](std::uint64_t op, const auto& h) { endHostOp(op, h.kind); });
  appByState_.erase(&app->state);
  {
    // The context and its handles go with the app; dispose them inside the isolate.
    v8::Isolate::Scope scope(owner_.isolate());
    app.reset();
  }
}

void EventLoop::startRequest(RequestJob job) {
  auto found = apps_.find(job.request.app);
  if (found == apps_.end()) {
    job.done(AppResponse::failed(FailureKind::kUnknownApp, "no app named " + job.request.app));
    return;
  }
  App& app = *found->second;
  std::uint64_t id = job.cancelKey ? job.cancelKey : requests_.ownId();
  if (job.cancelKey && !Requests::isSubmitterId(id)) {  // a submitter's counter cannot get there
    job.done(AppResponse::failed(FailureKind::kInternal,
                                 "request id " + std::to_string(id) + " is out of range"));
    return;
  }
  if (requests_.contains(id)) {
    // A submitter's bug: its answer names the same id as the other's, so over the wire the
    // master takes it for that request's (and the other's answer, later, for an unknown one).
    logEvent(Level::kError, "a request came with the id of one in flight; refused",
             {{"app", job.request.app}, {"id", id}});
    job.done(AppResponse::failed(FailureKind::kInternal,
                                 "request id " + std::to_string(id) + " is already in flight"));
    return;
  }
  SteadyTime deadline =
      (job.received == SteadyTime{} ? clock_.now() : job.received) + wallTimeoutOf(job);
  if (deadline <= clock_.now()) {
    // It waited for its thread longer than it may take in all: running it now would spend CPU
    // on an answer that can only be a timeout.
    job.done(AppResponse::failed(
        FailureKind::kTimeout, "no response within " + std::to_string(wallTimeoutOf(job).count()) +
                                   " ms: it waited that long before it started"));
    return;
  }
  requests_.add(id, Request{0, std::move(job), &app, {}, {}, false, {}, {}, 0}, deadline);

  turn(app, id, [&](JsScope& js, v8::TryCatch& tryCatch) {
    v8::Isolate* isolate = js.isolate();
    const AppRequest& req = requests_.at(id).job.request;
    // A streamed body: `true`, and the runtime pulls it with bodyPull.
    v8::Local<v8::Value> body = requests_.at(id).job.bodyStreamed
                                    ? v8::Local<v8::Value>(v8::True(isolate))
                                    : v8::Local<v8::Value>(v8::Null(isolate));
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
    bool streaming = requests_.at(id).job.sink != nullptr;
    v8::Local<v8::Value> argv[] = {v8::Number::New(isolate, static_cast<double>(id)),
                                   app.handler.Get(isolate),
                                   byteString(js, req.method),
                                   js.str(req.url),
                                   headerListArray(js, req.headers),
                                   body,
                                   app.env.Get(isolate),
                                   app.natives.Get(isolate),
                                   v8::Boolean::New(isolate, streaming)};
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
    auto* it = requests_.find(id);
    if (it && abort->IsFunction()) {
      it->abort.Reset(isolate, abort.As<v8::Function>());
    }
  });
}

void EventLoop::finish(std::uint64_t id, AppResponse response) {
  respond(id, std::move(response));
  finalize(id);
}

void EventLoop::respond(std::uint64_t id, AppResponse response) {
  auto* it = requests_.find(id);
  if (!it || it->responded) return;
  if (it->isExecution()) {  // an execution settles; it has no response to give
    settleExecution(*it, FailureKind::kInternal, "the runtime answered an execution as a request");
    return;
  }
  it->responded = true;
  auto done = std::move(it->job.done);
  done(std::move(response));
}

void EventLoop::settleExecution(Request& req, FailureKind kind, const std::string& detail) {
  if (req.responded) return;
  req.responded = true;
  // Its CPU time so far, with the running turn's (its total is added when the turn ends).
  std::chrono::nanoseconds cpu = req.cpuUsed;
  if (turnCpuStart_.count() > 0) cpu += threadCpuTime() - turnCpuStart_;
  req.exec.session->outcome.cpuUs = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(cpu).count());
  req.exec.settle(kind, detail);
}

void EventLoop::finalize(std::uint64_t id) {
  std::optional<Request> taken = requests_.take(id);
  if (!taken) return;
  Request& req = *taken;
  abortStream(req, FailureKind::kInternal, "the request ended before its stream", "AbortError");
  timers_.clearOfRequest(req.timers, id);
  hostOps_.removeOfRequest(id, [this](std::uint64_t op, const auto& h) { endHostOp(op, h.kind); });
  if (req.isExecution()) {
    settleExecution(req, FailureKind::kInternal, "the execution ended without settling");
  } else if (!req.responded && req.job.done) {
    req.job.done(AppResponse::failed(FailureKind::kInternal, "request ended without an answer"));
  }
}

void EventLoop::fail(std::uint64_t id, FailureKind kind, const std::string& detail) {
  auto* it = requests_.find(id);
  if (!it) return;
  if (it->stream) {
    const AppRequest& req = it->job.request;
    logEvent(it->clientGone ? Level::kDebug : Level::kError, "response stream failed",
             {{"app", req.app},
              {"request", req.requestId},
              {"url", req.url},
              {"code", failureCode(kind)},
              {"error", detail}});
    abortStream(*it, kind, detail, kind == FailureKind::kTimeout ? "TimeoutError" : "AbortError");
    finalize(id);
    return;
  }
  if (it->responded) {
    // Only waitUntil work was left; the client has its answer.
    logEvent(Level::kWarn, "waitUntil work ended early",
             {{"app", it->job.request.app},
              {"request", it->job.request.requestId},
              {"code", failureCode(kind)},
              {"error", detail}});
    finalize(id);
    return;
  }
  if (it->isExecution()) {
    // Its failure is the caller's to report (the pool publishes execution.settle).
    logEvent(Level::kDebug, "execution ended",
             {{"execution", it->exec.key}, {"code", failureCode(kind)}, {"error", detail}});
    settleExecution(*it, kind, detail);
    finalize(id);
    return;
  }
  const AppRequest& req = it->job.request;
  logEvent(it->clientGone ? Level::kDebug : Level::kError, "request failed",
           {{"app", req.app},
            {"request", req.requestId},
            {"method", req.method},
            {"url", req.url},
            {"code", failureCode(kind)},
            {"error", detail}});
  finish(id, AppResponse::failed(kind, detail));
}

void EventLoop::failAll(FailureKind kind, const std::string& detail) {
  for (std::uint64_t id : requests_.ids()) fail(id, kind, detail);
}

void EventLoop::expireDeadlines() {
  SteadyTime now = clock_.now();
  // Each due request leaves the deadlines before fail(), which ends it.
  while (std::uint64_t id = requests_.takeDue(now)) {
    Request& req = requests_.at(id);
    std::string detail;
    if (req.isExecution()) {
      detail = "the execution ran past its timeout of " +
               std::to_string(wallTimeoutOf(req).count()) +
               " ms (timeout_ms; time waiting on tool calls is not counted)";
    } else if (!req.stream) {
      detail = "no response within " + std::to_string(wallTimeoutOf(req.job).count()) + " ms";
    } else {
      detail = req.stream->expiry(now);
    }
    fail(id, FailureKind::kTimeout, detail);
  }
}

void EventLoop::cancelRequest(std::uint64_t id) {
  auto* it = requests_.find(id);
  if (!it || (it->responded && !it->stream)) return;
  it->clientGone = true;
  if (it->isExecution()) {
    // Nobody waits for its outcome: it ends now, with its timers and tool calls.
    fail(id, FailureKind::kClientGone, "the caller went away");
    return;
  }
  logEvent(Level::kDebug, "client went away; aborting the request",
           {{"app", it->job.request.app}, {"request", it->job.request.requestId}});
  // Its pending fetches are aborted: their callbacks see "aborted".
  hostOps_.forEachOfRequest(id, [this](std::uint64_t op, const auto& h) {
    if (h.kind == HostOpKind::kFetch) fetch_.abort(op);
  });
  if (!it->abort.IsEmpty()) {
    App& app = *it->app;
    turn(app, id, [&](JsScope& js, v8::TryCatch&) {
      auto* r = requests_.find(id);
      if (!r) return;
      v8::Local<v8::Function> abort = r->abort.Get(js.isolate());
      r->abort.Reset();
      std::ignore = abort->Call(js.context(), v8::Undefined(js.isolate()), 0, nullptr);
    });
  }
  // A streamed body: the app's stream is cancelled and the request ends now (its waitUntil work
  // included): nobody reads what it would still produce.
  if (auto* r = requests_.find(id); r && r->stream) {
    abortStream(*r, FailureKind::kHandlerError, "the client went away", "AbortError");
    finalize(id);
  }
}

void EventLoop::grantCredit(std::uint64_t id, std::size_t bytes) {
  auto* it = requests_.find(id);
  if (!it || !it->stream) return;
  Request& req = *it;
  if (!req.stream->granted(bytes, clock_.now())) return;
  requests_.setDeadline(req, req.stream->deadline());  // its idle clock restarted
  turn(*req.app, id, [&](JsScope& js, v8::TryCatch&) {
    auto* r = requests_.find(id);
    if (!r || r->control.IsEmpty()) return;
    v8::Local<v8::Function> control = r->control.Get(js.isolate());
    v8::Local<v8::Value> argv[] = {v8::Integer::New(js.isolate(), 0)};
    std::ignore = control->Call(js.context(), v8::Undefined(js.isolate()), 1, argv);
  });
}

void EventLoop::abortStream(Request& req, FailureKind kind, const std::string& detail,
                            const std::string& name) {
  if (!req.stream) return;
  req.stream.reset();
  if (req.job.sink) req.job.sink->abort(kind, detail);
  if (!req.control.IsEmpty()) {
    streamCancels_.push_back(StreamCancel{req.app, std::move(req.control), detail, name});
  }
}

void EventLoop::runStreamCancels() {
  if (streamCancels_.empty()) return;  // most passes: no deque made (one allocates)
  std::deque<StreamCancel> cancels;
  cancels.swap(streamCancels_);
  for (StreamCancel& c : cancels) {
    // The request is over: the app's cancel() runs on nobody's budget but under the watchdog.
    turn(*c.app, 0, [&](JsScope& js, v8::TryCatch&) {
      v8::Local<v8::Value> argv[] = {v8::Integer::New(js.isolate(), 1), js.str(c.message),
                                     js.str(c.name)};
      std::ignore =
          c.control.Get(js.isolate())->Call(js.context(), v8::Undefined(js.isolate()), 3, argv);
    });
  }
}

const char* EventLoop::recycleReason() const {
  if (heapLimitHit_) return "heap-limit";
  if (owner_.leakSuspected()) return "live-heap";
  return nullptr;
}

std::pair<std::size_t, std::size_t> EventLoop::heapStatistics() {
  v8::HeapStatistics stats;
  owner_.isolate()->GetHeapStatistics(&stats);
  return {stats.used_heap_size(), stats.heap_size_limit()};
}

std::optional<SteadyTime> EventLoop::nextWake() const {
  std::optional<SteadyTime> wake = timers_.nextDue();
  std::optional<SteadyTime> deadline = requests_.nextDeadline();
  if (deadline && (!wake || *deadline < *wake)) wake = deadline;
  return wake;
}

}  // namespace isolane

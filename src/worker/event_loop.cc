#include "worker/event_loop.h"

#include <tuple>
#include "obs/log.h"

#include <chrono>
#include <cstring>

#include "runtime/js_errors.h"
#include "runtime/js_scope.h"

namespace isolane {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

double wallClockMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string valueString(JsScope& js, v8::Local<v8::Value> v) { return toUtf8(js, v); }

}  // namespace

EventLoop::EventLoop(const EventLoopOptions& options, const Clock& clock, LogSink& log)
    : options_(options),
      clock_(clock),
      log_(log),
      owner_(options.limits),
      watchdog_([this] { owner_.terminate(); }) {}

EventLoop::~EventLoop() {
  failAll(FailureKind::kShuttingDown, "executor stopped");
  // Globals must be reset before the isolate is disposed.
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
    v8::TryCatch tryCatch(isolate);
    body(js, tryCatch);
    if (!tryCatch.HasTerminated() && !isolate->IsExecutionTerminating()) {
      isolate->PerformMicrotaskCheckpoint();
    }
    terminated = tryCatch.HasTerminated() || isolate->IsExecutionTerminating();
  }
  bool byWatchdog = watchdog_.disarm();
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
    app->handler.Reset(js.isolate(), handler.As<v8::Object>());
    v8::Local<v8::Object> env = v8::Object::New(js.isolate());
    for (const auto& [key, value] : spec.vars) {
      std::ignore = env->Set(js.context(), js.str(key), js.str(value));
    }
    app->env.Reset(js.isolate(), env);
    loaded = true;
  });
  if (!loaded) {
    if (error.empty()) error = spec.modulePath + ": loading was terminated (CPU or heap limit)";
    // Timers the failed module set must not outlive it.
    for (auto it = timers_.begin(); it != timers_.end();) {
      it = it->second.app == app.get() ? timers_.erase(it) : std::next(it);
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
  SteadyTime deadline = clock_.now() + options_.wallTimeout;
  requests_.emplace(id, Request{id, std::move(job), &app, deadline, {}});
  deadlines_.emplace(deadline, id);

  turn(app, id, [&](JsScope& js, v8::TryCatch& tryCatch) {
    v8::Isolate* isolate = js.isolate();
    v8::Local<v8::Context> context = js.context();
    const AppRequest& req = requests_.at(id).job.request;

    v8::Local<v8::Array> headers = v8::Array::New(isolate, static_cast<int>(req.headers.size()));
    for (std::size_t i = 0; i < req.headers.size(); ++i) {
      v8::Local<v8::Value> pair[] = {js.str(req.headers[i].first), js.str(req.headers[i].second)};
      std::ignore = headers->Set(context, static_cast<std::uint32_t>(i), v8::Array::New(isolate, pair, 2));
    }
    v8::Local<v8::Value> body = v8::Null(isolate);
    if (!req.body.empty()) {
      auto buffer = v8::ArrayBuffer::New(isolate, req.body.size());
      std::memcpy(buffer->Data(), req.body.data(), req.body.size());
      body = v8::Uint8Array::New(buffer, 0, req.body.size());
    }
    v8::Local<v8::Object> init = v8::Object::New(isolate);
    std::ignore = init->Set(context, js.str("method"), js.str(req.method));
    std::ignore = init->Set(context, js.str("url"), js.str(req.url));
    std::ignore = init->Set(context, js.str("headers"), headers);
    std::ignore = init->Set(context, js.str("body"), body);
    std::ignore = init->Set(context, js.str("requestId"), js.str(req.requestId));

    v8::Local<v8::Value> argv[] = {app.handler.Get(isolate), init, app.env.Get(isolate)};
    v8::Local<v8::Value> result;
    if (!app.web.dispatch.Get(isolate)->Call(context, v8::Undefined(isolate), 3, argv)
             .ToLocal(&result)) {
      if (!tryCatch.HasTerminated()) {
        fail(id, FailureKind::kHandlerError, describeException(js, tryCatch));
      }
      return;
    }
    if (!result->IsPromise()) {
      fail(id, FailureKind::kInternal, "dispatch did not return a promise");
      return;
    }
    // The callbacks carry [this loop, request id]; a request that already ended is ignored.
    auto makeCallback = [&](bool fulfilled) {
      v8::Local<v8::Value> data[] = {v8::External::New(isolate, this),
                                     v8::Number::New(isolate, static_cast<double>(id)),
                                     v8::Boolean::New(isolate, fulfilled)};
      return v8::Function::New(context, &EventLoop::settledCallback,
                               v8::Array::New(isolate, data, 3), 1,
                               v8::ConstructorBehavior::kThrow)
          .ToLocalChecked();
    };
    std::ignore = result.As<v8::Promise>()->Then(context, makeCallback(true), makeCallback(false));
  });
}

void EventLoop::settledCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  auto data = info.Data().As<v8::Array>();
  auto* self = static_cast<EventLoop*>(
      data->Get(context, 0).ToLocalChecked().As<v8::External>()->Value());
  auto id = static_cast<std::uint64_t>(
      data->Get(context, 1).ToLocalChecked().As<v8::Number>()->Value());
  bool fulfilled = data->Get(context, 2).ToLocalChecked()->IsTrue();
  self->onSettled(id, fulfilled, info[0]);
}

void EventLoop::onSettled(std::uint64_t id, bool fulfilled, v8::Local<v8::Value> value) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;  // timed out or terminated meanwhile
  App& app = *it->second.app;
  JsScope js(owner_, app.web.context);
  if (!fulfilled) {
    fail(id, FailureKind::kHandlerError, describeValue(js, value));
    return;
  }
  // [status, statusText, headers, body], built by our dispatch: plain own data properties.
  v8::Local<v8::Context> context = js.context();
  auto get = [&](v8::Local<v8::Object> o, std::uint32_t i) {
    v8::Local<v8::Value> v;
    return o->Get(context, i).ToLocal(&v) ? v : v8::Local<v8::Value>(v8::Undefined(js.isolate()));
  };
  if (!value->IsArray()) {
    fail(id, FailureKind::kInternal, "dispatch resolved with something that is not an array");
    return;
  }
  auto parts = value.As<v8::Array>();
  AppResponse response;
  v8::Local<v8::Value> status = get(parts, 0);
  response.status = status->IsInt32() ? status.As<v8::Int32>()->Value() : 500;
  response.statusText = valueString(js, get(parts, 1));
  v8::Local<v8::Value> headers = get(parts, 2);
  if (headers->IsArray()) {
    auto list = headers.As<v8::Array>();
    response.headers.reserve(list->Length());
    for (std::uint32_t i = 0; i < list->Length(); ++i) {
      v8::Local<v8::Value> pair = get(list, i);
      if (!pair->IsArray()) continue;
      response.headers.emplace_back(valueString(js, get(pair.As<v8::Object>(), 0)),
                                    valueString(js, get(pair.As<v8::Object>(), 1)));
    }
  }
  v8::Local<v8::Value> body = get(parts, 3);
  if (body->IsArrayBufferView()) {
    auto view = body.As<v8::ArrayBufferView>();
    response.body.resize(view->ByteLength());
    view->CopyContents(response.body.data(), response.body.size());
  }
  finish(id, std::move(response));
}

void EventLoop::finish(std::uint64_t id, AppResponse response) {
  auto node = requests_.extract(id);
  if (node.empty()) return;
  Request& req = node.mapped();
  deadlines_.erase({req.deadline, id});
  cancelTimersOf(id);
  req.job.done(std::move(response));
}

void EventLoop::fail(std::uint64_t id, FailureKind kind, const std::string& detail) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  const AppRequest& req = it->second.job.request;
  logEvent(Level::kError, "request failed",
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
    deadlines_.erase(deadlines_.begin());
    fail(id, FailureKind::kTimeout,
         "no response within " + std::to_string(options_.wallTimeout.count()) + " ms");
  }
}

std::pair<std::size_t, std::size_t> EventLoop::heapStatistics() {
  v8::HeapStatistics stats;
  owner_.isolate()->GetHeapStatistics(&stats);
  return {stats.used_heap_size(), stats.heap_size_limit()};
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
  timers_.emplace(id, Timer{app, state.currentRequest, v8::Global<v8::Function>(isolate, fn),
                            interval, repeat, generation});
  ++app->timerCount;
  timerHeap_.push(HeapEntry{clock_.now() + interval, generation, id, generation});
  return id;
}

void EventLoop::clearTimer(ContextState& state, std::uint32_t id) {
  auto it = timers_.find(id);
  if (it == timers_.end() || &it->second.app->state != &state) return;  // not this app's timer
  --it->second.app->timerCount;
  timers_.erase(it);  // its heap entry is skipped when it comes up
}

void EventLoop::cancelTimersOf(std::uint64_t requestId) {
  for (auto it = timers_.begin(); it != timers_.end();) {
    if (it->second.request == requestId) {
      --it->second.app->timerCount;
      it = timers_.erase(it);
    } else {
      ++it;
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

#include "worker/app_isolates.h"

#include <algorithm>

#include "ipc/status_page.h"
#include "obs/log.h"
#include "runtime/fatal_errors.h"

namespace isolane {

AppIsolates::AppIsolates(const EventLoopOptions& loop, const AppIsolatesOptions& options,
                         const Clock& clock, LogSink& log, Doorbell& wake, Watchdog& watchdog,
                         FetchRouter& fetch)
    : loopOptions_(loop),
      options_(options),
      clock_(clock),
      log_(log),
      wake_(wake),
      watchdog_(watchdog),
      fetch_(fetch) {}

AppIsolates::~AppIsolates() {
  // Requests still in flight are answered by each loop's destructor (SHUTTING_DOWN).
  draining_.clear();
  live_.clear();
}

EventLoopOptions AppIsolates::optionsFor(const AppSpec& spec) const {
  EventLoopOptions o = loopOptions_;
  if (spec.heapLimitMb) o.limits.heapMb = spec.heapLimitMb;
  if (spec.cpuLimitMs) o.cpuLimit = std::chrono::milliseconds(spec.cpuLimitMs);
  o.appTag = appTag(spec.name);
  return o;
}

std::shared_ptr<AppIsolates::Hosted> AppIsolates::make(const std::string& app,
                                                       AppLoadReport* report, std::string* error) {
  AppSpec& spec = specs_.at(app);
  auto h = std::make_shared<Hosted>();
  h->app = app;
  h->lastUsed = clock_.now();
  h->loop = std::make_unique<EventLoop>(optionsFor(spec), clock_, log_, wake_,
                                        ThreadShared{watchdog_, fetch_, *this});
  AppLoadReport local;
  AppLoadReport& r = report ? *report : local;
  CurrentApp label(app);
  if (Status s = h->loop->loadApp(spec, &r); !s) {
    *error = s.error();
    return nullptr;
  }
  // The next isolate of this app (after a recycle or an idle disposal) compiles from the cache
  // this one made, if the master gave the module's hash.
  if (!r.producedCache.empty() && !spec.sourceSha256.empty() &&
      r.sourceSha256 == spec.sourceSha256) {
    spec.codeCache = r.producedCache;
  } else if (r.cache == CodeCacheUse::kRejected) {
    spec.codeCache.clear();
  }
  live_[app] = h;
  ++hostedVersion_;
  return h;
}

Status AppIsolates::load(const AppSpec& spec, bool warm, AppLoadReport* report) {
  if (specs_.count(spec.name)) return Error{"an app named '" + spec.name + "' is already loaded"};
  specs_.emplace(spec.name, spec);
  if (!warm) return Status::success();
  if (live_.size() + draining_.size() >= options_.maxIsolates && !evictOne()) {
    specs_.erase(spec.name);
    return Error{"no room for another isolate on this thread (" +
                 std::to_string(options_.maxIsolates) + " are busy)"};
  }
  std::string error;
  if (!make(spec.name, report, &error)) {
    specs_.erase(spec.name);
    return Error{error};
  }
  return Status::success();
}

void AppIsolates::start(RequestJob job) {
  const std::string& app = job.request.app;
  if (!specs_.count(app)) {
    job.done(AppResponse::failed(FailureKind::kUnknownApp, "no app named " + app));
    return;
  }
  std::shared_ptr<Hosted> h;
  if (auto it = live_.find(app); it != live_.end()) {
    h = it->second;
  } else {
    if (live_.size() + draining_.size() >= options_.maxIsolates && !evictOne()) {
      job.done(AppResponse::failed(FailureKind::kOverloaded,
                                   "every isolate of this executor thread is busy (" +
                                       std::to_string(options_.maxIsolates) + ", max_isolates)"));
      return;
    }
    std::string error;
    h = make(app, nullptr, &error);
    if (!h) {
      logEvent(Level::kError, "cannot make the app's isolate", {{"app", app}, {"error", error}});
      job.done(
          AppResponse::failed(FailureKind::kInternal, "the app could not be loaded: " + error));
      return;
    }
  }
  h->lastUsed = clock_.now();
  CurrentApp label(app);
  h->loop->startRequest(std::move(job));
}

std::unique_ptr<EventLoop> AppIsolates::makeExecutionLoop(std::uint32_t memoryMb) {
  EventLoopOptions o = loopOptions_;
  o.limits.heapMb = memoryMb;
  // memory_mb bounds what the execution holds outside its heap too (ArrayBuffers, and the host's
  // copies of its bytes: runtime/memory_budget.h), so the two together stay within twice it.
  o.limits.arrayBufferMb = memoryMb;
  return std::make_unique<EventLoop>(o, clock_, log_, wake_,
                                     ThreadShared{watchdog_, fetch_, *this});
}

void AppIsolates::startExecution(ExecutionJob job) {
  ExecutionSession& session = *job.session;
  std::string name = "exec:" + std::to_string(job.key);
  if (loopOf(job.key) != nullptr) {
    // The submitter's bug: its tool answers and its cancel would reach the other one.
    job.settle(FailureKind::kInternal,
               "execution id " + std::to_string(job.key) + " is already in flight");
    return;
  }
  if (live_.size() + draining_.size() >= options_.maxIsolates && !evictOne()) {
    session.outcome = ExecutionOutcome::failed(
        ExecErrorCode::kQueueOverflow, "every isolate of this executor thread is busy (" +
                                           std::to_string(options_.maxIsolates) +
                                           ", max_isolates); retry when an execution settles");
    job.settle(FailureKind::kOverloaded, session.outcome.message);
    return;
  }
  auto h = std::make_shared<Hosted>();
  h->app = name;
  h->lastUsed = clock_.now();
  CurrentApp label(name);
  if (spare_ && session.spec.memoryMb == ExecLimits::kDefaultMemoryMb) {
    h->loop = std::move(spare_);
  } else {
    h->loop = makeExecutionLoop(session.spec.memoryMb);
  }
  wantSpare_ = true;
  session.started = std::chrono::steady_clock::now();
  if (Status s = h->loop->loadExecution(name, job.session); !s) {
    job.settle(FailureKind::kHandlerError, s.error());
    return;  // the isolate goes with `h`
  }
  draining_.push_back(h);
  h->loop->startExecution(name, std::move(job));
}

void AppIsolates::toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text) {
  if (EventLoop* loop = loopOf(key)) loop->toolAnswer(key, call, ok, std::move(text));
}

bool AppIsolates::evictOne() {
  std::shared_ptr<Hosted> oldest;
  for (auto& [app, h] : live_) {
    if (h->loop->inFlight() == 0 && (!oldest || h->lastUsed < oldest->lastUsed)) oldest = h;
  }
  if (!oldest) return false;
  logEvent(Level::kDebug, "isolate disposed to make room", {{"app", oldest->app}});
  retire(oldest);
  return true;
}

void AppIsolates::retire(const std::shared_ptr<Hosted>& h) {
  h->retired = true;
  if (auto it = live_.find(h->app); it != live_.end() && it->second == h) {
    live_.erase(it);
    ++hostedVersion_;
  }
  draining_.erase(std::remove(draining_.begin(), draining_.end(), h), draining_.end());
  // The loop itself goes with the last reference: a pass that holds it finishes first.
}

template <typename F>
void AppIsolates::eachLoop(F&& f) {
  // A pass may make isolates (service calls) and retire them: iterate over a copy, and skip the
  // retired ones. The copy's buffer is kept between passes (no allocation per pass); passes never
  // nest (loops call back into start(), never into a pass).
  std::vector<std::shared_ptr<Hosted>> all;
  all.swap(passScratch_);
  for (auto& [app, h] : live_) all.push_back(h);
  all.insert(all.end(), draining_.begin(), draining_.end());
  for (auto& h : all) {
    if (h->retired) continue;
    CurrentApp label(h->app);
    f(*h);
  }
  all.clear();  // the references go now: a loop retired during the pass is disposed here
  all.swap(passScratch_);
}

EventLoop* AppIsolates::loopOf(std::uint64_t key) {
  for (auto& [app, h] : live_) {
    if (h->loop->hasRequest(key)) return h->loop.get();
  }
  for (auto& h : draining_) {
    if (h->loop->hasRequest(key)) return h->loop.get();
  }
  return nullptr;
}

void AppIsolates::cancel(std::uint64_t key) {
  if (EventLoop* loop = loopOf(key)) loop->cancelRequest(key);
}

void AppIsolates::credit(std::uint64_t key, std::size_t bytes) {
  if (EventLoop* loop = loopOf(key)) loop->grantCredit(key, bytes);
}

void AppIsolates::requestBody(std::uint64_t key, std::string piece, bool end, std::string error) {
  if (EventLoop* loop = loopOf(key))
    loop->requestBody(key, std::move(piece), end, std::move(error));
}

void AppIsolates::pump() {
  fetch_.route();
  eachLoop([&](Hosted& h) {
    h.loop->runHostEvents();
    h.loop->runDueTimers();
    h.loop->expireDeadlines();
    h.loop->runForegroundTasks();
  });
}

void AppIsolates::housekeep() {
  recycleAndDispose();
  if (wantSpare_ && !spare_) {
    // The next execution's isolate and context, made while nothing waits.
    spare_ = makeExecutionLoop(ExecLimits::kDefaultMemoryMb);
    spare_->prepareExecution();
  }
}

void AppIsolates::recycleAndDispose() {
  SteadyTime now = clock_.now();
  std::vector<std::shared_ptr<Hosted>> retiring;
  for (auto it = live_.begin(); it != live_.end();) {
    Hosted& h = *it->second;
    if (h.loop->inFlight() > 0) h.lastUsed = now;
    if (const char* reason = h.loop->recycleReason()) {
      // New requests go to a fresh isolate; this one finishes what it has.
      logEvent(Level::kWarn, "isolate recycled",
               {{"app", h.app},
                {"reason", reason},
                {"in_flight", static_cast<std::int64_t>(h.loop->inFlight())}});
      ++recycled_;
      ++hostedVersion_;
      h.drainBy = now + loopOptions_.wallTimeout;
      draining_.push_back(it->second);
      it = live_.erase(it);
      continue;
    }
    if (h.loop->inFlight() == 0 && now - h.lastUsed >= options_.idleTimeout) {
      logEvent(Level::kDebug, "idle isolate disposed", {{"app", h.app}});
      retiring.push_back(it->second);
    }
    ++it;
  }
  for (auto& h : draining_) {
    if (h->loop->inFlight() == 0) {
      retiring.push_back(h);
    } else if (h->drainBy && now >= *h->drainBy) {
      CurrentApp label(h->app);
      h->loop->failAll(FailureKind::kIsolateRecycled,
                       "the app's isolate was replaced (heap limit or leak); retry");
      retiring.push_back(h);
    }
  }
  for (auto& h : retiring) retire(h);
}

bool AppIsolates::hostEventsPending() const {
  for (const auto& [app, h] : live_) {
    if (h->loop->hostEventsPending()) return true;
  }
  for (const auto& h : draining_) {
    if (h->loop->hostEventsPending()) return true;
  }
  return false;
}

std::optional<SteadyTime> AppIsolates::nextWake() const {
  std::optional<SteadyTime> wake;
  auto earliest = [&](std::optional<SteadyTime> t) {
    if (t && (!wake || *t < *wake)) wake = t;
  };
  for (const auto& [app, h] : live_) {
    earliest(h->loop->nextWake());
    if (h->loop->inFlight() == 0) earliest(h->lastUsed + options_.idleTimeout);
  }
  for (const auto& h : draining_) {
    earliest(h->loop->nextWake());
    earliest(h->drainBy);
  }
  return wake;
}

std::optional<std::chrono::steady_clock::time_point> AppIsolates::nextForegroundTask() const {
  std::optional<std::chrono::steady_clock::time_point> due;
  auto earliest = [&](const Hosted& h) {
    auto t = h.loop->nextForegroundTask();
    if (t && (!due || *t < *due)) due = t;
  };
  for (const auto& [app, h] : live_) earliest(*h);
  for (const auto& h : draining_) earliest(*h);
  return due;
}

void AppIsolates::failAll(FailureKind kind, const std::string& detail) {
  eachLoop([&](Hosted& h) { h.loop->failAll(kind, detail); });
}

std::vector<std::string> AppIsolates::hosted() const {
  std::vector<std::string> apps;
  apps.reserve(live_.size());
  for (const auto& [app, h] : live_) apps.push_back(app);
  return apps;
}

AppIsolates::Stats AppIsolates::stats() const {
  Stats s;
  auto add = [&](const Hosted& h) {
    auto [used, limit] = h.loop->heapStatistics();
    s.heapUsedBytes += used;
    s.heapLimitBytes += limit;
    ++s.isolates;
  };
  for (const auto& [app, h] : live_) add(*h);
  for (const auto& h : draining_) add(*h);
  s.recycled = recycled_;
  return s;
}

}  // namespace isolane

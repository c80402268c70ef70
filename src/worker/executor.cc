#include "worker/executor.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace isolane {

Executor::Executor(const ExecutorOptions& options, LogSink& log, const Clock& clock)
    : options_(options), log_(log), clock_(clock), requests_(options.queueCapacity) {
  thread_ = std::thread([this] { run(); });
}

Executor::~Executor() { stop(); }

Status Executor::loadApp(const AppSpec& spec, AppLoadReport* report) {
  std::future<Status> outcome;
  {
    auto q = commands_.lock();
    if (stopping_) return Error{"the executor is stopping"};
    q->push_back(LoadCommand{spec, report, {}});
    outcome = q->back().outcome.get_future();
  }
  doorbell_.ring();
  return outcome.get();
}

bool Executor::submit(RequestJob& job) {
  if (stopping_.load(std::memory_order_relaxed)) return false;
  // Count before the push so the executor never sees a finished job it has not counted.
  pending_.fetch_add(1, std::memory_order_relaxed);
  if (job.received == std::chrono::steady_clock::time_point{}) job.received = clock_.now();
  if (!requests_.tryPush(job)) {  // the job is left untouched, as promised
    pending_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  doorbell_.ring();
  return true;
}

void Executor::cancel(std::uint64_t key) {
  Control c;
  c.kind = Control::Kind::kCancel;
  c.key = key;
  pushControl(std::move(c));
}

void Executor::credit(std::uint64_t key, std::size_t bytes) {
  if (bytes == 0) return;
  Control c;
  c.kind = Control::Kind::kCredit;
  c.key = key;
  c.credit = bytes;
  pushControl(std::move(c));
}

void Executor::requestBody(std::uint64_t key, std::string piece, bool end, std::string error) {
  Control c;
  c.kind = Control::Kind::kBody;
  c.key = key;
  c.piece = std::move(piece);
  c.end = end;
  c.error = std::move(error);
  pushControl(std::move(c));
}

void Executor::pushControl(Control control) {
  {
    // Nothing is dropped. Credits for one request add up and cancels of one request count once,
    // so they are bounded by the requests in flight; body pieces are bounded by credit.
    auto q = controls_.lock();
    switch (control.kind) {
      case Control::Kind::kCredit: {
        auto [it, added] = q->credits.try_emplace(control.key, 0);
        if (added) q->order.push_back(control);  // one entry per key; its sum is in credits
        it->second += control.credit;
        break;
      }
      case Control::Kind::kCancel:
        if (q->cancelled.insert(control.key).second) q->order.push_back(std::move(control));
        break;
      case Control::Kind::kBody:
        q->order.push_back(std::move(control));
        break;
    }
  }
  doorbell_.ring();
}

void Executor::stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  doorbell_.ring();
  if (thread_.joinable()) thread_.join();
}

void Executor::run() {
  pthread_setname_np(pthread_self(), "isolane-exec");
  EventLoop loop(options_.loop, clock_, log_, doorbell_);
  std::deque<RequestJob> jobs;
  std::deque<LoadCommand> commands;
  auto publishStats = [&, last = std::chrono::steady_clock::time_point()]() mutable {
    auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(250)) return;
    last = now;
    auto [used, limit] = loop.heapStatistics();
    heapUsed_.store(used, std::memory_order_relaxed);
    heapLimit_.store(limit, std::memory_order_relaxed);
  };
  for (;;) {
    publishStats();
    commands_.lock()->swap(commands);
    for (auto& command : commands) {
      command.outcome.set_value(loop.loadApp(command.spec, command.report));
    }
    commands.clear();

    // Controls are taken before requests: a control is pushed after its request, so every control
    // taken here finds its request started below (a body piece must never miss its request).
    Controls controls;
    {
      auto q = controls_.lock();
      std::swap(controls, *q);
    }
    requests_.drainInto(jobs);
    while (!jobs.empty()) {
      RequestJob job = std::move(jobs.front());
      jobs.pop_front();
      // Counted out when answered, on this thread: the submitter's callback is moved, not
      // copied, once per request.
      job.done = [this, done = std::move(job.done)](AppResponse r) {
        pending_.fetch_sub(1, std::memory_order_relaxed);
        executions_.fetch_add(1, std::memory_order_relaxed);
        done(std::move(r));
      };
      if (stopping_) {
        job.done(AppResponse::failed(FailureKind::kShuttingDown, "server is stopping"));
      } else {
        loop.startRequest(std::move(job));
      }
    }
    for (Control& c : controls.order) {
      switch (c.kind) {
        case Control::Kind::kCancel:
          loop.cancelRequest(c.key);
          break;
        case Control::Kind::kCredit:
          loop.grantCredit(c.key, controls.credits[c.key]);
          break;
        case Control::Kind::kBody:
          loop.requestBody(c.key, std::move(c.piece), c.end, std::move(c.error));
          break;
      }
    }
    loop.runHostEvents();
    loop.runDueTimers();
    loop.expireDeadlines();
    loop.runForegroundTasks();

    if (stopping_) {
      loop.failAll(FailureKind::kShuttingDown, "server is stopping");
      requests_.close();  // after this drain nothing more can arrive
      requests_.drainInto(jobs);
      for (auto& job : jobs) {
        pending_.fetch_sub(1, std::memory_order_relaxed);
        job.done(AppResponse::failed(FailureKind::kShuttingDown, "server is stopping"));
      }
      for (auto& command : *commands_.lock()) {
        command.outcome.set_value(Error{"the executor is stopping"});
      }
      return;
    }
    if (loop.hostEventsPending()) continue;  // service calls made during this pass
    std::optional<std::chrono::steady_clock::time_point> until = loop.nextForegroundTask();
    if (auto wake = loop.nextWake()) {
      // The loop's clock is steady_clock-based in production; a test clock only changes what
      // counts as due, not how long we park (the doorbell wakes us on every submission).
      auto timer =
          std::chrono::steady_clock::now() +
          std::max(std::chrono::nanoseconds(0),
                   std::chrono::duration_cast<std::chrono::nanoseconds>(*wake - clock_.now()));
      if (!until || timer < *until) until = timer;
    }
    if (until) {
      doorbell_.waitUntil(*until);
    } else {
      doorbell_.wait();
    }
  }
}

}  // namespace isolane

#include "worker/executor.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "worker/delay_monitor.h"

namespace isolane {
namespace {
// The executor whose thread this is (null on any other thread).
thread_local const Executor* tlsRunning = nullptr;
}  // namespace

Executor::Executor(const ExecutorOptions& options, LogSink& log, const Clock& clock)
    : options_(options),
      log_(log),
      clock_(clock),
      requests_(options.queueCapacity),
      queuedExecutions_(options.queueCapacity),
      status_(options.status ? *options.status : ownStatus_) {
  thread_ = std::thread([this] { run(); });
}

Executor::~Executor() { stop(); }

Status Executor::loadApp(const AppSpec& spec, AppLoadReport* report, bool warm) {
  if (tlsRunning == this && here_ != nullptr) {  // from its own inbox: it would wait for itself
    Status s = here_->load(spec, warm, report);
    publish(*here_);
    return s;
  }
  std::future<Status> outcome;
  {
    auto q = commands_.lock();
    if (stopping_) return Error{"the executor is stopping"};
    q->push_back(LoadCommand{spec, report, warm, {}});
    outcome = q->back().outcome.get_future();
  }
  doorbell_.ring();
  return outcome.get();
}

bool Executor::submit(RequestJob& job) {
  if (stopping_.load(std::memory_order_relaxed)) return false;
  // Count before the push so the executor never sees a finished job it has not counted.
  status_.pending.fetch_add(1, std::memory_order_relaxed);
  if (job.received == std::chrono::steady_clock::time_point{}) job.received = clock_.now();
  if (!requests_.tryPush(job)) {  // the job is left untouched, as promised
    status_.pending.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  doorbell_.ring();
  return true;
}

bool Executor::submitExecution(ExecutionJob& job) {
  if (stopping_.load(std::memory_order_relaxed) || job.key == 0) return false;
  status_.pending.fetch_add(1, std::memory_order_relaxed);
  if (job.received == std::chrono::steady_clock::time_point{}) job.received = clock_.now();
  if (!queuedExecutions_.tryPush(job)) {
    status_.pending.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  executionsQueued_.fetch_add(1, std::memory_order_release);
  doorbell_.ring();
  return true;
}

void Executor::cancel(std::uint64_t key) {
  Control c;
  c.kind = Control::Kind::kCancel;
  c.key = key;
  pushControl(std::move(c));
}

void Executor::withdraw(std::uint64_t key) {
  if (key == 0) return;
  // Still in the queue (the thread is inside a turn, or has not woken): taken back here, on the
  // caller's thread, since the executor thread may not come back for seconds. Its client may
  // have left while it waited: then it is dropped, not sent elsewhere.
  std::vector<Taken> taken = takeQueued([key](const RequestJob& j) { return j.cancelKey == key; });
  for (Taken& t : taken) {
    t.job.done(unstarted(t.answer == FailureKind::kClientGone ? FailureKind::kClientGone
                                                              : FailureKind::kWithdrawn));
  }
  if (!taken.empty()) return;
  // Otherwise the thread may have it in hand: it is checked before it starts (the mark lives
  // until the pass that found it has started what it took); one that has started goes on.
  controls_.lock()->withdrawn.insert(key);
  doorbell_.ring();
}

std::vector<Executor::Taken> Executor::takeQueued(
    const std::function<bool(const RequestJob&)>& movable) {
  std::vector<RequestJob> jobs;
  requests_.takeAllIf(movable, jobs);
  std::vector<Taken> taken;
  if (jobs.empty()) return taken;
  taken.reserve(jobs.size());
  auto marks = controls_.lock();
  for (RequestJob& job : jobs) {
    status_.pending.fetch_sub(1, std::memory_order_relaxed);
    std::uint64_t key = job.cancelKey;
    FailureKind answer = FailureKind::kNone;
    if (marks->cancelled.count(key) != 0) {
      answer = FailureKind::kClientGone;
    } else if (marks->withdrawn.count(key) != 0) {
      answer = FailureKind::kWithdrawn;
    }
    taken.push_back(Taken{std::move(job), answer});
  }
  return taken;
}

AppResponse Executor::unstarted(FailureKind why) {
  switch (why) {
    case FailureKind::kClientGone:
      return AppResponse::failed(FailureKind::kClientGone,
                                 "the client went away before the request started");
    case FailureKind::kWithdrawn:
      return AppResponse::failed(FailureKind::kWithdrawn, "withdrawn before it started");
    default:
      return AppResponse::shed("queue-full", "the executor queue is full");
  }
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

void Executor::toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text) {
  Control c;
  c.kind = Control::Kind::kToolAnswer;
  c.key = key;
  c.call = call;
  c.end = ok;
  c.piece = std::move(text);
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
      case Control::Kind::kToolAnswer:
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

void Executor::attachInbox(ExecutorInbox* inbox) {
  inbox_.store(inbox, std::memory_order_release);
  doorbell_.ring();
}

bool Executor::park(std::optional<std::chrono::steady_clock::time_point> until,
                    ExecutorInbox* inbox) {
  std::optional<std::chrono::nanoseconds> timeout;
  if (until) timeout = *until - std::chrono::steady_clock::now();
  if (inbox && inbox->holding()) return true;  // what a stand-in left it: no wait
  return doorbell_.park(timeout, inbox ? inbox->fd() : -1).readable || (inbox && inbox->holding());
}

void Executor::publish(AppIsolates& isolates) {
  AppIsolates::Stats stats = isolates.stats();
  heapUsed_.store(stats.heapUsedBytes, std::memory_order_relaxed);
  heapLimit_.store(stats.heapLimitBytes, std::memory_order_relaxed);
  isolates_.store(stats.isolates, std::memory_order_relaxed);
  recycled_.store(stats.recycled, std::memory_order_relaxed);
}

void Executor::run() {
  pthread_setname_np(pthread_self(), "isolane-exec");
  // Shared by the thread's app isolates: one turn runs at a time, so one watchdog; one fetch
  // client, so one reactor thread and one connection pool.
  // The inbox, once attached and until it has nothing more to give (executor thread only).
  ExecutorInbox* inbox = nullptr;
  // Its answers wait through a pass of short turns and leave together (ExecutorInbox): those that
  // have waited kAnswerHold leave as the next turn starts, and any as a turn goes on.
  Watchdog::Hooks hooks;
  hooks.longTurn = [this] {
    if (options_.onLongTurn) options_.onLongTurn();
    if (ExecutorInbox* attached = inbox_.load(std::memory_order_acquire)) attached->busy(doorbell_);
  };
  hooks.turnStarts = [&inbox](std::chrono::steady_clock::time_point now) {
    return inbox != nullptr && inbox->answersDue(now);
  };
  hooks.turnGoesOn = [this] {
    if (ExecutorInbox* attached = inbox_.load(std::memory_order_acquire)) attached->flushAnswers();
  };
  Watchdog watchdog(&status_, std::chrono::milliseconds(10), std::move(hooks));
  FetchRouter fetch(options_.egress
                        ? options_.egress(doorbell_)
                        : std::make_unique<FetchClient>(doorbell_, options_.loop.fetch));
  AppIsolates isolates(options_.loop, options_.isolates, clock_, log_, doorbell_, watchdog, fetch);
  tlsRunning = this;
  here_ = &isolates;
  // Whether the inbox has nothing more to give; whether to read it this pass (it was readable
  // when the thread woke, or the thread did not park).
  bool inboxDone = false;
  bool readInbox = true;
  std::chrono::steady_clock::time_point lastDrain;
  auto drainInbox = [&] {
    lastDrain = std::chrono::steady_clock::now();
    if (!inbox->drain()) {
      inbox->releaseAnswers();
      inbox = nullptr;
      inboxDone = true;
    }
  };
  // A pass of many short turns reads the inbox every kLongTurnMark too (a heartbeat, a
  // withdrawal must not wait for the whole pass; one long turn has the inbox's stand-in).
  auto drainIfLong = [&] {
    if (inbox != nullptr && std::chrono::steady_clock::now() - lastDrain >= kLongTurnMark) {
      drainInbox();
    }
  };
  DelayMonitor delays(status_);
  // When each app last started a request (a sequence number), for its turn in the queue.
  std::unordered_map<std::string, std::uint64_t> lastStarted;
  std::uint64_t startSeq = 0;
  // Kept from pass to pass (swapped with the shared ones, cleared): an empty std::deque made
  // afresh allocates, and a pass happens for every request or two.
  std::deque<RequestJob> jobs;
  std::deque<LoadCommand> commands;
  Controls controls;
  std::uint64_t hostedVersion = ~std::uint64_t{0};
  auto publishStats = [&, last = std::chrono::steady_clock::time_point()]() mutable {
    // Which apps the thread hosts steers the router, and the isolate counts are cheap: published
    // every pass they changed. Heap figures cost a walk over the isolates: a few times a second.
    bool hostedChanged = isolates.hostedVersion() != hostedVersion;
    bool changed = hostedChanged || isolates.count() != isolates_.load() ||
                   isolates.recycled() != recycled_.load();
    auto t = std::chrono::steady_clock::now();
    if (changed || t - last >= std::chrono::milliseconds(250)) {
      last = t;
      publish(isolates);  // first: whoever sees an app hosted sees its isolate counted
    }
    if (hostedChanged) {
      hostedVersion = isolates.hostedVersion();
      std::vector<std::string> now = isolates.hosted();
      *hosted_.lock() = std::unordered_set<std::string>(now.begin(), now.end());
    }
  };
  for (;;) {
    // Busy from waking to parking: a turn, and also what comes between turns (flushing what a
    // terminated turn queued, disposing a recycled isolate's heap) keeps requests waiting.
    if (status_.passSinceNs.load(std::memory_order_relaxed) == 0) {
      status_.passSinceNs.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count(),
                                std::memory_order_relaxed);
    }
    if (inbox == nullptr && !inboxDone) {
      inbox = inbox_.load(std::memory_order_acquire);
      readInbox = inbox != nullptr;  // just attached: it may hold what was sent before
    }
    if (inbox != nullptr) inbox->holdAnswers();
    if (inbox != nullptr && readInbox) drainInbox();
    readInbox = true;
    // Whatever rang before this point is looked at in this pass (the requests the inbox handed on
    // just now rang too): the ring need not wake the thread again for an empty pass.
    doorbell_.take();
    commands_.lock()->swap(commands);
    if (!commands.empty() && inbox != nullptr) inbox->flushAnswers();
    for (auto& command : commands) {
      command.outcome.set_value(isolates.load(command.spec, command.warm, command.report));
      publish(isolates);
    }
    commands.clear();

    // Controls are taken before requests: a control is pushed after its request, so every control
    // taken here finds its request started below (a body piece must never miss its request).
    controls.order.clear();
    controls.credits.clear();
    {
      auto q = controls_.lock();
      std::swap(controls.order, q->order);
      std::swap(controls.credits, q->credits);
      // The marks stay in controls_, where the starts below, takeQueued and withdraw() read
      // them, until this pass has started what it takes; then the ones it found are dropped (a
      // mark matters only until its request starts, or leaves this thread).
      controls.cancelled = q->cancelled;
      controls.withdrawn = q->withdrawn;
    }
    // One at a time, each just before it starts: what waits behind a long turn stays in the
    // queue, where withdraw() can take it back from another thread. At most as many as were
    // there when the pass began, so the pass ends and its timers and I/O run. Apps take turns:
    // the next to start is the oldest request of the app that started one least lately, among
    // the oldest kFairWindow queued now, so one app's burst of long first turns does not start
    // before every other app's request, even one that arrived while the burst's first turn ran.
    RequestJob job;
    bool oldest = true;  // the job taken was the oldest queued: it waited through the whole queue
    auto leastLately = [&](const RequestJob& j) {
      auto it = lastStarted.find(j.request.app);
      return it == lastStarted.end() ? 0 : it->second;
    };
    for (std::size_t n = requests_.size();
         n > 0 && requests_.takeLeast(leastLately, kFairWindow, job, &oldest); --n) {
      lastStarted[job.request.app] = ++startSeq;
      // Counted out when answered, on this thread: the submitter's callback is moved, not
      // copied, once per request.
      job.done = [this, done = std::move(job.done)](AppResponse r) {
        status_.pending.fetch_sub(1, std::memory_order_relaxed);
        executions_.fetch_add(1, std::memory_order_relaxed);
        done(std::move(r));
      };
      FailureKind unstartedBy = FailureKind::kNone;
      if (job.cancelKey != 0) {
        auto marks = controls_.lock();
        if (marks->cancelled.count(job.cancelKey) != 0) {
          // Work nobody waits for is not done: its client went away while it waited here.
          unstartedBy = FailureKind::kClientGone;
        } else if (marks->withdrawn.count(job.cancelKey) != 0) {
          // It waited behind a long turn here; the master sends it to a worker that is free.
          unstartedBy = FailureKind::kWithdrawn;
        }
      }
      if (stopping_) {
        job.done(AppResponse::failed(FailureKind::kShuttingDown, "server is stopping"));
      } else if (unstartedBy != FailureKind::kNone) {
        job.done(unstarted(unstartedBy));
      } else {
        delays.started(clock_.now() - job.received, std::chrono::steady_clock::now(), oldest);
        isolates.start(std::move(job));
        drainIfLong();
      }
    }
    // Executions, in the order they came: each in an isolate of its own, so no app waits its turn.
    ExecutionJob execution;
    for (std::size_t n = executionsQueued_.load(std::memory_order_acquire);
         n > 0 && queuedExecutions_.tryPop(execution); --n) {
      executionsQueued_.fetch_sub(1, std::memory_order_relaxed);
      execution.settled = [this, settled = std::move(execution.settled)](ExecutionOutcome o) {
        status_.pending.fetch_sub(1, std::memory_order_relaxed);
        executions_.fetch_add(1, std::memory_order_relaxed);
        settled(std::move(o));
      };
      if (stopping_) {
        execution.settle(FailureKind::kShuttingDown, "server is stopping");
      } else if (controls_.lock()->cancelled.count(execution.key) != 0) {
        execution.settle(FailureKind::kClientGone, {});  // nobody waits for it
      } else {
        isolates.startExecution(std::move(execution));
      }
    }
    if (!controls.cancelled.empty() || !controls.withdrawn.empty()) {
      auto q = controls_.lock();
      for (std::uint64_t key : controls.cancelled) q->cancelled.erase(key);
      for (std::uint64_t key : controls.withdrawn) q->withdrawn.erase(key);
    }
    for (Control& c : controls.order) {
      switch (c.kind) {
        case Control::Kind::kCancel:
          isolates.cancel(c.key);
          break;
        case Control::Kind::kCredit:
          isolates.credit(c.key, controls.credits[c.key]);
          break;
        case Control::Kind::kBody:
          isolates.requestBody(c.key, std::move(c.piece), c.end, std::move(c.error));
          break;
        case Control::Kind::kToolAnswer:
          isolates.toolAnswer(c.key, c.call, c.end, std::move(c.piece));
          break;
      }
    }
    isolates.pump();
    // The answers of the pass leave before the work nobody waits for (and before an app load,
    // which may wait for the other threads).
    if (inbox != nullptr) inbox->flushAnswers();
    isolates.housekeep();
    drainIfLong();
    publishStats();

    if (stopping_) {
      here_ = nullptr;
      if (inbox != nullptr) inbox->releaseAnswers();  // the ones below go at once
      isolates.failAll(FailureKind::kShuttingDown, "server is stopping");
      requests_.close();  // after this drain nothing more can arrive
      requests_.drainInto(jobs);
      for (auto& job : jobs) {
        status_.pending.fetch_sub(1, std::memory_order_relaxed);
        job.done(AppResponse::failed(FailureKind::kShuttingDown, "server is stopping"));
      }
      queuedExecutions_.close();
      std::deque<ExecutionJob> executions;
      queuedExecutions_.drainInto(executions);
      for (auto& e : executions) {
        status_.pending.fetch_sub(1, std::memory_order_relaxed);
        e.settle(FailureKind::kShuttingDown, "server is stopping");
      }
      for (auto& command : *commands_.lock()) {
        command.outcome.set_value(Error{"the executor is stopping"});
      }
      return;
    }
    if (isolates.hostEventsPending()) continue;  // service calls made during this pass
    std::optional<std::chrono::steady_clock::time_point> until = isolates.nextForegroundTask();
    if (auto wake = isolates.nextWake()) {
      // The loop's clock is steady_clock-based in production; a test clock only changes what
      // counts as due, not how long we park (the doorbell wakes us on every submission).
      // At most a day ahead: a far wake must not overflow the sum (and then lie in the past).
      auto timer =
          std::chrono::steady_clock::now() +
          std::clamp(std::chrono::duration_cast<std::chrono::nanoseconds>(*wake - clock_.now()),
                     std::chrono::nanoseconds(0), std::chrono::nanoseconds(std::chrono::hours(24)));
      if (!until || timer < *until) until = timer;
    }
    status_.passSinceNs.store(0, std::memory_order_relaxed);
    if (inbox != nullptr) inbox->releaseAnswers();
    // Free now: it may take over what waits behind another thread's long turn (rings us).
    if (options_.beforePark) options_.beforePark();
    readInbox = park(until, inbox);
  }
}

}  // namespace isolane

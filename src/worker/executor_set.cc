#include "worker/executor_set.h"

#include <algorithm>

namespace isolane {

// Forwards a streamed body and forgets the request's route once the body is over.
class ExecutorSet::RoutedSink final : public StreamSink {
 public:
  RoutedSink(ExecutorSet& set, std::uint64_t key, std::shared_ptr<StreamSink> inner)
      : set_(set), key_(key), inner_(std::move(inner)) {}
  void piece(std::string_view bytes) override { inner_->piece(bytes); }
  void end() override {
    inner_->end();
    set_.forget(key_);
  }
  void abort(FailureKind kind, const std::string& detail) override {
    inner_->abort(kind, detail);
    set_.forget(key_);
  }

 private:
  ExecutorSet& set_;  // outlives its executors, which hold the sink
  const std::uint64_t key_;
  const std::shared_ptr<StreamSink> inner_;
};

ExecutorSet::ExecutorSet(std::size_t threads, const ExecutorOptions& options, LogSink& log,
                         const Clock& clock, StatusPage* page, bool reserve, bool moveQueued) {
  if (threads == 0) threads = 1;
  if (page) threads = std::min<std::size_t>(threads, StatusPage::kMaxThreads - (reserve ? 1 : 0));
  regular_ = threads;
  if (reserve) ++threads;
  moveQueued_ = moveQueued && threads > 1 && threads <= StatusPage::kMaxThreads;
  single_ = threads == 1;
  executors_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    ExecutorOptions o = options;
    if (page) o.status = &page->thread[i];
    if (moveQueued_) {
      // Called from the executors' threads, which stop() joins before this set is gone.
      o.onLongTurn = [this, i] { moveQueuedOff(i); };
      o.beforePark = [this, i] { takeOverLongTurns(i); };
    }
    executors_.push_back(std::make_unique<Executor>(o, log, clock));
  }
  // The threads run (and may call back) before the last is made: they move nothing until now.
  ready_.store(true, std::memory_order_release);
  if (page) {
    page->threads.store(static_cast<std::uint32_t>(threads), std::memory_order_relaxed);
    page->reserve.store(reserve ? 1 : 0, std::memory_order_relaxed);
    page->magic.store(StatusPage::kMagic, std::memory_order_release);
  }
}

ExecutorSet::~ExecutorSet() { stop(); }

Status ExecutorSet::loadApp(const AppSpec& spec, AppLoadReport* report) {
  Status first = executors_[0]->loadApp(spec, report, /*warm=*/true);
  if (!first) return first;
  AppSpec rest = spec;
  // The other threads compile from the cache the first one made, if there was none.
  if (report && !report->producedCache.empty() && !spec.sourceSha256.empty() &&
      report->sourceSha256 == spec.sourceSha256) {
    rest.codeCache = report->producedCache;
  }
  for (std::size_t i = 1; i < executors_.size(); ++i) {
    if (Status s = executors_[i]->loadApp(rest, nullptr, /*warm=*/false); !s) return s;
  }
  return Status::success();
}

std::size_t ExecutorSet::pick(const std::string& app) const {
  auto now = std::chrono::steady_clock::now();
  std::size_t best = 0;
  std::size_t bestScore = SIZE_MAX;
  for (std::size_t i = 0; i < regular_; ++i) {
    const Executor& e = *executors_[i];
    // Each request it has waits for its turns before a new one starts: the heaviest weight.
    std::size_t score = 4 * e.pending();
    // Making an isolate costs a few milliseconds: worth it as soon as the threads that have one
    // have anything queued or running.
    if (!e.hosts(app)) score += 1;
    // A working thread starts nothing new until its pass ends, and nobody knows how long that
    // will be; one working for long is avoided whatever the others do, and when every thread
    // is, the one that started last wins (the oldest is the likeliest to be stuck).
    if (auto since = e.busySince()) {
      auto busy = std::chrono::duration_cast<std::chrono::milliseconds>(now - *since);
      score += busy > kLongTurn ? 1'000'000 + static_cast<std::size_t>(busy.count()) : 2;
    }
    if (score < bestScore) {
      best = i;
      bestScore = score;
    }
  }
  if (hasReserve() && reserveTakes(app, now)) return regular_;
  return best;
}

bool ExecutorSet::reserveTakes(const std::string& app,
                               std::chrono::steady_clock::time_point now) const {
  // A thread neither working for long nor inside a turn is free: the common case, decided
  // without the lock.
  for (std::size_t i = 0; i < regular_; ++i) {
    const Executor& e = *executors_[i];
    auto busy = e.busySince();
    if (!(busy && now - *busy > kLongTurn) && !e.turnSince()) return false;
  }
  std::lock_guard<std::mutex> lock(longTurnsMu_);
  auto heavy = [&](std::uint64_t tag) {
    auto it = longTurns_.find(tag);
    return tag != 0 && it != longTurns_.end() && now - it->second < kHeavyMemory;
  };
  // The apps inside a long turn now, or whose last turn was long, are heavy (not merely the
  // last app of a long pass).
  for (std::size_t i = 0; i < regular_; ++i) {
    auto turn = executors_[i]->turnSince();
    if (turn && now - *turn > kLongTurn) {
      if (std::uint64_t t = executors_[i]->turnApp()) longTurns_[t] = now;
    }
    auto [app, ended] = executors_[i]->lastLongTurn();
    if (app != 0 && ended) {
      auto& seen = longTurns_[app];
      seen = std::max(seen, *ended);
    }
  }
  if (heavy(appTag(app))) return false;  // it waits behind itself
  // Every thread is held: working for long, or inside a turn of a heavy app (however short
  // so far: it will be long).
  for (std::size_t i = 0; i < regular_; ++i) {
    const Executor& e = *executors_[i];
    auto busy = e.busySince();
    bool held = (busy && now - *busy > kLongTurn) || (e.turnSince() && heavy(e.turnApp()));
    if (!held) return false;
  }
  auto reserveBusy = executors_[regular_]->busySince();
  if (!(reserveBusy && now - *reserveBusy > kLongTurn)) return true;  // and the reserve is not
  // The reserve is working for long too (a long turn of its own, or still in the pass that made
  // an isolate and answered): as between any threads that all are, the one that started last
  // wins, since the oldest is the likeliest to be stuck.
  for (std::size_t i = 0; i < regular_; ++i) {
    auto busy = executors_[i]->busySince();
    if (busy && *busy > *reserveBusy) return false;
  }
  return true;
}

bool ExecutorSet::submit(RequestJob& job) {
  return submitTo(single_ ? 0 : pick(job.request.app), job);
}

bool ExecutorSet::submitTo(std::size_t i, RequestJob& job) {
  if (i >= executors_.size()) i = 0;
  std::uint64_t key = job.cancelKey;
  if (key == 0 || single_) return executors_[i]->submit(job);
  routes_.lock()->insert_or_assign(key, i);
  // The route lives until the answer, or until its streamed body ends.
  auto original = std::make_shared<std::function<void(AppResponse)>>(std::move(job.done));
  std::shared_ptr<StreamSink> originalSink = job.sink;
  job.done = [this, key, original](AppResponse r) {
    if (!r.streamed) forget(key);
    (*original)(std::move(r));
  };
  if (job.sink) job.sink = std::make_shared<RoutedSink>(*this, key, originalSink);
  if (executors_[i]->submit(job)) {
    // Behind a turn that was long already (or became so as it was placed, after the watchdog
    // had looked): it moves now, if a thread is free.
    if (moveQueued_) moveQueuedOff(i, key);
    return true;
  }
  forget(key);
  job.done = std::move(*original);  // untouched, as promised
  job.sink = std::move(originalSink);
  return false;
}

bool ExecutorSet::submitExecution(ExecutionJob& job) {
  if (single_) return executors_[0]->submitExecution(job);
  std::size_t i = pick({});
  std::uint64_t key = job.key;
  routes_.lock()->insert_or_assign(key, i);
  // The route (for its cancel and its tool answers) lives until it settles. It never moves.
  auto original = std::move(job.settled);
  job.settled = [this, key, original](ExecutionOutcome o) {
    forget(key);
    original(std::move(o));
  };
  if (executors_[i]->submitExecution(job)) return true;
  forget(key);
  job.settled = std::move(original);  // untouched, as promised
  return false;
}

bool ExecutorSet::attachInbox(std::size_t thread, ExecutorInbox* inbox) {
  if (thread >= regular_) return false;
  executors_[thread]->attachInbox(inbox);
  return true;
}

Executor* ExecutorSet::routeOf(std::uint64_t key) {
  if (single_) return executors_[0].get();
  auto routes = routes_.lock();
  auto it = routes->find(key);
  return it == routes->end() ? nullptr : executors_[it->second].get();
}

void ExecutorSet::forget(std::uint64_t key) { routes_.lock()->erase(key); }

void ExecutorSet::cancel(std::uint64_t key) {
  if (single_) return executors_[0]->cancel(key);
  auto routes = routes_.lock();  // held: the request cannot move meanwhile
  auto it = routes->find(key);
  if (it != routes->end()) executors_[it->second]->cancel(key);
}

void ExecutorSet::withdraw(std::uint64_t key) {
  // Not under the routes' lock: Executor::withdraw may answer at once, and an answer forgets its
  // route. A request that moves meanwhile is checked for the mark as it moves; one that moved
  // before the mark was set runs where it went, which is free (as if it had started).
  if (Executor* e = routeOf(key)) e->withdraw(key);
}

bool ExecutorSet::workingLong(std::size_t thread, std::chrono::steady_clock::time_point now) const {
  auto busy = executors_[thread]->busySince();
  return busy && now - *busy > kLongTurn;
}

std::size_t ExecutorSet::othersFree(std::size_t from,
                                    std::chrono::steady_clock::time_point now) const {
  std::size_t free = 0;
  for (std::size_t i = 0; i < executors_.size(); ++i) {
    if (i != from && !workingLong(i, now) && !executors_[i]->turnSince()) ++free;
  }
  return free;
}

void ExecutorSet::moveQueuedOff(std::size_t from, std::uint64_t onlyKey) {
  if (!ready_.load(std::memory_order_acquire)) return;
  const Executor& source = *executors_[from];
  auto turn = source.turnSince();              // first: the common case (no turn) reads no clock
  if (!turn || source.pending() <= 1) return;  // no turn, or nothing waits behind it
  auto now = std::chrono::steady_clock::now();
  if (now - *turn <= kLongTurn) return;  // not long (yet), or it came free meanwhile
  // A thread that may take something; and not the same scan again: one that moved nothing is
  // repeated only once the queue or the free threads have changed (the scan holds the routes'
  // lock, which every answer takes).
  std::size_t free = othersFree(from, now);
  if (free == 0) return;
  std::uint64_t pending = source.pending();
  Futile& futile = futile_[from];
  if (onlyKey == 0 && free <= futile.free.load(std::memory_order_relaxed) &&
      pending == futile.pending.load(std::memory_order_relaxed)) {
    return;
  }
  std::vector<Executor::Taken> answers;
  std::size_t moved = 0;
  {
    auto routes = routes_.lock();
    // Where pick() sends each app (asked once per app and scan), and how many each thread got:
    // a batch each, so that one thread does not take the whole backlog while others are free;
    // the rest moves when those threads come free again (takeOverLongTurns).
    std::vector<std::pair<std::string, std::size_t>> placeOf;
    std::vector<std::size_t> given(executors_.size(), 0);
    std::vector<std::size_t> to;
    std::vector<Executor::Taken> taken = executors_[from]->takeQueued([&](const RequestJob& j) {
      if (j.cancelKey == 0 || j.bodyStreamed) return false;
      if (onlyKey != 0 && j.cancelKey != onlyKey) return false;
      auto known = std::find_if(placeOf.begin(), placeOf.end(),
                                [&](const auto& p) { return p.first == j.request.app; });
      if (known == placeOf.end()) {
        std::size_t there = pick(j.request.app);
        if (there == from || workingLong(there, now)) {
          there = SIZE_MAX;
        }
        known = placeOf.insert(placeOf.end(), {j.request.app, there});
      }
      std::size_t there = known->second;
      if (there == SIZE_MAX || given[there] >= kMoveBatch) return false;
      ++given[there];
      to.push_back(there);
      return true;
    });
    for (std::size_t i = 0; i < taken.size(); ++i) {
      Executor::Taken& t = taken[i];
      if (t.answer == FailureKind::kNone) {
        if (executors_[to[i]]->submit(t.job)) {
          (*routes)[t.job.cancelKey] = to[i];
          ++moved;
          continue;
        }
        if (executors_[from]->submit(t.job)) continue;  // the other's queue is full: back, last
        t.answer = FailureKind::kOverloaded;
      }
      answers.push_back(std::move(t));
    }
  }
  if (onlyKey == 0) {
    bool nothing = moved == 0 && answers.empty();
    futile.free.store(nothing ? free : 0, std::memory_order_relaxed);
    futile.pending.store(nothing ? pending : 0, std::memory_order_relaxed);
  }
  // Answered without the lock: an answer forgets its route.
  for (Executor::Taken& t : answers) t.job.done(Executor::unstarted(t.answer));
}

void ExecutorSet::takeOverLongTurns(std::size_t self) {
  for (std::size_t i = 0; i < executors_.size(); ++i) {
    if (i != self) moveQueuedOff(i);  // each looks whether its turn is long
  }
}

void ExecutorSet::credit(std::uint64_t key, std::size_t bytes) {
  if (Executor* e = routeOf(key)) e->credit(key, bytes);
}

void ExecutorSet::requestBody(std::uint64_t key, std::string piece, bool end, std::string error) {
  if (Executor* e = routeOf(key)) e->requestBody(key, std::move(piece), end, std::move(error));
}

void ExecutorSet::toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text) {
  if (Executor* e = routeOf(key)) e->toolAnswer(key, call, ok, std::move(text));
}

void ExecutorSet::stop() {
  for (auto& e : executors_) e->stop();
}

std::size_t ExecutorSet::pending() const {
  std::size_t n = 0;
  for (const auto& e : executors_) n += e->pending();
  return n;
}

Executor::Stats ExecutorSet::stats() const {
  Executor::Stats sum;
  for (const auto& e : executors_) {
    Executor::Stats s = e->stats();
    sum.heapUsedBytes += s.heapUsedBytes;
    sum.heapLimitBytes += s.heapLimitBytes;
    sum.executions += s.executions;
    sum.isolates += s.isolates;
    sum.recycled += s.recycled;
  }
  return sum;
}

}  // namespace isolane

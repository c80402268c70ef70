#include "worker/watchdog.h"

#include <algorithm>

#include "runtime/isolate_owner.h"
#include "util/clock.h"

namespace isolane {

Watchdog::Watchdog(ThreadStatus* status, std::chrono::milliseconds tick, Hooks hooks)
    : tick_(tick), hooks_(std::move(hooks)), status_(status ? *status : ownStatus_) {
  pthread_getcpuclockid(pthread_self(), &cpuClock_);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

std::chrono::nanoseconds Watchdog::cpuNow() const {
  timespec ts{};
  clock_gettime(cpuClock_, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::chrono::nanoseconds Watchdog::readCpu(std::chrono::steady_clock::time_point wallNow) {
  lastReadWall_ = wallNow;
  ++cpuReads_;
  // On the watched thread itself: its own CPU clock, which the kernel reads without looking the
  // thread up (cpuNow()'s, for the watchdog's thread, costs a lookup by id per read).
  return threadCpuTime();
}

std::chrono::nanoseconds Watchdog::turnStartCpu(std::chrono::steady_clock::time_point wallNow) {
  // (Past kCpuReadEvery, the read comes at the turn's end: what the estimates left out since
  // the last read is charged then, to this turn.)
  if (lastEndCpu_.count() >= 0 && wallNow - lastEndWall_ <= kCpuReadReuse) return lastEndCpu_;
  return readCpu(wallNow);
}

std::chrono::nanoseconds Watchdog::turnEndCpu(std::chrono::steady_clock::time_point wallNow) {
  auto wall = wallNow - wallStart_;
  if (wall < kCpuReadReuse && wallNow - lastReadWall_ < kCpuReadEvery) return turnStart_ + wall;
  return readCpu(wallNow);
}

std::chrono::nanoseconds Watchdog::arm(std::chrono::nanoseconds cpuBudget, IsolateOwner& isolate,
                                       std::uint64_t app) {
  bool wake;
  auto wallNow = std::chrono::steady_clock::now();
  if (hooks_.turnStarts && hooks_.turnStarts(wallNow)) wallNow = std::chrono::steady_clock::now();
  std::chrono::nanoseconds start = turnStartCpu(wallNow);
  status_.turnApp.store(app, std::memory_order_relaxed);
  status_.turnSinceNs.store(steadyNs(wallNow), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
    wallStart_ = wallNow;
    longTold_ = false;
    target_ = &isolate;
    fired_ = false;
    turnStart_ = start;
    budget_ = cpuBudget;
    wake = sleepingIdle_;  // a ticking watchdog picks the new turn up by itself
  }
  if (wake) cv_.notify_one();
  return start;
}

bool Watchdog::disarm(std::chrono::nanoseconds* cpuUsed) {
  // turnApp stays: between two turns of one pass the thread is still the last app's (the
  // reserve thread must not take that app's next request in the gap); readers check
  // turnSinceNs for whether a turn is in progress. A long turn is recorded as it ends.
  auto wallNow = std::chrono::steady_clock::now();
  std::int64_t nowNs = steadyNs(wallNow);
  if (inLongTurn(status_, nowNs, kLongTurnMark)) {
    status_.longTurnApp.store(status_.turnApp.load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
    status_.longTurnEndNs.store(nowNs, std::memory_order_relaxed);
  }
  status_.turnSinceNs.store(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  std::chrono::nanoseconds used{0};
  if (armed_) {
    std::chrono::nanoseconds end = turnEndCpu(wallNow);
    used = std::max(end - turnStart_, std::chrono::nanoseconds(0));
    status_.cpuNs.fetch_add(static_cast<std::uint64_t>(used.count()), std::memory_order_relaxed);
    lastEndCpu_ = end;
    lastEndWall_ = wallNow;
  }
  if (cpuUsed) *cpuUsed = used;
  armed_ = false;
  target_ = nullptr;
  return fired_;
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!armed_ || fired_) {
      sleepingIdle_ = true;
      cv_.wait(lock);
      sleepingIdle_ = false;
      continue;
    }
    auto used = cpuNow() - turnStart_;
    if (used >= budget_) {
      fired_ = true;
      target_->terminate();  // under the lock: disarm() cannot return while this runs
      continue;
    }
    auto into = std::chrono::steady_clock::now() - wallStart_;
    if (hooks_.longTurn && !longTold_ && into >= kLongTurnMark) {
      longTold_ = true;
      lock.unlock();  // it takes other threads' locks; the turn may end meanwhile
      hooks_.longTurn();
      lock.lock();
      continue;
    }
    if (hooks_.turnGoesOn && into >= kTurnGoesOn) {
      lock.unlock();  // likewise
      hooks_.turnGoesOn();
      lock.lock();
      if (!armed_ || fired_) continue;
    }
    // CPU time cannot advance faster than wall time on one thread, so waiting the smaller of
    // the tick and what is left never overshoots by more than a tick.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(budget_ - used) +
                std::chrono::milliseconds(1);
    cv_.wait_for(lock, std::min(left, tick_));
  }
}

}  // namespace isolane

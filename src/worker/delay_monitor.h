#pragma once
// DelayMonitor: CoDel's measure of one executor thread's queue. Every request that starts its
// first turn says how long it waited since it reached the worker; over each interval of
// kDelayInterval the least of those waits is published on the thread's status line. A least wait
// above the target over a whole interval means a standing queue (every request of that interval
// waited at least that long): the master then sheds new arrivals (pool/subprocess_backend.h). A
// burst that drains is not one: its first requests got through fast.
//
// Thread rule: the executor thread only (the published figures are atomics for any reader).

#include <algorithm>
#include <chrono>

#include "ipc/status_page.h"

namespace isolane {

class DelayMonitor {
 public:
  explicit DelayMonitor(ThreadStatus& status) : status_(status) {}

  // A request starts at `now` (steady clock) after waiting `waited`.
  void started(std::chrono::nanoseconds waited, std::chrono::steady_clock::time_point now) {
    if (intervalStart_ == std::chrono::steady_clock::time_point{}) intervalStart_ = now;
    least_ = std::min(least_, std::max(waited, std::chrono::nanoseconds(0)));
    if (now - intervalStart_ < kDelayInterval) return;
    status_.standingDelayNs.store(least_.count(), std::memory_order_relaxed);
    status_.standingDelayAtNs.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
        std::memory_order_relaxed);
    least_ = std::chrono::nanoseconds::max();
    intervalStart_ = now;
  }

 private:
  ThreadStatus& status_;
  std::chrono::steady_clock::time_point intervalStart_{};
  std::chrono::nanoseconds least_ = std::chrono::nanoseconds::max();
};

}  // namespace isolane

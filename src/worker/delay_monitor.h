#pragma once
// DelayMonitor: CoDel's measure of one executor thread's queue. Every request that starts its
// first turn says how long it waited since it reached the worker; over each interval of
// kDelayInterval the least of those waits is published on the thread's status line. A least wait
// above the target over a whole interval means a standing queue (every request of that interval
// waited at least that long): the master then sheds new arrivals (pool/subprocess_backend.h). A
// burst that drains is not one: its first requests got through fast.
//
// A request that started ahead of older ones (apps take turns on a thread: worker/executor.h)
// did not wait through the queue, and its short wait says nothing of the queue behind it: the
// least wait is taken over the requests that started in order, as long as the interval had any.
// (fq_codel keeps a measure per flow for the same reason. Counted among the others, a neighbour
// served every 50 ms ahead of a CPU-bound flood hid the flood's standing queue from the shedding.)
//
// Thread rule: the executor thread only (the published figures are atomics for any reader).

#include <algorithm>
#include <chrono>

#include "ipc/status_page.h"

namespace isolane {

class DelayMonitor {
 public:
  explicit DelayMonitor(ThreadStatus& status) : status_(status) {}

  // A request starts at `now` (steady clock) after waiting `waited`; `inOrder`: it was the oldest
  // waiting (false: it was started ahead of older requests of other apps).
  void started(std::chrono::nanoseconds waited, std::chrono::steady_clock::time_point now,
               bool inOrder = true) {
    if (intervalStart_ == std::chrono::steady_clock::time_point{}) intervalStart_ = now;
    std::chrono::nanoseconds& least = inOrder ? least_ : leastAhead_;
    least = std::min(least, std::max(waited, std::chrono::nanoseconds(0)));
    if (now - intervalStart_ < kDelayInterval) return;
    if (least_ == std::chrono::nanoseconds::max()) least_ = leastAhead_;  // none in order
    status_.standingDelayNs.store(least_.count(), std::memory_order_relaxed);
    status_.standingDelayAtNs.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
        std::memory_order_relaxed);
    least_ = std::chrono::nanoseconds::max();
    leastAhead_ = std::chrono::nanoseconds::max();
    intervalStart_ = now;
  }

 private:
  ThreadStatus& status_;
  std::chrono::steady_clock::time_point intervalStart_{};
  std::chrono::nanoseconds least_ = std::chrono::nanoseconds::max();       // in order
  std::chrono::nanoseconds leastAhead_ = std::chrono::nanoseconds::max();  // ahead of older ones
};

}  // namespace isolane

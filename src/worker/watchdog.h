#pragma once
// Watchdog: a thread that ends a synchronous JavaScript turn that has used up its CPU budget.
// It only signals (IsolateOwner::terminate, i.e. TerminateExecution); it never enters the isolate
// (DESIGN rule 1). Budgets are CPU time of the executor thread, not wall time (rule 5), so a
// turn that is slow because the machine is saturated is not mistaken for a wedged one.
//
// Thread rule: construct, arm() and disarm() on the executor thread only.

#include <pthread.h>
#include <time.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace isolane {

class Watchdog {
 public:
  // Watches the CPU clock of the constructing thread. `terminate` is called from the watchdog
  // thread and must be safe from any thread.
  explicit Watchdog(std::function<void()> terminate,
                    std::chrono::milliseconds tick = std::chrono::milliseconds(10));
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts a turn that may use `cpuBudget` of CPU time before it is terminated.
  void arm(std::chrono::nanoseconds cpuBudget);
  // Ends the turn. True when the watchdog terminated it; the caller must then
  // CancelTerminateExecution (a termination requested just after the JavaScript returned would
  // otherwise hit the next turn).
  bool disarm();

 private:
  std::chrono::nanoseconds cpuNow() const;
  void run();

  clockid_t cpuClock_{};
  std::function<void()> terminate_;
  const std::chrono::milliseconds tick_;

  std::mutex mutex_;  // guards the fields below
  std::condition_variable cv_;
  bool armed_ = false;
  bool fired_ = false;
  bool sleepingIdle_ = false;
  bool stopping_ = false;
  std::chrono::nanoseconds turnStart_{};
  std::chrono::nanoseconds budget_{};

  std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace isolane

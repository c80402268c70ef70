#pragma once
// Watchdog: a thread that ends a synchronous JavaScript turn that has used up its CPU budget.
// It only signals (IsolateOwner::terminate, i.e. TerminateExecution); it never enters the isolate
// (DESIGN rule 1). Budgets are CPU time of the executor thread, not wall time (rule 5), so a
// turn that is slow because the machine is saturated is not mistaken for a wedged one. One
// watchdog serves every isolate of an executor thread: a turn names the isolate it runs in.
//
// It also publishes when the current turn began and the CPU turns used (ThreadStatus, read by the
// routers: a thread inside one turn for long is wedged), and, once per turn, says when a turn
// has gone on for kLongTurnMark of wall time (`onLongTurn`, on the watchdog's own thread): what
// waits behind it may then move to another thread.
//
// Thread rule: construct, arm() and disarm() on the executor thread only.

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "ipc/status_page.h"

namespace isolane {

class IsolateOwner;

class Watchdog {
 public:
  // Watches the CPU clock of the constructing thread; publishes its turns in `status` (null: in
  // a record of its own nobody reads).
  // `onLongTurn`: called on the watchdog's thread, without its lock, once in each turn that
  // lasts kLongTurnMark (within a tick of it); it must not block and may be empty.
  explicit Watchdog(ThreadStatus* status = nullptr,
                    std::chrono::milliseconds tick = std::chrono::milliseconds(10),
                    std::function<void()> onLongTurn = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts a turn in `isolate` that may use `cpuBudget` of CPU time before it is terminated;
  // `app` (an appTag, 0 for none) is published as whose turn it is. Returns the thread's CPU
  // time at the start: a read of the CPU clock is a system call, and one serves the caller's
  // accounting too. A turn that starts within kCpuReadReuse of wall time after the last turn
  // ended starts from that turn's end instead of reading the clock again: a thread's CPU time
  // cannot grow faster than wall time, so the turn is charged at most that much of the thread's
  // work between the two (answering the last request, starting this one: host work, perhaps for
  // another request), never less than it used, and its budget ends at most that much early.
  std::chrono::nanoseconds arm(std::chrono::nanoseconds cpuBudget, IsolateOwner& isolate,
                               std::uint64_t app = 0);
  // Ends the turn; no termination reaches its isolate after this returns. True when the
  // watchdog terminated it; the caller must then CancelTerminateExecution (a termination
  // requested just after the JavaScript returned would otherwise hit the next turn).
  // `cpuUsed`, when given, gets the CPU time the turn used (0 when none was armed).
  bool disarm(std::chrono::nanoseconds* cpuUsed = nullptr);

  static constexpr std::chrono::microseconds kCpuReadReuse{20};

 private:
  std::chrono::nanoseconds cpuNow() const;  // the watched thread's CPU time, from any thread
  // The CPU time at the start of a turn starting at `wallNow` (executor thread).
  std::chrono::nanoseconds turnStartCpu(std::chrono::steady_clock::time_point wallNow);
  void run();

  clockid_t cpuClock_{};
  const std::chrono::milliseconds tick_;
  const std::function<void()> onLongTurn_;
  ThreadStatus ownStatus_;
  ThreadStatus& status_;

  std::mutex mutex_;  // guards the fields below
  std::condition_variable cv_;
  bool armed_ = false;
  bool fired_ = false;
  bool sleepingIdle_ = false;
  bool stopping_ = false;
  std::chrono::nanoseconds turnStart_{};
  std::chrono::steady_clock::time_point wallStart_{};  // of the armed turn
  bool longTold_ = false;  // onLongTurn was called in the armed turn
  std::chrono::nanoseconds budget_{};
  IsolateOwner* target_ = nullptr;  // the isolate of the armed turn

  // The executor thread's: its CPU time when its last turn ended, and the wall time then.
  std::chrono::nanoseconds lastEndCpu_{-1};
  std::chrono::steady_clock::time_point lastEndWall_{};

  std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace isolane

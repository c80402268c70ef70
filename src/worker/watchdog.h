#pragma once
// Watchdog: a thread that ends a synchronous JavaScript turn that has used up its CPU budget.
// It only signals (IsolateOwner::terminate, i.e. TerminateExecution); it never enters the isolate
// (DESIGN rule 1). Budgets are CPU time of the executor thread, not wall time (rule 5), so a
// turn that is slow because the machine is saturated is not mistaken for a wedged one. One
// watchdog serves every isolate of an executor thread: a turn names the isolate it runs in.
//
// It also publishes when the current turn began and the CPU turns used (ThreadStatus, read by the
// routers: a thread inside one turn for long is wedged), and, once per turn, says when a turn
// has gone on for kLongTurnMark of wall time (Hooks::longTurn, on the watchdog's own thread): what
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
  // What the executor thread has it do besides ending turns (each may be empty; none may block).
  struct Hooks {
    // On the watchdog's thread, without its lock, once in each turn that lasts kLongTurnMark
    // (within a tick of it).
    std::function<void()> longTurn;
    // On the executor thread, as each turn starts, before its clocks are read (with the wall
    // time then): true when it did work the turn must not be charged for.
    std::function<bool(std::chrono::steady_clock::time_point)> turnStarts;
    // On the watchdog's thread, without its lock, at each tick of a turn that has gone on for
    // kTurnGoesOn: what the executor thread holds for the end of its pass may not wait for it.
    std::function<void()> turnGoesOn;
  };
  static constexpr std::chrono::milliseconds kTurnGoesOn{1};
  // Watches the CPU clock of the constructing thread; publishes its turns in `status` (null: in
  // a record of its own nobody reads).
  explicit Watchdog(ThreadStatus* status = nullptr,
                    std::chrono::milliseconds tick = std::chrono::milliseconds(10),
                    Hooks hooks = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts a turn in `isolate` that may use `cpuBudget` of CPU time before it is terminated;
  // `app` (an appTag, 0 for none) is published as whose turn it is. Returns the thread's CPU
  // time at the start: a read of the CPU clock is a system call, and one serves the caller's
  // accounting too.
  //
  // Turns that follow each other closely (a pass of short requests) read the clock at most once
  // per kCpuReadEvery of wall time, since a thread's CPU time cannot grow faster than wall time:
  // a turn that starts within kCpuReadReuse after the last one ended starts from that turn's
  // end, and a turn shorter than kCpuReadReuse ends at its start plus its wall time. Between two
  // reads the charges add up to the thread's CPU time (its work between the turns included),
  // but one turn may be charged up to kCpuReadEvery more or less than it used (the wall time of
  // the short turns before it, beyond their CPU time, or the work between them): its budget ends
  // at most that much early or late.
  std::chrono::nanoseconds arm(std::chrono::nanoseconds cpuBudget, IsolateOwner& isolate,
                               std::uint64_t app = 0);
  // Ends the turn; no termination reaches its isolate after this returns. True when the
  // watchdog terminated it; the caller must then CancelTerminateExecution (a termination
  // requested just after the JavaScript returned would otherwise hit the next turn).
  // `cpuUsed`, when given, gets the CPU time the turn used (0 when none was armed).
  bool disarm(std::chrono::nanoseconds* cpuUsed = nullptr);

  static constexpr std::chrono::microseconds kCpuReadReuse{20};
  static constexpr std::chrono::milliseconds kCpuReadEvery{1};
  // How many times the thread's CPU clock was read (executor thread only; for tests).
  std::uint64_t cpuReads() const { return cpuReads_; }

 private:
  std::chrono::nanoseconds cpuNow() const;  // the watched thread's CPU time, from any thread
  // The CPU time at the start of a turn starting at `wallNow`, and at the end of the armed turn
  // ending then (executor thread; see arm()).
  std::chrono::nanoseconds turnStartCpu(std::chrono::steady_clock::time_point wallNow);
  std::chrono::nanoseconds turnEndCpu(std::chrono::steady_clock::time_point wallNow);
  // The thread's CPU clock, read now (at `wallNow`).
  std::chrono::nanoseconds readCpu(std::chrono::steady_clock::time_point wallNow);
  void run();

  clockid_t cpuClock_{};
  const std::chrono::milliseconds tick_;
  const Hooks hooks_;
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
  std::chrono::steady_clock::time_point lastReadWall_{};  // of the last read of the CPU clock
  std::uint64_t cpuReads_ = 0;

  std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace isolane

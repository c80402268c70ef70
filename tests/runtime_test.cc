// The V8 glue: an isolate owner's thread rule, termination from another thread (the watchdog's
// only move), and recovery afterwards.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "runtime/isolate_owner.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "util/clock.h"
#include "worker/watchdog.h"

namespace isolane {
namespace {

v8::Global<v8::Context> newContext(IsolateOwner& owner) {
  v8::Isolate::Scope scope(owner.isolate());
  v8::HandleScope handles(owner.isolate());
  return v8::Global<v8::Context>(owner.isolate(), v8::Context::New(owner.isolate()));
}

// Runs `source`; returns its string value, or "threw: ..." / "terminated".
std::string run(IsolateOwner& owner, const v8::Global<v8::Context>& context, const char* source) {
  JsScope js(owner, context);
  v8::TryCatch tryCatch(js.isolate());
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> result;
  if (!v8::Script::Compile(js.context(), js.str(source)).ToLocal(&script) ||
      !script->Run(js.context()).ToLocal(&result)) {
    if (tryCatch.HasTerminated()) {
      js.isolate()->CancelTerminateExecution();
      return "terminated";
    }
    return "threw: " + describeException(js, tryCatch);
  }
  return toUtf8(js, result);
}

TEST(IsolateOwner, RunsJavaScript) {
  IsolateOwner owner(IsolateLimits{});
  auto context = newContext(owner);
  EXPECT_EQ(run(owner, context, "[1, 2, 3].map((x) => x * 2).join()"), "2,4,6");
  EXPECT_EQ(run(owner, context, "new Intl.NumberFormat('en-US').format(1234.5)"), "1,234.5");
}

TEST(IsolateOwner, TerminationFromAnotherThreadStopsALoopAndTheIsolateStaysUsable) {
  IsolateOwner owner(IsolateLimits{});
  auto context = newContext(owner);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    owner.terminate();
  });
  EXPECT_EQ(run(owner, context, "for (;;) {}"), "terminated");
  killer.join();
  EXPECT_EQ(run(owner, context, "'alive'"), "alive");
}

TEST(IsolateOwner, HeapLimitTerminatesInsteadOfAborting) {
  IsolateOwner owner(IsolateLimits{32, 64});
  auto context = newContext(owner);
  EXPECT_EQ(run(owner, context, "const a = []; for (;;) a.push({x: a.length});"), "terminated");
  EXPECT_TRUE(owner.takeHeapLimitHit());
  EXPECT_FALSE(owner.takeHeapLimitHit());
  EXPECT_EQ(run(owner, context, "'alive'"), "alive");
}

TEST(Watchdog, TerminatesATurnPastItsCpuBudget) {
  IsolateOwner owner(IsolateLimits{});
  auto context = newContext(owner);
  ThreadStatus status;
  Watchdog watchdog(&status);
  EXPECT_EQ(status.turnSinceNs, 0);
  watchdog.arm(std::chrono::milliseconds(100), owner);
  EXPECT_GT(status.turnSinceNs, 0);  // published: the master reads it on the status page
  EXPECT_EQ(run(owner, context, "for (;;) {}"), "terminated");
  EXPECT_TRUE(watchdog.disarm());
  EXPECT_EQ(status.turnSinceNs, 0);
  EXPECT_GE(status.cpuNs, 90'000'000u);  // the turn's CPU, counted
  owner.isolate()->CancelTerminateExecution();

  watchdog.arm(std::chrono::milliseconds(5000), owner);
  EXPECT_EQ(run(owner, context, "'quick'"), "quick");
  EXPECT_FALSE(watchdog.disarm());
}

TEST(Watchdog, CountsCpuNotWallTime) {
  IsolateOwner owner(IsolateLimits{});
  Watchdog watchdog;
  watchdog.arm(std::chrono::milliseconds(50), owner);
  // Sleeping uses no CPU: the budget is not spent.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(watchdog.disarm());
}

// Spins until the thread has used `cpu` more CPU time.
void burnCpu(std::chrono::nanoseconds cpu) {
  std::chrono::nanoseconds until = threadCpuTime() + cpu;
  while (threadCpuTime() < until) {
  }
}

// A read of the CPU clock is a system call; a turn that starts right after another ended starts
// from that end instead. It is charged what it used, but for the wall time of the empty turn
// before it beyond its CPU time (an empty turn ends at its start plus its wall time, under
// kCpuReadReuse: a preemption inside it costs the next turn up to that).
TEST(Watchdog, ATurnRightAfterAnotherStartsFromItsEnd) {
  IsolateOwner owner(IsolateLimits{});
  Watchdog watchdog;
  int reused = 0;
  for (int i = 0; i < 100; ++i) {
    std::chrono::nanoseconds start = watchdog.arm(std::chrono::seconds(5), owner);
    burnCpu(std::chrono::microseconds(100));
    std::chrono::nanoseconds used{0};
    watchdog.disarm(&used);
    EXPECT_GE(used, std::chrono::microseconds(100) - Watchdog::kCpuReadReuse);  // what it burnt
    std::chrono::nanoseconds next = watchdog.arm(std::chrono::seconds(5), owner);
    watchdog.disarm();
    EXPECT_GE(next, start + used);  // the clock never goes back
    reused += next == start + used;
  }
  // Back to back, nearly all of them (a preemption between two may take longer than the reuse).
  EXPECT_GT(reused, 50);

  // CPU used between two turns further apart than kCpuReadReuse is nobody's: the clock is read.
  std::chrono::nanoseconds start = watchdog.arm(std::chrono::seconds(5), owner);
  std::chrono::nanoseconds used{0};
  watchdog.disarm(&used);
  burnCpu(std::chrono::milliseconds(2));
  std::chrono::nanoseconds next = watchdog.arm(std::chrono::seconds(5), owner);
  watchdog.disarm();
  EXPECT_GE(next - (start + used), std::chrono::milliseconds(2));
}

// A turn that goes on is told to the hook at the watchdog's ticks (what the thread holds for the
// end of its pass leaves then); short turns are not.
TEST(Watchdog, ATurnThatGoesOnIsToldAtTheTicks) {
  IsolateOwner owner(IsolateLimits{});
  std::atomic<int> told{0};
  Watchdog::Hooks hooks;
  hooks.turnGoesOn = [&] { ++told; };
  Watchdog watchdog(nullptr, std::chrono::milliseconds(10), std::move(hooks));
  for (int i = 0; i < 100; ++i) {
    watchdog.arm(std::chrono::seconds(5), owner);
    watchdog.disarm();
  }
  EXPECT_EQ(told, 0);
  watchdog.arm(std::chrono::seconds(5), owner);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // wall time, at every tick
  watchdog.disarm();
  EXPECT_GE(told, 3);
  EXPECT_LE(told, 12);
}

// A pass of short turns back to back reads the CPU clock about once per kCpuReadEvery, not once
// per turn, and charges the turns no more than the wall time they took, nor much less than the
// CPU time the thread used: what it spends between two turns is charged to the next only when
// that turn starts within kCpuReadReuse (on a loaded machine the OS stretches some gaps past it:
// their CPU, the loop's own, is no turn's; a quarter of the whole was seen under ctest -j2).
TEST(Watchdog, ShortTurnsBackToBackReadTheCpuClockOncePerMillisecond) {
  IsolateOwner owner(IsolateLimits{});
  ThreadStatus status;
  Watchdog watchdog(&status);
  std::uint64_t readsBefore = watchdog.cpuReads();
  auto wallStart = std::chrono::steady_clock::now();
  std::chrono::nanoseconds cpuStart = threadCpuTime();
  constexpr int kTurns = 200'000;
  for (int i = 0; i < kTurns; ++i) {
    watchdog.arm(std::chrono::seconds(5), owner);
    watchdog.disarm();
  }
  auto wall = std::chrono::steady_clock::now() - wallStart;
  std::chrono::nanoseconds cpu = threadCpuTime() - cpuStart;
  std::uint64_t reads = watchdog.cpuReads() - readsBefore;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall).count();
  EXPECT_LE(reads, static_cast<std::uint64_t>(2 * ms + 10)) << kTurns << " turns in " << ms << " ms";
  std::chrono::nanoseconds charged(status.cpuNs.load());
  EXPECT_LE(charged, wall);
  EXPECT_GE(charged, cpu / 2);
}

}  // namespace
}  // namespace isolane

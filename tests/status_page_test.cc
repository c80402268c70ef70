// The status page a worker's executor threads publish and the master reads (ipc/status_page.h):
// what the master makes of it, clamped whatever the worker wrote, and a page the worker cannot
// resize under the master's mapping.

#include "ipc/status_page.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>

#include "pool/heavy_apps.h"
#include "worker/delay_monitor.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using Time = std::chrono::steady_clock::time_point;

std::int64_t ns(Time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

TEST(StatusPage, APageNotYetPublishedSaysNothing) {
  StatusPage page;
  page.threads = 4;
  EXPECT_FALSE(readWorkerLoad(page, std::chrono::steady_clock::now(), 50ms).published);
  page.magic.store(StatusPage::kMagic);
  EXPECT_EQ(readWorkerLoad(page, std::chrono::steady_clock::now(), 50ms).longestPass, 0ms)
      << "every thread waits";
}

TEST(StatusPage, ThreadsInALongTurnAreWedged) {
  StatusPage page;
  page.threads = 3;
  Time now = std::chrono::steady_clock::now();
  page.thread[0].turnSinceNs = ns(now - 200ms);  // wedged
  page.thread[1].turnSinceNs = ns(now - 10ms);   // a short turn
  page.thread[2].turnSinceNs = 0;                // between turns
  page.thread[0].passSinceNs = ns(now - 300ms);  // working since it woke, 300 ms ago
  page.thread[1].passSinceNs = ns(now - 10ms);
  page.thread[0].pending = 5;
  page.thread[1].pending = 2;
  page.thread[2].cpuNs = 7;
  page.magic.store(StatusPage::kMagic);
  WorkerLoad load = readWorkerLoad(page, now, 50ms);
  EXPECT_TRUE(load.published);
  EXPECT_EQ(load.threads, 3u);
  EXPECT_EQ(load.wedged, 1u);
  EXPECT_EQ(load.longestTurn, 200ms);
  EXPECT_EQ(load.longestPass, 300ms);
  EXPECT_EQ(load.pending, 7u);
  EXPECT_EQ(load.cpuNs, 7u);
}

TEST(StatusPage, WhatAWorkerWritesIsClamped) {
  StatusPage page;
  page.threads = 1'000'000;  // more threads than a page holds
  Time now = std::chrono::steady_clock::now();
  for (auto& t : page.thread) {
    t.turnSinceNs = ns(now + 1h);  // in the future: "just now", never negative
    t.passSinceNs = ns(now + 1h);
    t.pending = ~std::uint64_t{0};
    t.cpuNs = ~std::uint64_t{0};
  }
  page.magic.store(StatusPage::kMagic);
  WorkerLoad load = readWorkerLoad(page, now, 50ms);
  EXPECT_EQ(load.threads, StatusPage::kMaxThreads);
  EXPECT_EQ(load.wedged, 0u);
  EXPECT_EQ(load.longestTurn, 0ms);
  EXPECT_EQ(load.longestPass, 1ms);  // working, since just now
  EXPECT_EQ(load.pending, std::uint64_t{StatusPage::kMaxThreads} << 24);  // no overflow
  EXPECT_GT(load.cpuNs, 0u);
}

TEST(StatusPage, TheWorkerWritesWhatTheMasterReadsAndCannotResizeIt) {
  auto file = StatusPageFile::create();
  ASSERT_TRUE(file) << file.error();
  int childFd = dup(file.value()->fd());  // what the worker inherits
  ASSERT_GE(childFd, 0);
  int probe = dup(childFd);
  auto mapped = mapStatusPage(childFd);
  ASSERT_TRUE(mapped) << mapped.error();
  StatusPage* page = mapped.value();
  page->threads = 2;
  page->thread[1].turnSinceNs = ns(std::chrono::steady_clock::now() - 1s);
  page->magic.store(StatusPage::kMagic);
  WorkerLoad load = readWorkerLoad(file.value()->page(), std::chrono::steady_clock::now(), 50ms);
  EXPECT_TRUE(load.published);
  EXPECT_EQ(load.wedged, 1u);
  // Sealed: a worker that shrinks the page would make the master's next read fault.
  EXPECT_NE(ftruncate(probe, 0), 0);
  EXPECT_NE(ftruncate(probe, 1 << 20), 0);
  close(probe);
}

TEST(StatusPage, ADescriptorThatIsNotAPageIsRefused) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  auto mapped = mapStatusPage(fds[0]);
  EXPECT_FALSE(mapped);
  close(fds[1]);
}

TEST(DelayMonitor, ABurstThatDrainsIsNoStandingQueue) {
  ThreadStatus status;
  DelayMonitor monitor(status);
  Time t = std::chrono::steady_clock::now();
  monitor.started(0ms, t);  // the burst's first request got through at once
  // The rest waited longer and longer; at t + 100 ms the interval is over: its least wait is
  // published.
  for (int i = 1; i <= 10; ++i) monitor.started(std::chrono::milliseconds(30 * i), t + i * 10ms);
  EXPECT_EQ(status.standingDelayNs, 0);
  EXPECT_EQ(status.standingDelayAtNs, ns(t + 100ms));
}

TEST(DelayMonitor, RequestsThatAllWaitedMakeAStandingQueue) {
  ThreadStatus status;
  DelayMonitor monitor(status);
  Time t = std::chrono::steady_clock::now();
  for (int i = 0; i <= 12; ++i) monitor.started(std::chrono::milliseconds(80 + i), t + i * 10ms);
  EXPECT_EQ(status.standingDelayNs, std::chrono::nanoseconds(80ms).count());
  StatusPage page;
  page.threads = 1;
  page.thread[0].standingDelayNs = status.standingDelayNs.load();
  page.thread[0].standingDelayAtNs = status.standingDelayAtNs.load();
  page.magic.store(StatusPage::kMagic);
  EXPECT_EQ(readWorkerLoad(page, t + 120ms, 50ms).standingDelay, 80ms);
  // Nothing started since: after two intervals the figure is stale and counts as none.
  EXPECT_EQ(readWorkerLoad(page, t + 400ms, 50ms).standingDelay, 0ms);
}

// A neighbour's request started ahead of a flood's older ones (apps take turns) waited little:
// that says nothing of the flood's queue, which still stands.
TEST(DelayMonitor, ARequestStartedAheadOfOlderOnesDoesNotHideTheQueueBehindIt) {
  ThreadStatus status;
  DelayMonitor monitor(status);
  Time t = std::chrono::steady_clock::now();
  for (int i = 0; i <= 10; ++i) {
    if (i == 5) monitor.started(2ms, t + 49ms, /*inOrder=*/false);
    monitor.started(std::chrono::milliseconds(140 + i), t + i * 10ms);
  }
  EXPECT_EQ(status.standingDelayNs, std::chrono::nanoseconds(140ms).count());
  // An interval in which only requests ahead of others started: their least wait stands in.
  for (int i = 1; i <= 10; ++i) monitor.started(3ms, t + 100ms + i * 10ms, /*inOrder=*/false);
  EXPECT_EQ(status.standingDelayNs, std::chrono::nanoseconds(3ms).count());
}

TEST(StatusPage, AWorkerHasTheStandingDelayOfItsLeastDelayedThread) {
  StatusPage page;
  page.threads = 2;
  Time now = std::chrono::steady_clock::now();
  page.thread[0].standingDelayNs = std::chrono::nanoseconds(300ms).count();
  page.thread[0].standingDelayAtNs = ns(now);
  page.thread[1].standingDelayNs = std::chrono::nanoseconds(20ms).count();
  page.thread[1].standingDelayAtNs = ns(now);
  page.magic.store(StatusPage::kMagic);
  EXPECT_EQ(readWorkerLoad(page, now, 50ms).standingDelay, 20ms);
}

TEST(StatusPage, TheAppsOfWedgedThreadsAreHeavyForAWhileAsFarAsTheWorkerRunsThem) {
  StatusPage page;
  page.threads = 3;
  page.magic = StatusPage::kMagic;
  Time now = std::chrono::steady_clock::now();
  page.thread[0].turnSinceNs = ns(now - 200ms);
  page.thread[0].turnApp = appTag("flood");
  page.thread[1].turnSinceNs = ns(now - 200ms);
  page.thread[1].turnApp = appTag("elsewhere");  // an app of another group's workers
  page.thread[2].turnSinceNs = ns(now - 10ms);     // a short turn
  page.thread[2].turnApp = appTag("quick");
  HeavyApps heavy;
  heavy.setApps({"flood", "elsewhere", "quick"});
  heavy.observe(page, now, 50ms, [](const std::string& app) { return app != "elsewhere"; });
  EXPECT_TRUE(heavy.heavy("flood", now));
  EXPECT_FALSE(heavy.heavy("elsewhere", now)) << "a worker names only the apps it runs";
  EXPECT_FALSE(heavy.heavy("quick", now));
  EXPECT_TRUE(heavy.heavy("flood", now + HeavyApps::kMemory - 1ms));
  EXPECT_FALSE(heavy.heavy("flood", now + HeavyApps::kMemory)) << "it is forgotten";
  EXPECT_NE(appTag("a"), appTag("b"));
  EXPECT_NE(appTag(""), 0u);
}

TEST(StatusPage, AnIdleReserveThreadDoesNotHideAStandingQueue) {
  StatusPage page;
  page.threads = 2;
  page.reserve = 1;
  page.magic = StatusPage::kMagic;
  Time now = std::chrono::steady_clock::now();
  page.thread[0].standingDelayNs = ns(Time{} + 300ms);
  page.thread[0].standingDelayAtNs = ns(now);
  EXPECT_EQ(readWorkerLoad(page, now, 50ms).standingDelay, 300ms);
  page.reserve = 0;
  EXPECT_EQ(readWorkerLoad(page, now, 50ms).standingDelay, 0ms);
  page.reserve = 99;  // clamped: one thread at least counts
  EXPECT_EQ(readWorkerLoad(page, now, 50ms).standingDelay, 300ms);
}

}  // namespace
}  // namespace isolane

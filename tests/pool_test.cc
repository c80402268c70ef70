// The subprocess pool: real worker processes (and a fake one that misbehaves on purpose).
// Deaths in the middle of requests, admission at the cap, the wait queue, protocol violations,
// missed heartbeats, the crash budget on an injected clock, and a thousand respawns that leave
// no zombies and no descriptors behind.

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "e2e/ready_workers.h"
#include "eventually.h"
#include "manual_clock.h"
#include "pool_helpers.h"
#include "pool/crash_budget.h"
#include "pool/code_cache_store.h"
#include "pool/subprocess_backend.h"

namespace isolane {
namespace {

using test::eventually;

using namespace std::chrono_literals;
using test::waitForReadyWorkers;

const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

using test::call;
using test::fakeWorker;
using test::pidOf;
using test::realWorker;
PoolOptions options(std::vector<std::string> command, std::size_t size = 2) {
  return test::poolOptions(std::move(command), size);
}

TEST(CrashBudget, CooldownAfterTheBudgetIsSpent) {
  CrashBudget budget({3, 60s, 30s});
  SteadyTime t0{};
  EXPECT_EQ(budget.recordCrash(t0), t0);
  EXPECT_EQ(budget.recordCrash(t0 + 1s), t0 + 1s);
  EXPECT_EQ(budget.recordCrash(t0 + 2s), t0 + 2s + 30s);  // third in the window: rest
  EXPECT_EQ(budget.cooldowns(), 1);
  EXPECT_EQ(budget.recordCrash(t0 + 40s), t0 + 40s);  // a fresh window after the cooldown
}

TEST(CrashBudget, OldCrashesLeaveTheWindow) {
  CrashBudget budget({3, 60s, 30s});
  SteadyTime t0{};
  budget.recordCrash(t0);
  budget.recordCrash(t0 + 10s);
  EXPECT_EQ(budget.recordCrash(t0 + 65s), t0 + 65s);  // the first fell out of the window
  EXPECT_EQ(budget.recentCrashes(), 2);
}

class PoolTest : public ::testing::Test {
 protected:
  MetricsRegistry metrics_;
};

// POSTs: not replayed, so the requests of the dead worker fail as WORKER_CRASHED.
void killWorkerMidRequests(MetricsRegistry& metrics, int signal) {
  SubprocessBackend pool(options(realWorker()), metrics);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  waitForReadyWorkers(pool, 2);
  std::vector<std::future<AppResponse>> answers;
  for (int i = 0; i < 6; ++i) answers.push_back(call(pool, "slow", "/?ms=400", "POST"));
  // Least-loaded placement spreads them: three on each worker.
  ASSERT_TRUE(eventually([&] {
    auto w = pool.workers();
    return w[0].inFlight == 3 && w[1].inFlight == 3;
  }));
  pid_t victim = pidOf(pool, 0);
  ASSERT_GT(victim, 0);
  kill(victim, signal);

  int crashed = 0, done = 0;
  for (auto& a : answers) {
    AppResponse r = a.get();
    if (r.failure == FailureKind::kWorkerCrashed) {
      ++crashed;
      EXPECT_EQ(r.status, 502);
      EXPECT_TRUE(r.retryable());
      EXPECT_NE(r.failureDetail.find("worker 0"), std::string::npos) << r.failureDetail;
    } else {
      EXPECT_EQ(r.body, "done") << failureCode(r.failure) << " " << r.failureDetail;
      ++done;
    }
  }
  EXPECT_EQ(crashed, 3);
  EXPECT_EQ(done, 3);
  // The slot comes back with a new process, and serves.
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != victim; }));
  EXPECT_EQ(call(pool, "slow", "/?ms=1").get().body, "done");
  std::string text = metrics.render();
  EXPECT_NE(text.find("isolane_worker_crashes_total{slot=\"0\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("isolane_worker_respawns_total 1"), std::string::npos) << text;
  EXPECT_EQ(pool.inFlight(), 0u);
}

TEST_F(PoolTest, SigkillMidRequestsFailsOnlyThatWorkersRequests) {
  killWorkerMidRequests(metrics_, SIGKILL);
}

TEST_F(PoolTest, SigsegvMidRequestsFailsOnlyThatWorkersRequests) {
  killWorkerMidRequests(metrics_, SIGSEGV);
}

TEST_F(PoolTest, AtTheCapShedsAtOnceAndLosesNoAdmittedRequest) {
  PoolOptions o = options(realWorker());
  o.maxInflight = 4;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  std::vector<std::future<AppResponse>> admitted;
  for (int i = 0; i < 4; ++i) admitted.push_back(call(pool, "slow", "/?ms=300"));
  auto t0 = std::chrono::steady_clock::now();
  AppResponse shed = call(pool, "slow", "/").get();
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(shed.failure, FailureKind::kOverloaded);
  EXPECT_EQ(shed.status, 503);
  EXPECT_EQ(shed.shedReason, "queue-full");
  EXPECT_LT(took, 50ms) << "a shed answer comes at once, not after the running requests";
  for (auto& a : admitted) EXPECT_EQ(a.get().body, "done");
  EXPECT_NE(metrics_.render().find("isolane_admission_rejected_total{reason=\"queue-full\"} 1"),
            std::string::npos);
}

TEST_F(PoolTest, StartReturnsOnceOneWorkerIsReadyAndTheOthersJoinLater) {
  SubprocessBackend pool(options(fakeWorker("slow-slot1")), metrics_);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "start waited for the slow worker";
  EXPECT_EQ(pool.readyWorkers(), 1u);
  EXPECT_EQ(call(pool, "x", "/").get().body, "fake");
  waitForReadyWorkers(pool, 2);
}

TEST_F(PoolTest, WithNoWorkerReadyARequestWaitsForOneStartingInsteadOfFailing) {
  PoolOptions o = options(realWorker(), 1);
  o.queueTimeout = 10s;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  kill(pidOf(pool, 0), SIGKILL);
  ASSERT_TRUE(eventually([&] { return pool.readyWorkers() == 0; }));
  // max_queue is 0: before, this was shed at once as "no-worker".
  AppResponse r = call(pool, "slow", "/?ms=1").get();
  EXPECT_EQ(r.body, "done") << r.shedReason << " " << r.failureDetail;
}

TEST_F(PoolTest, PerWorkerCapSpreadsThenSheds) {
  PoolOptions o = options(realWorker());
  o.workerMaxInflight = 1;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  waitForReadyWorkers(pool, 2);
  auto a = call(pool, "slow", "/?ms=300");
  auto b = call(pool, "slow", "/?ms=300");
  AppResponse c = call(pool, "slow", "/").get();
  EXPECT_EQ(c.shedReason, "worker-full");
  EXPECT_EQ(a.get().body, "done");
  EXPECT_EQ(b.get().body, "done");
}

TEST_F(PoolTest, QueuedRequestRunsWhenRoomFrees) {
  PoolOptions o = options(realWorker(), 1);
  o.maxInflight = 1;
  o.maxQueue = 1;
  o.queueTimeout = 5s;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  auto first = call(pool, "slow", "/?ms=200");
  auto queued = call(pool, "slow", "/?ms=1");
  AppResponse over = call(pool, "slow", "/").get();  // the queue holds one
  EXPECT_EQ(over.shedReason, "queue-full");
  EXPECT_EQ(first.get().body, "done");
  EXPECT_EQ(queued.get().body, "done");
}

TEST_F(PoolTest, QueuedRequestPastItsWaitIsShed) {
  PoolOptions o = options(realWorker(), 1);
  o.maxInflight = 1;
  o.maxQueue = 4;
  o.queueTimeout = 100ms;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  auto running = call(pool, "slow", "/?ms=1500");
  AppResponse waited = call(pool, "slow", "/").get();
  EXPECT_EQ(waited.failure, FailureKind::kOverloaded);
  EXPECT_EQ(waited.shedReason, "queue-timeout");
  EXPECT_EQ(running.get().body, "done");
}

TEST_F(PoolTest, AQueuedRequestWhoseClientLeftLeavesTheQueueUnrun) {
  PoolOptions o = options(realWorker(), 1);
  o.maxInflight = 1;
  o.maxQueue = 4;
  o.queueTimeout = 5s;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start(
      {AppSpec{"slow", kApps + "slow.js", {}}, AppSpec{"counter", kApps + "counter.js", {}}}));
  auto running = call(pool, "slow", "/?ms=300");
  auto promise = std::make_shared<std::promise<AppResponse>>();
  auto gone = promise->get_future();
  std::uint64_t handle =
      pool.submit(AppRequest{"counter", "t", "GET", "http://test/", {}, ""},
                  [promise](AppResponse r) { promise->set_value(std::move(r)); });
  ASSERT_NE(handle, 0u) << "a queued request has a handle to cancel it by";
  pool.cancel(handle);
  ASSERT_EQ(gone.wait_for(1s), std::future_status::ready) << "answered at once, not after 300 ms";
  EXPECT_EQ(gone.get().failure, FailureKind::kClientGone);
  EXPECT_EQ(running.get().body, "done");
  // It never ran: the app's first request is this one.
  EXPECT_EQ(call(pool, "counter", "/").get().body, R"({"count":1,"shared":1})");
}

// Spin 0 burns CPU for seconds in one turn on worker 0; worker 1 holds two requests that await a
// timer. By counts alone a new request goes to worker 0 (1 in flight against 2) and waits for the
// spin; the status page says worker 0 is wedged, so it goes to worker 1 and is answered at once.
TEST_F(PoolTest, NewRequestsGoAroundAWorkerInsideALongTurn) {
  SubprocessBackend pool(options(realWorker()), metrics_);
  ASSERT_TRUE(
      pool.start({AppSpec{"spin", kApps + "spin.js", {}}, AppSpec{"slow", kApps + "slow.js", {}},
                  AppSpec{"counter", kApps + "counter.js", {}}}));
  waitForReadyWorkers(pool, 2);
  auto spin = call(pool, "spin", "/?ms=1800");
  ASSERT_TRUE(eventually([&] { return pool.workers()[0].wedgedThreads == 1; }))
      << "the spin should be on worker 0, inside its turn";
  auto slow1 = call(pool, "slow", "/?ms=1000");
  auto slow2 = call(pool, "slow", "/?ms=1000");  // a tie on counts: worker 0 but for the page
  ASSERT_TRUE(eventually([&] { return pool.workers()[1].inFlight == 2; }))
      << pool.workers()[0].inFlight << " on worker 0";
  auto counter = call(pool, "counter", "/");
  ASSERT_EQ(counter.wait_for(1500ms), std::future_status::ready) << "it waited for the spin";
  EXPECT_EQ(counter.get().status, 200);
  EXPECT_NE(spin.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(spin.get().body, "true");
  EXPECT_EQ(slow1.get().body, "done");
  EXPECT_EQ(slow2.get().body, "done");
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_schedule_decisions_total{reason=\"avoided-wedged\"} 2"),
            std::string::npos)
      << text;
}

// A GET placed on worker 0 just before its spin became a long turn waits there unstarted: the
// supervisor asks worker 0 to give it back and sends it to worker 1, where it is answered long
// before the spin ends.
TEST_F(PoolTest, ARequestQueuedBehindAWedgedTurnIsMovedToAFreeWorker) {
  SubprocessBackend pool(options(realWorker()), metrics_);
  ASSERT_TRUE(
      pool.start({AppSpec{"spin", kApps + "spin.js", {}}, AppSpec{"slow", kApps + "slow.js", {}}}));
  waitForReadyWorkers(pool, 2);
  auto spin = call(pool, "spin", "/?ms=1800");   // worker 0
  auto first = call(pool, "slow", "/?ms=300");   // worker 1 (0 against 1)
  auto behind = call(pool, "slow", "/?ms=300");  // worker 0 (a tie), behind the spin
  ASSERT_EQ(behind.wait_for(1500ms), std::future_status::ready) << "it waited for the spin";
  EXPECT_EQ(behind.get().body, "done");
  EXPECT_NE(spin.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(first.get().body, "done");
  EXPECT_EQ(spin.get().body, "true");
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_schedule_decisions_total{reason=\"moved\"} 1"), std::string::npos)
      << text;
}

// One worker, wedged: a request waits in the queue for its turn to end (even with max_queue 0)
// instead of being placed behind it or shed.
TEST_F(PoolTest, WithEveryWorkerWedgedARequestWaitsForOneToComeFree) {
  PoolOptions o = options(realWorker(), 1);
  o.queueTimeout = 5s;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start(
      {AppSpec{"spin", kApps + "spin.js", {}}, AppSpec{"counter", kApps + "counter.js", {}}}));
  auto spin = call(pool, "spin", "/?ms=600");
  ASSERT_TRUE(eventually([&] { return pool.workers()[0].wedgedThreads == 1; }));
  auto counter = call(pool, "counter", "/");
  EXPECT_EQ(spin.get().body, "true");
  AppResponse r = counter.get();
  EXPECT_EQ(r.status, 200) << failureCode(r.failure) << " " << r.failureDetail;
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_schedule_decisions_total{reason=\"all-wedged\"} 1"),
            std::string::npos)
      << text;
}

// The per-worker figures are exact: 32 requests in flight on one worker read 32, in the master's
// count and in what the worker's threads say they hold.
TEST_F(PoolTest, PerWorkerFiguresCountEveryRequestInFlight) {
  SubprocessBackend pool(options(realWorker(), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  std::vector<std::future<AppResponse>> answers;
  // Long enough that none is answered before the figures are read, on a slow machine too.
  for (int i = 0; i < 32; ++i) answers.push_back(call(pool, "slow", "/?ms=3000"));
  ASSERT_TRUE(eventually([&] { return pool.workers()[0].pending == 32; }))
      << pool.workers()[0].pending;
  EXPECT_EQ(pool.workers()[0].inFlight, 32u);
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_worker_inflight{slot=\"0\"} 32"), std::string::npos) << text;
  EXPECT_NE(text.find("isolane_worker_pending{slot=\"0\"} 32"), std::string::npos) << text;
  for (auto& a : answers) EXPECT_EQ(a.get().body, "done");
  EXPECT_TRUE(eventually([&] { return pool.workers()[0].pending == 0; }));
}

TEST_F(PoolTest, AWorkerThatCannotStartIsAClearError) {
  SubprocessBackend pool(options({"/nonexistent/isolane"}, 1), metrics_);
  Status s = pool.start({AppSpec{"hello", kApps + "hello.js", {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("/nonexistent/isolane"), std::string::npos) << s.error();
}

TEST_F(PoolTest, GetsOfADeadWorkerAreReplayedOnceOnAnother) {
  SubprocessBackend pool(options(realWorker()), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  waitForReadyWorkers(pool, 2);
  std::vector<std::future<AppResponse>> answers;
  for (int i = 0; i < 6; ++i) answers.push_back(call(pool, "slow", "/?ms=400"));
  ASSERT_TRUE(eventually([&] {
    auto w = pool.workers();
    return w[0].inFlight == 3 && w[1].inFlight == 3;
  }));
  kill(pidOf(pool, 0), SIGKILL);
  // The client of each sees the app's answer, not the crash.
  for (auto& a : answers) {
    AppResponse r = a.get();
    EXPECT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
    EXPECT_EQ(r.body, "done");
  }
  EXPECT_NE(metrics_.render().find("isolane_requests_replayed_total 3"), std::string::npos)
      << metrics_.render();
}

TEST_F(PoolTest, AnAppThatFailsToLoadStopsTheStartNamingFileAndLine) {
  SubprocessBackend pool(options(realWorker(), 1), metrics_);
  Status s = pool.start({AppSpec{"broken", kApps + "syntax_error.js", {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("syntax_error.js:3"), std::string::npos) << s.error();
}

void expectReplacedAfterViolation(MetricsRegistry& metrics, const std::string& mode,
                                  const std::string& expected) {
  SubprocessBackend pool(options(fakeWorker(mode), 1), metrics);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t first = pidOf(pool, 0);
  AppResponse r = call(pool, "x", "/").get();
  EXPECT_EQ(r.failure, FailureKind::kWorkerCrashed) << mode;
  EXPECT_NE(r.failureDetail.find(expected), std::string::npos) << mode << ": " << r.failureDetail;
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != first; }))
      << "the slot is refilled after " << mode;
}

TEST_F(PoolTest, MalformedFrameEndsTheWorkerAndTheMasterGoesOn) {
  expectReplacedAfterViolation(metrics_, "garbage", "malformed frame");
}

// Every executor thread's socket is read and checked alike: bytes that are not a frame on the
// second end the worker as they do on the first.
TEST_F(PoolTest, AMalformedFrameOnAnotherThreadsSocketEndsTheWorker) {
  PoolOptions o = options(fakeWorker("garbage-on-thread1"), 1);
  o.executorThreads = 2;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t first = pidOf(pool, 0);
  AppResponse r = call(pool, "x", "/").get();
  EXPECT_EQ(r.failure, FailureKind::kWorkerCrashed);
  EXPECT_NE(r.failureDetail.find("malformed frame"), std::string::npos) << r.failureDetail;
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != first; }));
}

TEST_F(PoolTest, OversizedFrameIsNamedWithItsSize) {
  expectReplacedAfterViolation(metrics_, "oversize", "frame of 2147483647 bytes exceeds");
}

TEST_F(PoolTest, AMessageLengthThatIsNotAMultipleOfEightEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "misaligned", "not a multiple of 8");
}

// Only the messages that carry a body have a trailer: bytes smuggled behind another are refused.
TEST_F(PoolTest, ATrailerOnAMessageThatTakesNoneEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "trailer-on-end", "on a End frame, which carries none");
}

// Checked before the master copies it: a chunk over 256 KiB is not the wire's.
TEST_F(PoolTest, ABodyChunkOverTheWiresBoundEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "oversized-chunk", "a body chunk of 307200 bytes");
}

TEST_F(PoolTest, FrameForAnUnknownRequestEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "unknown-id", "for unknown request");
}

TEST_F(PoolTest, AWholeAnswerInItsHeadFrameReachesItsClient) {
  SubprocessBackend pool(options(fakeWorker("whole"), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  for (int i = 0; i < 3; ++i) {  // and the request is forgotten: the next ones are answered too
    auto answer = call(pool, "x", "/");
    ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    AppResponse r = answer.get();
    EXPECT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "fake whole");
  }
  EXPECT_EQ(pool.workers()[0].inFlight, 0u);
}

// A complete head is the whole answer: an End for the same request after it is one for a request
// the worker no longer has. The client keeps the answer it got; the worker is replaced.
TEST_F(PoolTest, AnEndAfterACompleteHeadEndsTheWorkerAndTheAnswerStands) {
  SubprocessBackend pool(options(fakeWorker("whole-then-end"), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t first = pidOf(pool, 0);
  auto answer = call(pool, "x", "/");
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  AppResponse r = answer.get();
  EXPECT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
  EXPECT_EQ(r.body, "fake whole");
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != first; }))
      << "the slot is refilled after the End of an answered request";
}

TEST_F(PoolTest, ACompleteHeadThatSaysItStreamsEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "whole-streamed", "complete response head that says");
}

TEST_F(PoolTest, ABodyInAHeadThatIsNotCompleteEndsTheWorker) {
  expectReplacedAfterViolation(metrics_, "head-with-body", "a body in an incomplete head");
}

// The fake worker sends both Hellos before it reads its apps, and then answers them at once: the
// master must not take the answers of a worker it is killing (before, it sometimes went ready).
TEST_F(PoolTest, ASecondHelloIsAViolation) {
  PoolOptions o = options(fakeWorker("two-hellos"), 1);
  o.spawnTimeout = 2s;
  SubprocessBackend pool(o, metrics_);
  Status s = pool.start({AppSpec{"x", "/x.js", {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("a second Hello"), std::string::npos) << s.error();
}

TEST_F(PoolTest, ACodeCacheAWorkerSendsCannotNameAPathOutsideTheStore) {
  std::string dir = testing::TempDir() + "/pool-cache-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::remove("/tmp/isolane-smuggled.v8cache");
  PoolOptions o = options(fakeWorker("cache-path"), 1);
  o.codeCacheDir = dir;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  EXPECT_EQ(call(pool, "x", "/").get().body, "fake");
  EXPECT_FALSE(std::filesystem::exists("/tmp/isolane-smuggled.v8cache"));
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing was stored";
  EXPECT_EQ(metrics_.render().find("isolane_code_cache_stored_total 1"), std::string::npos);
}

// A worker's code cache is stored only for the hash the master offered for that app, and only
// from the app it loaded first (before any other app's code ran in it): a worker that one app
// compromised cannot hand the master another app's cache.
TEST_F(PoolTest, OnlyTheFirstAppAWorkerLoadedMayLeaveItsCodeCache) {
  std::string dir = testing::TempDir() + "/pool-forge-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  PoolOptions o = options(fakeWorker("cache-forge"), 1);
  o.codeCacheDir = dir;
  SubprocessBackend pool(o, metrics_);
  std::string apps = ISOLANE_TEST_FIXTURES "/apps/";
  ASSERT_TRUE(pool.start({AppSpec{"hello", apps + "hello.js", {}},
                          AppSpec{"echo", apps + "echo.js", {}}}));
  EXPECT_EQ(call(pool, "hello", "/").get().body, "fake");
  // What the two loads said of their caches is taken in by the supervisor, off the reactor.
  ASSERT_TRUE(eventually([&] {
    const std::string line = "\nisolane_code_cache_loads_total{result=\"none\"} ";
    std::string t = metrics_.render();
    auto at = t.find(line);
    return at != std::string::npos && std::stoi(t.substr(at + line.size())) == 2;
  })) << metrics_.render();
  std::vector<std::string> stored;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".v8cache") stored.push_back(e.path().stem().string());
  }
  ASSERT_EQ(stored.size(), 1u) << "a cache from a load that was not the worker's first was kept";
  std::string hello = CodeCacheStore::fileSha256(apps + "hello.js");
  std::string echo = CodeCacheStore::fileSha256(apps + "echo.js");
  EXPECT_TRUE(stored[0] == hello || stored[0] == echo) << stored[0];
  std::filesystem::remove_all(dir);
}

// Each load is answered once: a second answer (or one for an app it was not loading) is a
// protocol violation, and the worker goes.
TEST_F(PoolTest, ALoadAnsweredTwiceIsAViolation) {
  PoolOptions o = options(fakeWorker("load-twice"), 1);
  o.spawnTimeout = 2s;
  SubprocessBackend pool(o, metrics_);
  Status s = pool.start({AppSpec{"x", "/x.js", {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("AppLoaded for an app it was not loading"), std::string::npos)
      << s.error();
}

// An app of its own process (process = "own") runs in workers that load it alone, and the
// shared workers do not load it: a shared worker that asks the master to fetch on its behalf
// (as one taken over by another app would) is killed, while its own worker may.
TEST_F(PoolTest, OnlyAnAppsOwnWorkersMayFetchForItAndTheSharedOnesDoNotLoadIt) {
  PoolOptions o = options(fakeWorker("fetch-as-b"), 1);
  o.ownApps = {{"b", 1}};
  o.spawnTimeout = 2s;
  SubprocessBackend pool(o, metrics_);
  Status s = pool.start({AppSpec{"a", "/a.js", {}}, AppSpec{"b", "/b.js", {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("worker 0"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("FetchCall for an app it does not run"), std::string::npos)
      << s.error();
}

TEST_F(PoolTest, AnAppOfItsOwnProcessHasWorkersOfItsOwn) {
  PoolOptions o = options(fakeWorker("echo-slot"), 2);
  o.ownApps = {{"b", 1}};
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"a", "/a.js", {}}, AppSpec{"b", "/b.js", {}}}));
  test::waitForReadyWorkers(pool, 3);
  EXPECT_EQ(pool.workers().size(), 3u);
  for (int i = 0; i < 6; ++i) {
    std::string a = call(pool, "a", "/").get().body;
    EXPECT_TRUE(a == "slot 0" || a == "slot 1") << a;
    EXPECT_EQ(call(pool, "b", "/").get().body, "slot 2");
  }
}

TEST_F(PoolTest, MissedHeartbeatIsADeath) {
  PoolOptions o = options(fakeWorker("mute"), 1);
  o.heartbeatInterval = 20ms;
  o.heartbeatTimeout = 100ms;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t first = pidOf(pool, 0);
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != first; }));
  EXPECT_NE(metrics_.render().find("isolane_worker_crashes_total{slot=\"0\"}"), std::string::npos);
}

using test::ManualClock;

// Two slots whose workers die at once, every time: the first to spend its budget rests for the
// cooldown; the second, the last of its lane, comes back after a backoff instead, so the server
// is never left with every slot resting.
TEST_F(PoolTest, CrashBudgetCooldownAndTheFloorOnAnInjectedClock) {
  ManualClock clock;
  PoolOptions o = options(fakeWorker("exit"), 2);
  o.crashBudget = {5, 60s, 60s};
  SubprocessBackend pool(o, metrics_, clock, SubprocessBackend::Supervision::kManual);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));  // spawns both; they exit at once
  auto spawned = [&] {
    std::string t = metrics_.render();
    auto at = t.find("\nisolane_worker_spawns_total ");
    return at == std::string::npos ? 0 : std::stoi(t.substr(at + 29));
  };
  auto bothDead = [&] {
    auto w = pool.workers();
    return w[0].state == WorkerState::kResting && w[1].state == WorkerState::kResting;
  };
  for (int crash = 1; crash <= 5; ++crash) {
    ASSERT_TRUE(eventually(bothDead)) << "crash " << crash;
    if (crash < 5) pool.superviseOnce();  // respawns at once while the budget lasts
  }
  ASSERT_TRUE(eventually([&] {
    auto w = pool.workers();
    return w[0].coolingDown && w[1].coolingDown;
  }));
  EXPECT_EQ(spawned(), 10);
  std::string text = metrics_.render();
  auto count = [&](const std::string& family) {
    int n = 0;
    for (std::size_t at = text.find("\n" + family + "{"); at != std::string::npos;
         at = text.find("\n" + family + "{", at + 1)) {
      n += std::stoi(text.substr(text.find("} ", at) + 2));
    }
    return n;
  };
  EXPECT_EQ(count("isolane_slot_cooldowns_total"), 1) << text;
  EXPECT_EQ(count("isolane_slot_backoffs_total"), 1) << text;
  pool.superviseOnce();
  EXPECT_EQ(spawned(), 10) << "no respawn before the backoff is over";
  clock.advance(600ms);
  pool.superviseOnce();
  EXPECT_EQ(spawned(), 11) << "the last slot of the lane came back after 500 ms";
  clock.advance(60s);
  ASSERT_TRUE(eventually(bothDead));
  pool.superviseOnce();
  EXPECT_EQ(spawned(), 13) << "and the other once its cooldown is over";
}

// A slot whose worker was killed is quarantined, across its respawn: requests go to the other
// worker even when it has more in flight, and to the quarantined one only when the other is full.
TEST_F(PoolTest, AKilledWorkersSlotIsUsedOnlyWhenNoOtherCanBe) {
  PoolOptions o = options(realWorker());
  o.workerMaxInflight = 3;
  SubprocessBackend pool(o, metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"slow", kApps + "slow.js", {}}}));
  waitForReadyWorkers(pool, 2);
  pid_t victim = pidOf(pool, 0);
  kill(victim, SIGKILL);
  ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0 && pidOf(pool, 0) != victim; }));
  EXPECT_TRUE(pool.workers()[0].quarantined);
  std::vector<std::future<AppResponse>> answers;
  for (int i = 0; i < 3; ++i) answers.push_back(call(pool, "slow", "/?ms=2000"));
  EXPECT_TRUE(eventually([&] { return pool.workers()[1].inFlight == 3; }));
  EXPECT_EQ(pool.workers()[0].inFlight, 0u);
  answers.push_back(call(pool, "slow", "/?ms=500"));  // worker 1 is full: the fallback
  EXPECT_TRUE(eventually([&] { return pool.workers()[0].inFlight == 1; }));
  for (auto& a : answers) EXPECT_EQ(a.get().body, "done");
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_schedule_decisions_total{reason=\"quarantine-fallback\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("isolane_slot_quarantines_total{slot=\"0\"} 1"), std::string::npos);
  EXPECT_NE(text.find("isolane_worker_quarantined{slot=\"0\"} 1"), std::string::npos);
}

int openDescriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

int zombieChildren() {
  int zombies = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    std::sscanf(line.c_str() + close + 2, "%c %d", &state, &ppid);
    if (ppid == getpid() && state == 'Z') ++zombies;
  }
  closedir(d);
  return zombies;
}

TEST_F(PoolTest, AThousandRespawnsLeaveNoZombiesAndNoDescriptors) {
  int fdsBefore = openDescriptors();
  {
    PoolOptions o = options(fakeWorker("echo"), 1);
    o.crashBudget = {1'000'000, 60s, 60s};
    SubprocessBackend pool(o, metrics_);
    ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
    for (int i = 0; i < 1000; ++i) {
      pid_t pid = 0;
      ASSERT_TRUE(eventually([&] { return (pid = pidOf(pool, 0)) != 0; })) << "respawn " << i;
      kill(pid, SIGKILL);
      ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != pid; })) << "death " << i;
    }
    ASSERT_TRUE(eventually([&] { return pidOf(pool, 0) != 0; }));
    EXPECT_EQ(call(pool, "x", "/").get().body, "fake");
    EXPECT_EQ(zombieChildren(), 0);
    pool.stop();
  }
  EXPECT_EQ(zombieChildren(), 0);
  EXPECT_EQ(openDescriptors(), fdsBefore);
}

}  // namespace
}  // namespace isolane

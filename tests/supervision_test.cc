// Supervision without a process: serve's pool (SubprocessBackend) and code mode's (ExecPool)
// drive in-memory workers (tests/fake_channel.h) on an injected clock. The test plays each
// worker: its Hello, its loads, its heartbeats, its death. What real processes do to the same
// rules (zombies, descriptors, signals) is pool_test's.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "exec/exec_pool.h"
#include "fake_channel.h"
#include "ipc/exec_codec.h"
#include "manual_clock.h"
#include "obs/metrics.h"
#include "pool/subprocess_backend.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::FakeEnd;
using test::FakeWorkers;
using test::SentFrame;

const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

class ServeSupervision : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolOptions o;
    o.size = 2;
    o.workerCommand = {"/nonexistent/worker"};
    o.spawnWorker = fakes_.spawner();
    o.spawnTimeout = 1000ms;
    o.heartbeatInterval = 500ms;
    o.heartbeatTimeout = 200ms;
    o.quarantine = 5000ms;
    o.crashBudget = CrashBudgetOptions{5, 60'000ms, 30'000ms};
    pool_ = std::make_unique<SubprocessBackend>(o, metrics_, clock_,
                                                SubprocessBackend::Supervision::kManual);
    ASSERT_TRUE(pool_->start({AppSpec{"hello", kApps + "hello.js", {}}}).ok());
  }
  void TearDown() override {
    if (pool_) pool_->stop();
  }

  // The worker says Hello, loads what it is sent and answers its first heartbeat.
  void bringUp(const std::shared_ptr<FakeEnd>& w) {
    w->say(encodeHello(w->pid(), FakeEnd::kMax, "engine"));
    for (int i = 0; i < 4; ++i) w->answer();  // the first load, then the others and the heartbeat
  }
  WorkerState state(int slot) const {
    return pool_->workers().at(static_cast<std::size_t>(slot)).state;
  }
  static bool sent(const std::vector<SentFrame>& frames, wire::Message type) {
    for (const SentFrame& f : frames) {
      if (f.type == type) return true;
    }
    return false;
  }

  test::ManualClock clock_;
  MetricsRegistry metrics_;
  FakeWorkers fakes_;
  std::unique_ptr<SubprocessBackend> pool_;
};

TEST_F(ServeSupervision, AWorkerIsReadyOnceItLoadedItsAppsAndAnsweredAHeartbeat) {
  ASSERT_EQ(fakes_.count(), 2u);  // manual supervision: every slot at once
  std::shared_ptr<FakeEnd> w = fakes_.at(0);
  EXPECT_EQ(state(0), WorkerState::kSpawning);
  w->say(encodeHello(w->pid(), FakeEnd::kMax, "engine"));
  EXPECT_EQ(state(0), WorkerState::kLoading);
  std::vector<SentFrame> first = w->take();
  ASSERT_EQ(first.size(), 1u);  // the first load alone: nothing else while its answer may come
  EXPECT_EQ(first[0].type, wire::Message::LoadApp);
  EXPECT_EQ(first[0].app, "hello");
  w->say(encodeAppLoaded("hello", true, "", FakeEnd::kMax));
  EXPECT_EQ(state(0), WorkerState::kLoading) << "ready only once a heartbeat after it is answered";
  EXPECT_TRUE(sent(w->answer(), wire::Message::Heartbeat));
  EXPECT_EQ(state(0), WorkerState::kReady);
  EXPECT_EQ(pool_->readyWorkers(), 1u);
}

TEST_F(ServeSupervision, AMissedHeartbeatKillsTheWorkerAndItsSlotRespawnsQuarantined) {
  bringUp(fakes_.at(0));
  bringUp(fakes_.at(1));
  ASSERT_EQ(pool_->readyWorkers(), 2u);
  std::shared_ptr<FakeEnd> w = fakes_.at(0);
  clock_.advance(500ms);
  pool_->superviseOnce();
  EXPECT_TRUE(sent(w->take(), wire::Message::Heartbeat));
  fakes_.at(1)->answer();
  clock_.advance(200ms);
  pool_->superviseOnce();
  EXPECT_EQ(w->killedBy(), 0) << "within the timeout";
  clock_.advance(1ms);
  pool_->superviseOnce();
  EXPECT_EQ(w->killedBy(), SIGKILL);
  EXPECT_EQ(state(0), WorkerState::kKilling);
  EXPECT_EQ(state(1), WorkerState::kReady) << "the other answered";
  EXPECT_EQ(pool_->readyWorkers(), 1u) << "a worker being killed takes no request";
  // Frames it sent before the SIGKILL landed do not count.
  w->say(encodeHello(w->pid(), FakeEnd::kMax, "engine"));
  EXPECT_EQ(state(0), WorkerState::kKilling);
  w->die("killed by signal SIGKILL");
  EXPECT_EQ(state(0), WorkerState::kResting);
  pool_->superviseOnce();
  ASSERT_EQ(fakes_.count(), 3u);
  EXPECT_EQ(state(0), WorkerState::kSpawning);
  bringUp(fakes_.last());
  EXPECT_EQ(state(0), WorkerState::kReady);
  EXPECT_TRUE(pool_->workers()[0].quarantined);
  clock_.advance(5001ms);
  EXPECT_FALSE(pool_->workers()[0].quarantined);
}

// A worker's executor threads each read a socket of their own: the pool tells the worker which
// descriptors they are, puts each request on the thread with the fewest in flight, and sends
// what follows a request (its cancel) on the same thread's socket.
TEST(ServeThreadSockets, EachRequestGoesToALeastBusyThreadAndItsCancelFollowsIt) {
  test::ManualClock clock;
  MetricsRegistry metrics;
  FakeWorkers fakes;
  PoolOptions o;
  o.size = 1;
  o.executorThreads = 3;
  o.workerCommand = {"/nonexistent/worker"};
  o.spawnWorker = fakes.spawner();
  SubprocessBackend pool(o, metrics, clock, SubprocessBackend::Supervision::kManual);
  ASSERT_TRUE(pool.start({AppSpec{"hello", kApps + "hello.js", {}}}).ok());
  std::shared_ptr<FakeEnd> w = fakes.at(0);
  EXPECT_EQ(w->sockets(), 3u);
  const std::vector<std::string>& argv = w->argv();
  auto fds = std::find(argv.begin(), argv.end(), "--thread-fds");
  ASSERT_NE(fds, argv.end());
  ASSERT_NE(fds + 1, argv.end());
  EXPECT_EQ(*(fds + 1), "6,7");
  w->say(encodeHello(w->pid(), FakeEnd::kMax, "engine"));
  for (int i = 0; i < 4; ++i) {
    for (const SentFrame& f : w->answer()) {
      EXPECT_EQ(f.thread, 0u) << "loads and heartbeats go on the first socket";
    }
  }
  ASSERT_EQ(pool.readyWorkers(), 1u);

  std::vector<std::uint64_t> handles;
  std::atomic<int> answered{0};
  auto submit = [&] {
    handles.push_back(pool.submit(AppRequest{"hello", "r", "GET", "http://x/", {}, ""},
                                  [&](AppResponse) { ++answered; }));
    std::vector<SentFrame> sent = w->take();
    EXPECT_EQ(sent.size(), 1u);
    return sent.empty() ? SentFrame{} : sent[0];
  };
  SentFrame a = submit(), b = submit(), c = submit();
  EXPECT_EQ(a.thread, 0u);
  EXPECT_EQ(b.thread, 1u);
  EXPECT_EQ(c.thread, 2u);
  pool.cancel(handles[1]);
  std::vector<SentFrame> cancels = w->take();
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].type, wire::Message::Cancel);
  EXPECT_EQ(cancels[0].id, b.id);
  EXPECT_EQ(cancels[0].thread, 1u) << "a cancel goes where its request went";
  // Thread 0's request is answered: the next one goes there, the least busy again.
  AppResponse ok;
  ok.status = 200;
  w->say(encodeWholeResponse(a.id, ok, FakeEnd::kMax));
  EXPECT_EQ(answered.load(), 1);
  EXPECT_EQ(submit().thread, 0u);
  pool.stop();
}

TEST_F(ServeSupervision, AWorkerSilentPastTheSpawnDeadlineIsKilled) {
  bringUp(fakes_.at(1));
  std::shared_ptr<FakeEnd> w = fakes_.at(0);  // never says Hello
  clock_.advance(1000ms);
  pool_->superviseOnce();
  EXPECT_EQ(w->killedBy(), 0);
  clock_.advance(1ms);
  pool_->superviseOnce();
  EXPECT_EQ(w->killedBy(), SIGKILL);
  EXPECT_EQ(state(0), WorkerState::kKilling);
}

TEST_F(ServeSupervision, ProtocolViolationsKillTheWorker) {
  struct Case {
    const char* name;
    std::function<void(FakeEnd&)> say;
  };
  std::vector<Case> cases = {
      {"a second Hello",
       [](FakeEnd& w) {
         w.say(encodeHello(w.pid(), FakeEnd::kMax, "engine"));
         w.say(encodeHello(w.pid(), FakeEnd::kMax, "engine"));
       }},
      {"AppLoaded before Hello",
       [](FakeEnd& w) { w.say(encodeAppLoaded("hello", true, "", FakeEnd::kMax)); }},
      {"AppLoaded for an app it was not sent",
       [](FakeEnd& w) {
         w.say(encodeHello(w.pid(), FakeEnd::kMax, "engine"));
         w.say(encodeAppLoaded("other", true, "", FakeEnd::kMax));
       }},
      {"an engine key over 4096 bytes",
       [](FakeEnd& w) { w.say(encodeHello(w.pid(), FakeEnd::kMax, std::string(4097, 'k'))); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Slot 0's worker of this round: the first spawn, or the respawn after the last case.
    std::shared_ptr<FakeEnd> w = fakes_.count() == 2 ? fakes_.at(0) : fakes_.last();
    c.say(*w);
    EXPECT_EQ(w->killedBy(), SIGKILL);
    EXPECT_EQ(state(0), WorkerState::kKilling);
    w->die("killed by signal SIGKILL");
    pool_->superviseOnce();  // respawned (the budget allows 5 deaths)
  }
}

TEST_F(ServeSupervision, ASlotThatSpendsItsCrashBudgetRestsThenComesBack) {
  bringUp(fakes_.at(1));  // the other slot lives: slot 0 is not the last of its lane
  for (int death = 0; death < 5; ++death) {
    std::shared_ptr<FakeEnd> w = death == 0 ? fakes_.at(0) : fakes_.last();
    w->die("exited with status 1");
    pool_->superviseOnce();
  }
  EXPECT_EQ(state(0), WorkerState::kResting);
  EXPECT_TRUE(pool_->workers()[0].coolingDown);
  std::size_t spawned = fakes_.count();
  clock_.advance(29'999ms);
  pool_->superviseOnce();
  fakes_.at(1)->answer();  // (its heartbeats, kept answered)
  EXPECT_EQ(state(1), WorkerState::kReady);
  EXPECT_EQ(fakes_.count(), spawned) << "resting for the whole cooldown";
  clock_.advance(1ms);
  pool_->superviseOnce();
  fakes_.at(1)->answer();
  EXPECT_EQ(state(1), WorkerState::kReady);
  EXPECT_EQ(fakes_.count(), spawned + 1);
  EXPECT_EQ(state(0), WorkerState::kSpawning);
}

TEST_F(ServeSupervision, StopAsksEveryWorkerToExitAndWaitsForThem) {
  bringUp(fakes_.at(0));
  bringUp(fakes_.at(1));
  pool_->stop();
  EXPECT_TRUE(fakes_.at(0)->shutdownSent());
  EXPECT_TRUE(fakes_.at(1)->shutdownSent());
  EXPECT_EQ(fakes_.at(0)->killedBy(), 0) << "it exited within the grace";
  pool_.reset();
}

// Code mode's pool: the same lifecycle, spawned on demand.
class ExecSupervision : public ::testing::Test {
 protected:
  void make(const std::function<void(ExecPoolOptions&)>& tune = {}) {
    ExecPoolOptions o;
    o.maxWorkers = 1;
    o.workerCommand = {"/nonexistent/worker"};
    o.spawnWorker = fakes_.spawner();
    if (tune) tune(o);
    pool_ = std::make_unique<ExecPool>(o, metrics_, clock_, ExecPool::Supervision::kManual);
  }
  void TearDown() override {
    if (pool_) pool_->shutdown(0ms);
  }
  // An execution; its outcome.
  std::future<ExecutionOutcome> run() {
    auto p = std::make_shared<std::promise<ExecutionOutcome>>();
    ExecutionSpec spec;
    spec.code = "export default async () => 1";
    pool_->execute(spec, nullptr, [p](ExecutionOutcome o) { p->set_value(std::move(o)); });
    return p->get_future();
  }
  // The worker says Hello and answers its first heartbeat (what it was sent: the heartbeat).
  static std::vector<SentFrame> bringUp(const std::shared_ptr<FakeEnd>& w) {
    w->say(encodeHello(w->pid(), FakeEnd::kMax));
    return w->answer();
  }

  test::ManualClock clock_;
  MetricsRegistry metrics_;
  FakeWorkers fakes_;
  std::unique_ptr<ExecPool> pool_;
};

TEST_F(ExecSupervision, AWorkerThatDiesDuringAnExecutionEndsItWithWorkerCrashed) {
  make();
  std::future<ExecutionOutcome> settled = run();
  ASSERT_EQ(fakes_.count(), 1u);
  std::shared_ptr<FakeEnd> w = fakes_.at(0);
  EXPECT_EQ(pool_->workerViews().at(0).state, std::string("starting"));
  std::vector<SentFrame> sent = bringUp(w);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].type, wire::Message::Heartbeat);
  sent = w->take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].type, wire::Message::Execute);
  EXPECT_EQ(pool_->workerViews().at(0).state, std::string("busy"));
  w->die("killed by signal SIGSEGV");
  ExecutionOutcome outcome = settled.get();
  EXPECT_EQ(outcome.error, ExecErrorCode::kWorkerCrashed);
  EXPECT_NE(outcome.message.find("SIGSEGV"), std::string::npos) << outcome.message;
}

TEST_F(ExecSupervision, AHeartbeatNobodyAskedForKillsTheWorker) {
  make();
  run();
  std::shared_ptr<FakeEnd> w = fakes_.at(0);
  w->say(encodeHello(w->pid(), FakeEnd::kMax));
  wire::HeartbeatAckT ack;
  ack.seq = 99;
  w->say(encodeHeartbeatAck(ack, FakeEnd::kMax));
  EXPECT_EQ(w->killedBy(), SIGKILL);
  EXPECT_EQ(pool_->workerViews().at(0).state, std::string("killing"));
  w->die("killed by signal SIGKILL");
}

TEST_F(ExecSupervision, WorkersThatKeepCrashingSpendTheBudgetAndThePoolBacksOff) {
  make([](ExecPoolOptions& o) {
    o.maxWorkers = 2;
    o.executionsPerWorker = 1;
    o.crashBudget = CrashBudgetOptions{2, 60'000ms, 30'000ms};
  });
  // A worker that stays, busy with a long execution.
  run();
  bringUp(fakes_.at(0));
  ASSERT_EQ(fakes_.at(0)->take().at(0).type, wire::Message::Execute);
  // Two workers in a row crash under their execution: the budget (2) is spent.
  for (std::size_t i = 0; i < 2; ++i) {
    std::future<ExecutionOutcome> settled = run();
    ASSERT_EQ(fakes_.count(), i + 2);
    bringUp(fakes_.last());
    fakes_.last()->die("killed by signal SIGSEGV");
    EXPECT_EQ(settled.get().error, ExecErrorCode::kWorkerCrashed);
  }
  // The next execution waits for the backoff instead of spawning a worker at once.
  std::future<ExecutionOutcome> waiting = run();
  EXPECT_EQ(fakes_.count(), 3u);
  EXPECT_EQ(pool_->stats().queued, 1u);
  clock_.advance(499ms);
  pool_->superviseOnce();
  fakes_.at(0)->answer();  // (the busy one's heartbeats)
  EXPECT_EQ(fakes_.count(), 3u);
  clock_.advance(1ms);
  pool_->superviseOnce();
  ASSERT_EQ(fakes_.count(), 4u) << "spawned once the backoff (500 ms) is over";
  std::shared_ptr<FakeEnd> w = fakes_.last();
  bringUp(w);  // then the execution goes to it
  std::vector<SentFrame> sent = w->take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].type, wire::Message::Execute);
  EXPECT_NE(metrics_.render().find("isolane_exec_worker_events_total{event=\"backoff\"} 1"),
            std::string::npos);
}

TEST_F(ExecSupervision, WhenNoWorkerCanStartExecutionsFailAtOnceUntilTheBackoffEnds) {
  make([](ExecPoolOptions& o) { o.crashBudget = CrashBudgetOptions{2, 60'000ms, 30'000ms}; });
  fakes_.failSpawns(true);
  for (int i = 0; i < 2; ++i) {  // each spawn fails, and fails the execution that waited for it
    ExecutionOutcome outcome = run().get();
    EXPECT_EQ(outcome.error, ExecErrorCode::kWorkerCrashed);
    EXPECT_NE(outcome.message.find("failed to start"), std::string::npos) << outcome.message;
  }
  // The budget is spent and no worker is left: refused at once, not parked for the backoff.
  std::future<ExecutionOutcome> refused = run();
  ASSERT_EQ(refused.wait_for(0s), std::future_status::ready);
  ExecutionOutcome outcome = refused.get();
  EXPECT_EQ(outcome.error, ExecErrorCode::kWorkerCrashed);
  EXPECT_NE(outcome.message.find("starts none for a while"), std::string::npos) << outcome.message;
  EXPECT_EQ(pool_->stats().queued, 0u);
  fakes_.failSpawns(false);
  clock_.advance(500ms);
  std::future<ExecutionOutcome> later = run();
  ASSERT_EQ(fakes_.count(), 1u) << "the backoff is over: a worker is spawned";
  bringUp(fakes_.at(0));
  EXPECT_EQ(fakes_.at(0)->take().at(0).type, wire::Message::Execute);
}

}  // namespace
}  // namespace isolane

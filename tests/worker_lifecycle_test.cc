// pool/worker_lifecycle.h: a worker's states, heartbeats and deadlines, driven from tables of
// steps with time as a parameter (no process, no sleep).

#include "pool/worker_lifecycle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isolane {
namespace {

using std::chrono::milliseconds;

const LifecycleOptions kOptions{milliseconds(1000), milliseconds(500), milliseconds(200)};

// A worker and everything its sink heard, as "from>to(reason)" strings.
struct Watched {
  std::vector<std::string> heard;
  WorkerLifecycle life{kOptions, [this](const WorkerTransition& t) {
                         heard.push_back(std::string(workerStateName(t.from)) + ">" +
                                         workerStateName(t.to) + (t.death ? "!" : "") +
                                         (t.reason.empty() ? "" : "(" + t.reason + ")"));
                       }};
};

SteadyTime at(int ms) { return SteadyTime{} + milliseconds(ms); }

TEST(WorkerLifecycle, EveryAllowedStepIsOneTransitionTheSinkHears) {
  Watched w;
  EXPECT_EQ(w.life.state(), WorkerState::kResting);
  w.life.spawned(at(0));
  EXPECT_FALSE(w.life.helloSeen());
  EXPECT_FALSE(w.life.hello(at(10)).has_value());
  EXPECT_TRUE(w.life.helloSeen());
  EXPECT_FALSE(w.life.ready());
  EXPECT_TRUE(w.life.markReady(at(20)));
  EXPECT_TRUE(w.life.everReady());
  EXPECT_TRUE(w.life.drain(at(30), "executions"));
  EXPECT_TRUE(w.life.kill(at(40), "missed a heartbeat"));
  EXPECT_EQ(w.life.died(at(50), "killed by signal SIGKILL", at(50)),
            "missed a heartbeat (killed by signal SIGKILL)");
  EXPECT_EQ(w.heard, (std::vector<std::string>{"resting>spawning", "spawning>loading",
                                               "loading>ready", "ready>draining(executions)",
                                               "draining>killing(missed a heartbeat)",
                                               "killing>resting!(missed a heartbeat (killed by "
                                               "signal SIGKILL))"}));
}

TEST(WorkerLifecycle, ARetiredWorkerRestsWithoutADeathAndOneThatDiesDrainingIsADeath) {
  for (bool dies : {false, true}) {
    SCOPED_TRACE(dies ? "dies while draining" : "retires");
    Watched w;
    w.life.spawned(at(0));
    ASSERT_FALSE(w.life.hello(at(0)).has_value());
    ASSERT_TRUE(w.life.markReady(at(0)));
    ASSERT_TRUE(w.life.drain(at(1), "memory"));
    if (dies) {
      w.life.died(at(2), "killed by signal SIGSEGV", at(2));
    } else {
      EXPECT_TRUE(w.life.retire(at(2)));
    }
    EXPECT_EQ(w.heard.back(),
              dies ? "draining>resting!(killed by signal SIGSEGV)" : "draining>resting(retired)");
    EXPECT_FALSE(w.life.retire(at(3))) << "only a draining worker retires";
  }
}

TEST(WorkerLifecycle, StepsOutOfOrderAreRefusedAndChangeNothing) {
  struct Case {
    const char* name;
    int reached;  // 0 resting, 1 spawning, 2 loading, 3 ready, 4 killing
    const char* step;
    bool allowed;
  };
  std::vector<Case> cases = {
      {"hello twice", 2, "hello", false},         {"hello before a spawn", 0, "hello", false},
      {"ready before hello", 1, "ready", false},  {"ready twice", 3, "ready", false},
      {"drain while loading", 2, "drain", false}, {"kill a resting slot", 0, "kill", false},
      {"kill twice", 4, "kill", false},           {"hello after the kill", 4, "hello", false},
      {"kill while spawning", 1, "kill", true},   {"drain a ready worker", 3, "drain", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Watched w;
    if (c.reached >= 1) w.life.spawned(at(0));
    if (c.reached >= 2) {
      ASSERT_FALSE(w.life.hello(at(0)).has_value());
    }
    if (c.reached == 3) {
      ASSERT_TRUE(w.life.markReady(at(0)));
    }
    if (c.reached == 4) {
      ASSERT_TRUE(w.life.kill(at(0), "first"));
    }
    WorkerState before = w.life.state();
    std::size_t heard = w.heard.size();
    bool allowed = false;
    std::string step = c.step;
    if (step == "hello") allowed = !w.life.hello(at(1)).has_value();
    if (step == "ready") allowed = w.life.markReady(at(1));
    if (step == "drain") allowed = w.life.drain(at(1), "why");
    if (step == "kill") allowed = w.life.kill(at(1), "second");
    EXPECT_EQ(allowed, c.allowed);
    if (!allowed) {
      EXPECT_EQ(w.life.state(), before);
      EXPECT_EQ(w.heard.size(), heard);
    }
    if (c.reached == 4) {
      EXPECT_EQ(w.life.reason(), "first");  // the first kill's reason stays
    }
  }
}

TEST(WorkerLifecycle, DueFollowsTheDeadlinesAndHeartbeats) {
  struct Case {
    const char* name;
    int reached;       // 1 spawning, 2 loading, 3 ready
    bool answerFirst;  // ready: the first heartbeat was answered at 0
    int now;           // ms
    const char* due;   // nothing, heartbeat, kill
  };
  std::vector<Case> cases = {
      {"spawning within its deadline", 1, false, 1000, "nothing"},
      {"spawning past its deadline", 1, false, 1001, "kill"},
      {"loading past the same deadline", 2, false, 1001, "kill"},
      {"ready, heartbeat not yet due", 3, true, 499, "nothing"},
      {"ready, heartbeat due", 3, true, 500, "heartbeat"},
      {"ready, first heartbeat unanswered within the timeout", 3, false, 200, "nothing"},
      {"ready, first heartbeat unanswered past the timeout", 3, false, 201, "kill"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Watched w;
    w.life.spawned(at(0));
    if (c.reached >= 2) {
      ASSERT_FALSE(w.life.hello(at(0)).has_value());
    }
    if (c.reached >= 3) {
      std::uint64_t seq = w.life.firstHeartbeat(at(0));
      if (c.answerFirst) {
        ASSERT_TRUE(w.life.heartbeatAnswered(seq, at(0)).has_value());
      }
      ASSERT_TRUE(w.life.markReady(at(0)));
    }
    WorkerLifecycle::Due due = w.life.due(at(c.now));
    const char* kinds[] = {"nothing", "heartbeat", "kill"};
    EXPECT_STREQ(kinds[static_cast<int>(due.kind)], c.due);
    if (due.kind == WorkerLifecycle::Due::Kind::kKill) {
      EXPECT_FALSE(due.reason.empty());
    }
  }
}

TEST(WorkerLifecycle, AHeartbeatIsAnsweredOnceAndOnlyByItsNumber) {
  Watched w;
  w.life.spawned(at(0));
  ASSERT_FALSE(w.life.hello(at(0)).has_value());
  std::uint64_t first = w.life.firstHeartbeat(at(0));
  EXPECT_FALSE(w.life.heartbeatAnswered(first + 1, at(5)).has_value());
  auto rtt = w.life.heartbeatAnswered(first, at(7));
  ASSERT_TRUE(rtt.has_value());
  EXPECT_EQ(*rtt, milliseconds(7));
  EXPECT_FALSE(w.life.heartbeatAnswered(first, at(8)).has_value());  // answered already
  ASSERT_TRUE(w.life.markReady(at(8)));
  // The next one goes out heartbeatInterval after the answer; a queued one's clock restarts when
  // it leaves the queue.
  WorkerLifecycle::Due due = w.life.due(at(507));
  ASSERT_EQ(due.kind, WorkerLifecycle::Due::Kind::kHeartbeat);
  EXPECT_EQ(due.seq, first + 1);
  w.life.heartbeatSent(at(600));
  EXPECT_EQ(w.life.due(at(800)).kind, WorkerLifecycle::Due::Kind::kNothing);
  EXPECT_EQ(w.life.due(at(801)).kind, WorkerLifecycle::Due::Kind::kKill);
}

TEST(WorkerLifecycle, ALateHeartbeatIsExcusedWhileTheWorkerSaysItIsBusyWithinTheGrace) {
  LifecycleOptions options = kOptions;
  options.busyGrace = milliseconds(3000);
  WorkerLifecycle life(options, [](const WorkerTransition&) {});
  life.spawned(at(0));
  ASSERT_FALSE(life.hello(at(0)).has_value());
  ASSERT_TRUE(life.heartbeatAnswered(life.firstHeartbeat(at(0)), at(1)).has_value());
  ASSERT_TRUE(life.markReady(at(1)));
  ASSERT_EQ(life.due(at(501)).kind, WorkerLifecycle::Due::Kind::kHeartbeat);
  life.heartbeatSent(at(501));
  using Kind = WorkerLifecycle::Due::Kind;
  // Past the timeout: a kill when idle, nothing while a thread has worked for less than the
  // grace (it answers when its pass ends), a kill once the pass has gone on for the grace.
  EXPECT_EQ(life.due(at(702), milliseconds(0)).kind, Kind::kKill);
  EXPECT_EQ(life.due(at(702), milliseconds(1)).kind, Kind::kNothing);
  EXPECT_EQ(life.due(at(2500), milliseconds(2999)).kind, Kind::kNothing);
  EXPECT_EQ(life.due(at(2500), milliseconds(3000)).kind, Kind::kKill);
  // Never beyond timeout + grace after it was sent, whatever the page says (a new pass each time).
  EXPECT_EQ(life.due(at(501 + 200 + 3000), milliseconds(1)).kind, Kind::kNothing);
  EXPECT_EQ(life.due(at(501 + 200 + 3001), milliseconds(1)).kind, Kind::kKill);
  // Without a grace (code mode's workers, whose reader thread answers at once): never excused.
  Watched w;
  w.life.spawned(at(0));
  ASSERT_FALSE(w.life.hello(at(0)).has_value());
  ASSERT_TRUE(w.life.heartbeatAnswered(w.life.firstHeartbeat(at(0)), at(1)).has_value());
  ASSERT_TRUE(w.life.markReady(at(1)));
  ASSERT_EQ(w.life.due(at(501)).kind, Kind::kHeartbeat);
  w.life.heartbeatSent(at(501));
  EXPECT_EQ(w.life.due(at(702), milliseconds(5)).kind, Kind::kKill);
}

TEST(WorkerLifecycle, ADeathWithoutAKillKeepsHowItWentAndTheRest) {
  Watched w;
  w.life.spawned(at(0));
  EXPECT_EQ(w.life.died(at(3), "exited with status 1", at(3000)), "exited with status 1");
  EXPECT_TRUE(w.life.restingUntilLater(at(2999)));
  EXPECT_FALSE(w.life.restingUntilLater(at(3000)));
  EXPECT_FALSE(w.life.everReady());
  // A spawn that failed is a death while resting: its reason replaces the last one, silently.
  std::size_t heard = w.heard.size();
  EXPECT_EQ(w.life.died(at(4), "cannot start worker", at(4)), "cannot start worker");
  EXPECT_EQ(w.heard.size(), heard);
  // A spawn clears the reason.
  w.life.spawned(at(5));
  EXPECT_EQ(w.life.reason(), "");
}

}  // namespace
}  // namespace isolane

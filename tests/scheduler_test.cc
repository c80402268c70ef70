// pool/scheduler.h: where a request goes, from tables of what the pool knows of each worker.

#include "pool/scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isolane {
namespace {

// A worker as the tables write it: slot, in flight, threads, free threads, and flags.
WorkerView worker(int slot, std::size_t inFlight, std::uint32_t threads = 1,
                  std::uint32_t freeThreads = 1, std::string flags = "") {
  WorkerView w;
  w.slot = slot;
  w.eligible = flags.find("ineligible") == std::string::npos;
  w.inFlight = inFlight;
  w.streams = inFlight;
  w.threads = threads;
  w.freeThreads = freeThreads;
  w.overloaded = flags.find("overloaded") != std::string::npos;
  w.quarantined = flags.find("quarantined") != std::string::npos;
  w.appHere = flags.find("here") != std::string::npos;
  return w;
}

struct Case {
  const char* name;
  std::vector<WorkerView> workers;
  int slot;
  bool avoidedWedged = false;
  bool allWedged = false;
};

TEST(Scheduler, ShortRequestsGoWhereTheyWaitLeast) {
  const std::size_t kMax = 4;
  std::vector<Case> cases = {
      {"the fewest in flight", {worker(0, 3), worker(1, 1), worker(2, 2)}, 1},
      {"a tie goes to the earliest slot", {worker(0, 2), worker(1, 2)}, 0},
      {"with equal counts, the worker with more of its threads free",
       {worker(0, 1, 2, 1), worker(1, 1, 2, 2)}, 1},
      {"a wedged thread is not free", {worker(0, 1, 2, 1), worker(1, 2, 2, 2)}, 1},
      {"a worker whose every thread is wedged is avoided", {worker(0, 0, 1, 0), worker(1, 3)}, 1,
       /*avoidedWedged=*/true},
      {"every worker wedged: none, and the request waits", {worker(0, 0, 1, 0), worker(1, 1, 2, 0)},
       -1, false, /*allWedged=*/true},
      {"a full worker takes nothing", {worker(0, 4), worker(1, 3)}, 1},
      {"every worker full: none", {worker(0, 4), worker(1, 4)}, -1},
      {"a standing queue counts its requests twice", {worker(0, 2, 1, 1, "overloaded"), worker(1, 3)},
       1},
      {"but a worker whose queue has drained takes its share again",
       {worker(0, 0, 1, 1, "overloaded"), worker(1, 3)}, 0},
      {"a quarantined worker comes after every other",
       {worker(0, 0, 1, 1, "quarantined"), worker(1, 3, 1, 1, "overloaded")}, 1},
      {"a quarantined worker when it is the only one", {worker(0, 2, 1, 1, "quarantined")}, 0},
      {"an ineligible worker (another group or lane, not ready) is never chosen",
       {worker(0, 0, 1, 1, "ineligible"), worker(1, 3)}, 1},
      {"no workers", {}, -1},
  };
  for (const Case& c : cases) {
    Placement p = placeRequest(c.workers, /*stream=*/false, kMax);
    EXPECT_EQ(p.slot, c.slot) << c.name;
    EXPECT_EQ(p.avoidedWedged, c.avoidedWedged) << c.name;
    EXPECT_EQ(p.allWedged, c.allWedged) << c.name;
  }
}

TEST(Scheduler, TheChosenWorkersStateIsReported) {
  std::vector<WorkerView> overloaded = {worker(0, 1, 1, 1, "overloaded"),
                                        worker(1, 0, 1, 1, "overloaded")};
  Placement p = placeRequest(overloaded, false, 8);
  EXPECT_EQ(p.slot, 1);
  EXPECT_TRUE(p.overloaded);
  // Shed only when every worker it could go to stands: not when the chosen one alone does.
  std::vector<WorkerView> one = {worker(0, 0, 1, 1, "overloaded"), worker(1, 3)};
  p = placeRequest(one, false, 8);
  EXPECT_EQ(p.slot, 0);
  EXPECT_FALSE(p.overloaded);
  // A quarantined worker takes a request only when no other can: an idle one beside a worker
  // that stands does not stop the shedding.
  std::vector<WorkerView> beside = {worker(0, 5, 1, 1, "overloaded"),
                                    worker(1, 0, 1, 1, "quarantined")};
  p = placeRequest(beside, false, 8);
  EXPECT_EQ(p.slot, 0);
  EXPECT_TRUE(p.overloaded);
  std::vector<WorkerView> quarantined = {worker(0, 0, 1, 1, "quarantined")};
  EXPECT_TRUE(placeRequest(quarantined, false, 8).quarantined);
}

TEST(Scheduler, StreamsGoToTheWorkerWithTheFewestStreamsWhateverItsThreads) {
  std::vector<WorkerView> workers = {worker(0, 5), worker(1, 2, 1, 0), worker(2, 3),
                                     worker(3, 0, 1, 1, "ineligible")};
  Placement p = placeRequest(workers, /*stream=*/true, 1);
  EXPECT_EQ(p.slot, 1) << "streams are bounded by the stream cap, not by threads or room";
  EXPECT_FALSE(p.allWedged);
}

TEST(Scheduler, AHeavyAppIsConfinedToTheWorkersItHasOnceTheyReachItsLimit) {
  struct Heavy {
    const char* name;
    std::vector<WorkerView> workers;
    std::size_t limit;
    int slot;
    bool confined;
  };
  std::vector<Heavy> cases = {
      {"under its limit it goes where it waits least",
       {worker(0, 1, 1, 1, "here"), worker(1, 0), worker(2, 0)}, 2, 1, false},
      {"at its limit, only to a worker it is on",
       {worker(0, 2, 1, 1, "here"), worker(1, 0)}, 1, 0, false},
      {"at its limit, the worker it is on is wedged: none, it waits",
       {worker(0, 1, 1, 0, "here"), worker(1, 0)}, 1, -1, true},
      {"a worker it is on but no longer eligible does not count",
       {worker(0, 1, 1, 1, "here ineligible"), worker(1, 0)}, 1, 1, false},
      {"not heavy (limit 0): anywhere", {worker(0, 1, 1, 0, "here"), worker(1, 3)}, 0, 1, false},
  };
  for (const Heavy& c : cases) {
    Placement p = placeRequest(c.workers, /*stream=*/false, 8, c.limit);
    EXPECT_EQ(p.slot, c.slot) << c.name;
    EXPECT_EQ(p.confined, c.confined) << c.name;
  }
  // Streams are never confined.
  std::vector<WorkerView> streams = {worker(0, 3, 1, 0, "here"), worker(1, 0)};
  EXPECT_EQ(placeRequest(streams, /*stream=*/true, 8, 1).slot, 1);
}

TEST(Scheduler, AHeavyAppMayUseEveryWorkerButOneAtMostItsShare) {
  EXPECT_EQ(heavyWorkerLimit(1, 1.0), 1u) << "one worker: nothing to keep free";
  EXPECT_EQ(heavyWorkerLimit(2, 1.0), 1u);
  EXPECT_EQ(heavyWorkerLimit(8, 1.0), 7u);
  EXPECT_EQ(heavyWorkerLimit(8, 0.5), 4u);
  EXPECT_EQ(heavyWorkerLimit(8, 0.0), 1u);
}

TEST(Scheduler, WithinAWorkerTheLeastBusyFreeThreadTakesTheRequest) {
  struct ThreadCase {
    const char* name;
    std::vector<ThreadView> threads;
    std::size_t expected;
  };
  const ThreadCase cases[] = {
      {"one thread", {{3, false}}, 0},
      {"idle: the first, so a light load keeps to one thread", {{0, false}, {0, false}}, 0},
      {"the fewest in flight", {{2, false}, {1, false}, {1, false}}, 1},
      {"a wedged thread is passed over however idle", {{0, true}, {5, false}}, 1},
      {"every thread wedged: the fewest in flight", {{4, true}, {2, true}}, 1},
      {"nothing to choose from", {}, 0},
  };
  for (const ThreadCase& c : cases) {
    EXPECT_EQ(placeThread(c.threads), c.expected) << c.name;
  }
}

}  // namespace
}  // namespace isolane

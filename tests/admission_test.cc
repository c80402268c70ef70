// pool/admission.h: whether a request runs now, waits or is shed, the same for both backends.

#include "pool/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isolane {
namespace {

using namespace std::chrono_literals;

WaitingRequest waiting(const std::string& app, std::uint64_t id, bool stream = false,
                       SteadyTime arrived = SteadyTime{}) {
  WaitingRequest w;
  w.request.app = app;
  w.request.streaming = stream;
  w.id = id;
  w.arrived = arrived;
  w.done = [](AppResponse) {};
  return w;
}

TEST(Admission, CapsAndTheMoveToTheStreamCap) {
  Admission a(AdmissionOptions{2, 1, 0, 1000ms});
  EXPECT_TRUE(a.cap(false).tryTake());
  EXPECT_TRUE(a.cap(false).tryTake());
  EXPECT_FALSE(a.cap(false).tryTake());
  EXPECT_TRUE(a.toStream()) << "a streamed head leaves the short cap for the stream cap";
  EXPECT_EQ(a.cap(false).taken(), 1u);
  EXPECT_EQ(a.cap(true).taken(), 1u);
  EXPECT_FALSE(a.toStream()) << "the stream cap is full: the stream is refused";
  EXPECT_EQ(a.cap(false).taken(), 1u) << "a refused move leaves its room where it was";
}

TEST(Admission, TheAppHoldingAtLeastAnEqualShareIsOverIt) {
  Admission a(AdmissionOptions{});
  EXPECT_FALSE(a.overFairShare("flood")) << "nothing in flight: nobody is over";
  for (int i = 0; i < 6; ++i) a.countApp("flood", true);
  a.countApp("quiet", true);
  EXPECT_TRUE(a.overFairShare("flood"));
  EXPECT_FALSE(a.overFairShare("quiet"));
  EXPECT_FALSE(a.overFairShare("new"));
  for (int i = 0; i < 5; ++i) a.countApp("flood", false);
  EXPECT_TRUE(a.overFairShare("flood")) << "1 of 2 in flight, two apps: an equal share";
}

TEST(Admission, ARequestNoWorkerTookWaitsOrIsShedWithItsReason) {
  Admission a(AdmissionOptions{4, 2, 1, 1000ms});
  struct Case {
    const char* name;
    Unplaced why;
    bool stream;
    std::string shed;  // "" when it waits
  };
  std::vector<Case> cases = {
      {"over the cap, the queue has room", {false, false, false, false}, false, ""},
      {"over the cap, the queue is full", {false, false, false, false}, false, "queue-full"},
      {"over the stream cap, the queue is full", {false, false, false, false}, true, "stream-full"},
      {"admitted, every worker full", {true, false, true, false}, false, "worker-full"},
      {"admitted, no worker at all", {true, false, false, false}, false, "no-worker"},
      // Past max_queue, up to the cap: one comes free soon.
      {"admitted, every worker wedged", {true, true, true, false}, false, ""},
      {"admitted, a worker starting", {true, false, false, true}, false, ""},
      {"admitted, its heavy app confined", {true, false, true, false, true}, false, ""},
  };
  std::uint64_t id = 1;
  for (const Case& c : cases) {
    WaitingRequest w = waiting("a", id++, c.stream);
    std::optional<std::string> shed = a.waitOrShed(w, c.why).shed;
    EXPECT_EQ(shed.value_or(""), c.shed) << c.name;
    if (shed) {
      EXPECT_TRUE(w.done) << c.name << ": a shed request is not moved from";
    }
  }
  EXPECT_EQ(a.waiting(), 4u);
}

TEST(Admission, WaitingAppsAreServedInTurnAndAnAppsOldestHoldsItsOthers) {
  Admission a(AdmissionOptions{10, 10, 10, 1000ms});
  Unplaced full{false, false, false, false};
  for (auto [app, id] : {std::pair{"flood", 1}, {"flood", 2}, {"flood", 3}, {"b", 4}, {"c", 5},
                         {"c", 6}}) {
    WaitingRequest w = waiting(app, id);
    ASSERT_FALSE(a.waitOrShed(w, full).shed);
  }
  // Room for four: one of each app in turn, then the next round; not the flood's three first.
  int room = 4;
  auto ready = a.takeReady([&](const WaitingRequest&) { return room > 0 && room-- > 0; });
  std::vector<std::uint64_t> ids;
  for (auto& w : ready) ids.push_back(w.id);
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 4, 5, 2}));
  EXPECT_EQ(a.waiting(), 2u);
  // An app whose oldest does not fit keeps the rest of its own behind it; others go on.
  auto onlyC = a.takeReady([](const WaitingRequest& w) { return w.request.app == "c"; });
  ASSERT_EQ(onlyC.size(), 1u);
  EXPECT_EQ(onlyC[0].id, 6u);
  ASSERT_TRUE(a.cancelWaiting(3));
  EXPECT_FALSE(a.cancelWaiting(3));
  EXPECT_EQ(a.waiting(), 0u);
  EXPECT_TRUE(a.takeAll().empty());
}

TEST(Admission, AFullQueueTakesTheNewestPlaceOfTheAppWithTheMostWaiting) {
  Admission a(AdmissionOptions{10, 10, 4, 1000ms});
  Unplaced full{false, false, false, false};
  for (std::uint64_t id = 1; id <= 4; ++id) {
    WaitingRequest w = waiting("flood", id);
    ASSERT_FALSE(a.waitOrShed(w, full).shed);
  }
  WaitingRequest more = waiting("flood", 5);
  EXPECT_EQ(a.waitOrShed(more, full).shed.value_or(""), "queue-full")
      << "the flood itself is shed when its queue fills";
  WaitingRequest neighbour = waiting("quiet", 6);
  WaitOutcome out = a.waitOrShed(neighbour, full);
  EXPECT_FALSE(out.shed) << "a neighbour with nothing waiting gets a place";
  ASSERT_TRUE(out.displaced);
  EXPECT_EQ(out.displaced->id, 4u) << "the flood's newest gives its place up";
  EXPECT_EQ(a.waiting(), 4u);
}

TEST(Admission, AConfinedHeavyAppWhoseQueueStandsIsShedAsAppOverloaded) {
  AdmissionOptions o{10, 10, 0, 1000ms};
  o.shedDelay = 50ms;
  Admission a(o);
  SteadyTime t0 = SteadyTime{} + std::chrono::hours(1);
  Unplaced confined{true, false, true, false, /*confined=*/true, /*fresh=*/true, t0};
  WaitingRequest first = waiting("heavy", 1, false, t0);
  ASSERT_FALSE(a.waitOrShed(first, confined).shed) << "it waits behind its own long turns";
  confined.now = t0 + 40ms;
  WaitingRequest soon = waiting("heavy", 2, false, confined.now);
  ASSERT_FALSE(a.waitOrShed(soon, confined).shed) << "not standing yet";
  confined.now = t0 + 60ms;
  WaitingRequest later = waiting("heavy", 3, false, confined.now);
  EXPECT_EQ(a.waitOrShed(later, confined).shed.value_or(""), "app-overloaded");
  confined.fresh = false;  // one that waited already, placed again: it waits on
  EXPECT_FALSE(a.waitOrShed(later, confined).shed);
  Unplaced other{true, false, true, false, false, true, t0 + 60ms};
  WaitingRequest neighbour = waiting("quiet", 4, false, t0 + 60ms);
  EXPECT_EQ(a.waitOrShed(neighbour, other).shed.value_or(""), "worker-full")
      << "another app is not shed for the heavy app's queue";
}

TEST(Admission, ARequestThatWaitedPastTheQueueTimeoutExpires) {
  Admission a(AdmissionOptions{10, 10, 10, 1000ms});
  SteadyTime t0 = SteadyTime{} + std::chrono::hours(1);
  Unplaced full{false, false, false, false};
  WaitingRequest early = waiting("a", 1, false, t0), late = waiting("a", 2, false, t0 + 600ms);
  ASSERT_FALSE(a.waitOrShed(early, full).shed);
  ASSERT_FALSE(a.waitOrShed(late, full).shed);
  EXPECT_TRUE(a.expire(t0 + 1000ms).empty());
  auto expired = a.expire(t0 + 1001ms);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, 1u);
  EXPECT_EQ(a.queueTimeout().shedReason, "queue-timeout");
}

}  // namespace
}  // namespace isolane

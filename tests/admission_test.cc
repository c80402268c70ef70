// pool/admission.h: whether a request runs now, waits or is shed, the same for both backends.

#include "pool/admission.h"

#include <gtest/gtest.h>

#include <string>

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
  };
  std::uint64_t id = 1;
  for (const Case& c : cases) {
    WaitingRequest w = waiting("a", id++, c.stream);
    std::optional<std::string> shed = a.waitOrShed(w, c.why);
    EXPECT_EQ(shed.value_or(""), c.shed) << c.name;
    if (shed) EXPECT_TRUE(w.done) << c.name << ": a shed request is not moved from";
  }
  EXPECT_EQ(a.waiting(), 3u);
}

TEST(Admission, WaitingRequestsLeaveInOrderAndAHeldKeyHoldsTheOnesBehindIt) {
  Admission a(AdmissionOptions{10, 10, 10, 1000ms});
  Unplaced full{false, false, false, false};
  for (auto [app, id] : {std::pair{"a", 1}, {"b", 2}, {"a", 3}, {"b", 4}}) {
    WaitingRequest w = waiting(app, id);
    ASSERT_FALSE(a.waitOrShed(w, full));
  }
  // Only b's workers have room: a's first holds a's second, b's go.
  auto ready = a.takeReady([](const WaitingRequest& w) {
    return Admission::Fit{w.request.app == "b", w.request.app};
  });
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].id, 2u);
  EXPECT_EQ(ready[1].id, 4u);
  EXPECT_EQ(a.waiting(), 2u);
  ASSERT_TRUE(a.cancelWaiting(3));
  EXPECT_FALSE(a.cancelWaiting(3));
  EXPECT_EQ(a.takeAll().size(), 1u);
}

TEST(Admission, ARequestThatWaitedPastTheQueueTimeoutExpires) {
  Admission a(AdmissionOptions{10, 10, 10, 1000ms});
  SteadyTime t0 = SteadyTime{} + std::chrono::hours(1);
  Unplaced full{false, false, false, false};
  WaitingRequest early = waiting("a", 1, false, t0), late = waiting("a", 2, false, t0 + 600ms);
  ASSERT_FALSE(a.waitOrShed(early, full));
  ASSERT_FALSE(a.waitOrShed(late, full));
  EXPECT_TRUE(a.expire(t0 + 1000ms).empty());
  auto expired = a.expire(t0 + 1001ms);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, 1u);
  EXPECT_EQ(a.queueTimeout().shedReason, "queue-timeout");
}

}  // namespace
}  // namespace isolane

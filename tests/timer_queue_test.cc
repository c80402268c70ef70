// TimerQueue: an isolate's timers as bookkeeping, with string callbacks and times given by the
// test (no isolate, no clock).

#include "worker/timer_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace isolane {
namespace {

using namespace std::chrono_literals;

struct App {};
using Queue = TimerQueue<App, std::string>;

const SteadyTime t0{};
std::string copyOf(const std::string& s) { return s + " (again)"; }

// Every timer due at `now`, as "callback@request" strings, in the order they fire.
std::vector<std::string> fireAll(Queue& q, SteadyTime now) {
  std::vector<std::string> out;
  while (auto fired = q.popDue(now, copyOf)) {
    out.push_back(fired->callback + "@" + std::to_string(fired->request));
  }
  return out;
}

TEST(TimerQueue, TimersFireWhenDueEarliestFirstAndInTheOrderSetAmongEqualTimes) {
  Queue q;
  App app;
  q.add(&app, 1, "late", 30ms, false, t0);
  q.add(&app, 2, "first", 10ms, false, t0);
  q.add(&app, 3, "second", 10ms, false, t0);
  EXPECT_EQ(q.nextDue(), t0 + 10ms);
  EXPECT_TRUE(fireAll(q, t0 + 9ms).empty());
  EXPECT_EQ(fireAll(q, t0 + 10ms), (std::vector<std::string>{"first@2", "second@3"}));
  EXPECT_EQ(fireAll(q, t0 + 1h), (std::vector<std::string>{"late@1"}));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.countOf(&app), 0u);
}

TEST(TimerQueue, AnIntervalFiresOncePerPassAndAgainAfterItsInterval) {
  Queue q;
  App app;
  std::uint32_t id = q.add(&app, 0, "tick", 5ms, true, t0);
  // Long overdue, it still fires once in a pass (the pass keeps its `now`): it cannot starve
  // the requests that wait behind the timers.
  EXPECT_EQ(fireAll(q, t0 + 100ms), (std::vector<std::string>{"tick (again)@0"}));
  EXPECT_TRUE(q.has(id));
  EXPECT_EQ(q.nextDue(), t0 + 105ms);
  EXPECT_EQ(fireAll(q, t0 + 105ms).size(), 1u);
  EXPECT_TRUE(q.clear(id, &app));
  EXPECT_TRUE(fireAll(q, t0 + 1h).empty());
}

TEST(TimerQueue, AnAppClearsOnlyItsOwnTimers) {
  Queue q;
  App a, b;
  std::uint32_t id = q.add(&a, 0, "a's", 1ms, false, t0);
  EXPECT_FALSE(q.clear(id, &b));
  EXPECT_TRUE(q.has(id));
  EXPECT_EQ(q.countOf(&a), 1u);
  EXPECT_EQ(q.countOf(&b), 0u);
  EXPECT_TRUE(q.clear(id, &a));
  EXPECT_FALSE(q.clear(id, &a));  // once
  EXPECT_TRUE(fireAll(q, t0 + 1h).empty());
}

TEST(TimerQueue, ARequestsEndClearsOnlyTheTimersItSet) {
  Queue q;
  App app;
  std::uint32_t mine = q.add(&app, 7, "mine", 1ms, false, t0);
  std::uint32_t other = q.add(&app, 8, "other's", 1ms, false, t0);
  // A request's list may name a timer that another request now holds (ids are reused).
  q.clearOfRequest({mine, other, 12345}, 7);
  EXPECT_FALSE(q.has(mine));
  EXPECT_TRUE(q.has(other));
  EXPECT_EQ(fireAll(q, t0 + 1ms), (std::vector<std::string>{"other's@8"}));
}

TEST(TimerQueue, TimersSetOutsideARequestAreAdoptedByIt) {
  Queue q;
  App app, other;
  std::uint32_t loose = q.add(&app, 0, "top level", 1ms, false, t0);
  q.add(&app, 3, "request 3's", 1ms, false, t0);
  q.add(&other, 0, "another app's", 1ms, false, t0);
  std::vector<std::uint32_t> adopted;
  q.adopt(&app, 9, [&](std::uint32_t id) { adopted.push_back(id); });
  EXPECT_EQ(adopted, std::vector<std::uint32_t>{loose});
  EXPECT_EQ(fireAll(q, t0 + 1ms),
            (std::vector<std::string>{"top level@9", "request 3's@3", "another app's@0"}));
}

TEST(TimerQueue, AnOwnersTimersGoWithIt) {
  Queue q;
  App gone, stays;
  q.add(&gone, 0, "a", 1ms, true, t0);
  q.add(&gone, 1, "b", 1ms, false, t0);
  q.add(&stays, 0, "c", 1ms, false, t0);
  q.clearOfOwner(&gone);
  EXPECT_EQ(q.countOf(&gone), 0u);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(fireAll(q, t0 + 1ms), (std::vector<std::string>{"c@0"}));
}

TEST(TimerQueue, SetAndClearLoopsDoNotGrowTheHeap) {
  Queue q;
  App app;
  q.add(&app, 0, "keeps", 24h, false, t0);
  for (int i = 0; i < 100'000; ++i) {
    std::uint32_t id = q.add(&app, 0, "cleared", 24h, false, t0);
    ASSERT_TRUE(q.clear(id, &app));
  }
  EXPECT_EQ(q.size(), 1u);
  EXPECT_LE(q.heapSize(), 2 * q.size() + 1025);
  EXPECT_EQ(fireAll(q, t0 + 24h), (std::vector<std::string>{"keeps@0"}));
}

TEST(TimerQueue, IdsAreNeverZeroWhenTheyWrapAround) {
  Queue q(0xFFFFFFFEu);  // the next id is the last before the wrap-around
  App app;
  EXPECT_EQ(q.add(&app, 0, "last", 1h, false, t0), 0xFFFFFFFFu);
  EXPECT_EQ(q.add(&app, 0, "", 1h, false, t0), 1u);
  EXPECT_EQ(q.add(&app, 0, "", 1h, false, t0), 2u);
  EXPECT_EQ(q.size(), 3u);
}

}  // namespace
}  // namespace isolane

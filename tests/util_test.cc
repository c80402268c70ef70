// Leaf helpers: the bounded queue's full and closed behaviour, the doorbell's coalescing, and
// UTF-8 well-formedness as the WHATWG decoder defines it.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "util/bounded_queue.h"
#include "util/doorbell.h"
#include "web/utf8.h"

namespace isolane {
namespace {

TEST(BoundedQueue, FullRefusesAndLeavesTheItem) {
  BoundedQueue<std::string> q(2);
  std::string a = "a", b = "b", c = "c";
  EXPECT_TRUE(q.tryPush(a));
  EXPECT_TRUE(q.tryPush(b));
  EXPECT_FALSE(q.tryPush(c));
  EXPECT_EQ(c, "c");
  std::deque<std::string> out;
  q.drainInto(out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(q.tryPush(c));
}

TEST(BoundedQueue, TakeLeastTakesTheLeastScoreInItsWindowTheOldestOnATie) {
  BoundedQueue<std::string> q(8);
  for (std::string s : {"b2", "a1", "c1", "a0"}) ASSERT_TRUE(q.tryPush(s));
  auto score = [](const std::string& s) { return s[1] - '0'; };
  std::string out;
  ASSERT_TRUE(q.takeLeast(score, 3, out));
  EXPECT_EQ(out, "a1") << "a0 is outside the window; a1 is older than c1";
  ASSERT_TRUE(q.takeLeast(score, 8, out));
  EXPECT_EQ(out, "a0");
  ASSERT_TRUE(q.takeLeast(score, 1, out));
  EXPECT_EQ(out, "b2") << "a window of one is the oldest";
  ASSERT_TRUE(q.takeLeast(score, 8, out));
  EXPECT_EQ(out, "c1");
  EXPECT_FALSE(q.takeLeast(score, 8, out));
}

TEST(BoundedQueue, ClosedRefusesEverything) {
  BoundedQueue<int> q(10);
  q.close();
  int x = 1;
  EXPECT_FALSE(q.tryPush(x));
}

TEST(Doorbell, RingsCoalesceIntoOneWake) {
  Doorbell bell;
  bell.ring();
  bell.ring();
  EXPECT_TRUE(bell.waitUntil(std::chrono::steady_clock::now()));
  EXPECT_FALSE(bell.waitUntil(std::chrono::steady_clock::now()));
}

TEST(Doorbell, WakesASleeperFromAnotherThread) {
  Doorbell bell;
  std::thread t([&] { bell.ring(); });
  bell.wait();  // returns only because it was rung
  t.join();
}

bool valid(std::initializer_list<int> bytes) {
  std::vector<std::uint8_t> v(bytes.begin(), bytes.end());
  return utf8::isValid(v.data(), v.size());
}
std::size_t tail(std::initializer_list<int> bytes) {
  std::vector<std::uint8_t> v(bytes.begin(), bytes.end());
  return utf8::incompleteTail(v.data(), v.size());
}

TEST(Utf8, WellFormedness) {
  EXPECT_TRUE(valid({'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80}));
  EXPECT_FALSE(valid({0xC0, 0x80}));              // overlong
  EXPECT_FALSE(valid({0xED, 0xA0, 0x80}));        // surrogate
  EXPECT_FALSE(valid({0xF4, 0x90, 0x80, 0x80}));  // past U+10FFFF
  EXPECT_FALSE(valid({0x80}));                    // lone continuation
  EXPECT_FALSE(valid({0xE2, 0x82}));              // truncated
  EXPECT_FALSE(valid({0xFF}));
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(tail({'a', 0xE2, 0x82}), 2u);
  EXPECT_EQ(tail({0xF0}), 1u);
  EXPECT_EQ(tail({0xF0, 0x9F, 0x98}), 3u);
  EXPECT_EQ(tail({0xE2, 0x82, 0xAC}), 0u);  // complete
  EXPECT_EQ(tail({0xE2, 0x41}), 0u);        // invalid, not incomplete
  EXPECT_EQ(tail({}), 0u);
}

}  // namespace
}  // namespace isolane

// Leaf helpers: the bounded queue's full and closed behaviour, the doorbell's coalescing, and
// UTF-8 well-formedness as the WHATWG decoder defines it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
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
  bool oldest = true;
  ASSERT_TRUE(q.takeLeast(score, 3, out, &oldest));
  EXPECT_EQ(out, "a1") << "a0 is outside the window; a1 is older than c1";
  EXPECT_FALSE(oldest) << "b2 is older";
  ASSERT_TRUE(q.takeLeast(score, 8, out));
  EXPECT_EQ(out, "a0");
  ASSERT_TRUE(q.takeLeast(score, 1, out, &oldest));
  EXPECT_EQ(out, "b2") << "a window of one is the oldest";
  EXPECT_TRUE(oldest);
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

TEST(Doorbell, ParksForItsOwnDescriptorToo) {
  Doorbell bell;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Nothing to read and no ring: the timeout.
  Doorbell::Woken w = bell.park(std::chrono::milliseconds(20), fds[0]);
  EXPECT_FALSE(w.rung);
  EXPECT_FALSE(w.readable);
  // Bytes on the descriptor wake it, with no ring.
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  w = bell.park(std::chrono::seconds(10), fds[0]);
  EXPECT_FALSE(w.rung);
  EXPECT_TRUE(w.readable);
  char c;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);
  // A ring from another thread wakes a park on a silent descriptor.
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bell.ring();
  });
  w = bell.park(std::nullopt, fds[0]);
  t.join();
  EXPECT_TRUE(w.rung);
  EXPECT_FALSE(w.readable);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Doorbell, TakeConsumesARingThatCameBefore) {
  Doorbell bell;
  EXPECT_FALSE(bell.take());
  bell.ring();
  EXPECT_TRUE(bell.take());
  EXPECT_FALSE(bell.waitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
}

TEST(Doorbell, NoRingIsLostBetweenThreads) {
  // Every ring that follows a push is seen: the sleeper never waits while a push is unseen.
  Doorbell bell;
  std::atomic<int> pushed{0};
  constexpr int kPushes = 20000;
  std::thread ringer([&] {
    for (int i = 0; i < kPushes; ++i) {
      pushed.fetch_add(1);
      bell.ring();
    }
  });
  int seen = 0;
  int timedOut = 0;  // a park that saw nothing new for 5 s: a ring was lost
  while (seen < kPushes) {
    if (pushed.load() == seen) {
      Doorbell::Woken w = bell.park(std::chrono::seconds(5), -1);
      if (!w.rung && pushed.load() == seen) ++timedOut;
    }
    seen = pushed.load();
  }
  ringer.join();
  EXPECT_EQ(timedOut, 0);
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

// ConnectionClock: a connection's read and write deadlines on one timer, re-armed only when a
// deadline comes earlier than the one it waits for. Real Asio timers on a private io_context,
// with deadlines of a few milliseconds.

#include "front/connection_clock.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

namespace isolane {
namespace {

using namespace std::chrono_literals;
using Deadline = ConnectionClock::Deadline;
using Clock = ConnectionClock::Clock;

struct Fixture {
  boost::asio::io_context io;
  std::shared_ptr<int> owner = std::make_shared<int>(0);
  std::vector<Deadline> fired;
  ConnectionClock clock{boost::asio::make_strand(io),
                        [this](Deadline which) { fired.push_back(which); }};
  Fixture() { clock.setOwner(owner); }
  // Runs the reactor until nothing is pending (a pending wait keeps it running).
  void run() {
    io.restart();
    io.run();
  }
};

TEST(ConnectionClock, ADeadlineThatPassesFiresOnce) {
  Fixture f;
  f.clock.set(Deadline::kRead, Clock::now() + 5ms);
  f.run();
  ASSERT_EQ(f.fired.size(), 1u);
  EXPECT_EQ(f.fired[0], Deadline::kRead);
  EXPECT_FALSE(f.clock.isSet(Deadline::kRead));
}

TEST(ConnectionClock, AClearedDeadlineNeverFires) {
  Fixture f;
  f.clock.set(Deadline::kWrite, Clock::now() + 5ms);
  f.clock.clear(Deadline::kWrite);
  f.run();  // the wait completes, finds nothing due, and is not renewed
  EXPECT_TRUE(f.fired.empty());
  EXPECT_EQ(f.clock.waits(), 1u);
}

TEST(ConnectionClock, LaterDeadlinesWaitOnTheWaitAlreadyPending) {
  Fixture f;
  auto start = Clock::now();
  f.clock.set(Deadline::kRead, start + 5ms);
  for (int i = 1; i <= 100; ++i) {  // each request moves it later, as keep-alive does
    f.clock.set(Deadline::kRead, start + 5ms + i * 100us);
    f.clock.set(Deadline::kWrite, start + 30ms + i * 100us);
    f.clock.clear(Deadline::kWrite);
  }
  EXPECT_EQ(f.clock.waits(), 1u);
  f.run();
  ASSERT_EQ(f.fired.size(), 1u);
  EXPECT_EQ(f.fired[0], Deadline::kRead);
  EXPECT_GE(Clock::now(), start + 15ms) << "fired at the deadline last set, not the first";
  EXPECT_EQ(f.clock.waits(), 2u) << "one early wake-up, then one wait for the real deadline";
}

TEST(ConnectionClock, AnEarlierDeadlineReArmsTheTimer) {
  Fixture f;
  auto start = Clock::now();
  f.clock.set(Deadline::kRead, start + 10s);
  f.clock.set(Deadline::kWrite, start + 5ms);
  EXPECT_EQ(f.clock.waits(), 2u);
  f.io.restart();
  while (f.fired.empty() && f.io.run_one()) {
  }
  ASSERT_EQ(f.fired.size(), 1u);
  EXPECT_EQ(f.fired[0], Deadline::kWrite);
  EXPECT_LT(Clock::now(), start + 5s) << "the write's deadline did not wait for the read's";
  EXPECT_TRUE(f.clock.isSet(Deadline::kRead));
  f.clock.stop();
  f.run();
  EXPECT_EQ(f.fired.size(), 1u) << "stop() ends the read's wait without firing it";
}

TEST(ConnectionClock, BothDeadlinesDueFireInOneWakeUpWriteFirst) {
  Fixture f;
  auto at = Clock::now() + 5ms;
  f.clock.set(Deadline::kRead, at);
  f.clock.set(Deadline::kWrite, at);
  f.run();
  ASSERT_EQ(f.fired.size(), 2u);
  EXPECT_EQ(f.fired[0], Deadline::kWrite);
  EXPECT_EQ(f.fired[1], Deadline::kRead);
}

TEST(ConnectionClock, ADueCallbackMaySetTheNextDeadline) {
  Fixture f;
  int rounds = 0;
  ConnectionClock* clock = nullptr;
  ConnectionClock chained(boost::asio::make_strand(f.io), [&](Deadline) {
    if (++rounds < 3) clock->set(Deadline::kRead, Clock::now() + 2ms);
  });
  clock = &chained;
  chained.setOwner(f.owner);
  chained.set(Deadline::kRead, Clock::now() + 2ms);
  f.run();
  EXPECT_EQ(rounds, 3);
}

TEST(ConnectionClock, ADeadlineSetBeforeItsOwnerIsAnError) {
  boost::asio::io_context io;
  ConnectionClock clock(boost::asio::make_strand(io), [](Deadline) {});
  EXPECT_THROW(clock.set(Deadline::kRead, Clock::now() + 1s), std::logic_error);
}

TEST(ConnectionClock, NothingFiresOnceItsOwnerIsGone) {
  Fixture f;
  f.clock.set(Deadline::kRead, Clock::now() + 5ms);
  f.owner.reset();
  f.run();
  EXPECT_TRUE(f.fired.empty());
}

}  // namespace
}  // namespace isolane

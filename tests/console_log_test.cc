// ConsoleLog: an app's console lines are rate-limited per app, and what is dropped is counted.
#include "obs/console_log.h"

#include <gtest/gtest.h>

#include <string>

#include "manual_clock.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

ConsoleLimits smallLimits() {
  ConsoleLimits limits;
  limits.linesPerSecond = 2;
  limits.burstLines = 5;
  limits.bytesPerSecond = 1000;
  limits.burstBytes = 4000;
  return limits;
}

TEST(ConsoleLog, AnAppPastItsBurstIsDroppedAndCounted) {
  test::ManualClock clock;
  ConsoleLog log(smallLimits(), clock);
  for (int i = 0; i < 12; ++i) log.write("log", "flood", "r1", "line");
  EXPECT_EQ(log.droppedLines(), 7u);  // 5 of burst
  clock.advance(1000ms);              // 2 lines a second come back
  for (int i = 0; i < 3; ++i) log.write("log", "flood", "r1", "line");
  EXPECT_EQ(log.droppedLines(), 8u);
}

TEST(ConsoleLog, EachAppHasItsOwnBucket) {
  test::ManualClock clock;
  ConsoleLog log(smallLimits(), clock);
  for (int i = 0; i < 20; ++i) log.write("log", "flood", "", "line");
  EXPECT_EQ(log.droppedLines(), 15u);
  for (int i = 0; i < 5; ++i) log.write("info", "quiet", "", "hello");
  EXPECT_EQ(log.droppedLines(), 15u) << "a flooding app took another app's lines";
}

TEST(ConsoleLog, BytesAreLimitedAsWellAsLines) {
  test::ManualClock clock;
  ConsoleLog log(smallLimits(), clock);
  std::string big(kMaxConsoleLineBytes, 'x');  // over the 4000-byte burst on its own
  log.write("log", "wide", "", big);
  EXPECT_EQ(log.droppedLines(), 1u);
  log.write("log", "wide", "", std::string(3000, 'y'));
  log.write("log", "wide", "", std::string(3000, 'y'));  // 1000 bytes left
  EXPECT_EQ(log.droppedLines(), 2u);
  clock.advance(2000ms);  // 2000 more bytes
  log.write("log", "wide", "", std::string(3000, 'y'));
  EXPECT_EQ(log.droppedLines(), 2u);
}

TEST(ConsoleLog, TheBucketRefillsOnlyUpToItsBurst) {
  test::ManualClock clock;
  ConsoleLog log(smallLimits(), clock);
  log.write("log", "idle", "", "first");
  clock.advance(3600s);  // an hour idle gives back 5 lines, not 7,200
  for (int i = 0; i < 6; ++i) log.write("log", "idle", "", "line");
  EXPECT_EQ(log.droppedLines(), 1u);
}

}  // namespace
}  // namespace isolane

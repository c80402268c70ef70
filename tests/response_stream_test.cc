// ResponseStream: a streamed answer's credit window and its two limits, without an isolate.

#include "worker/response_stream.h"

#include <gtest/gtest.h>

#include <chrono>

namespace isolane {
namespace {

using namespace std::chrono_literals;

const SteadyTime kT0 = SteadyTime{} + 1h;
const StreamLimits kLimits{10s, 60s};
constexpr std::size_t kPiece = 64 * 1024;

TEST(ResponseStream, StartsWithAWholeWindowAndAnIdleDeadline) {
  ResponseStream s(kT0, kLimits);
  EXPECT_EQ(s.credit(), ResponseStream::kWindow);
  EXPECT_FALSE(s.awaitingCredit());
  EXPECT_EQ(s.deadline(), kT0 + 10s);
}

TEST(ResponseStream, EachPieceTakesCreditAndRestartsTheIdleClock) {
  ResponseStream s(kT0, kLimits);
  EXPECT_EQ(s.sent(kPiece, kT0 + 5s), ResponseStream::kWindow - static_cast<std::int64_t>(kPiece));
  EXPECT_EQ(s.deadline(), kT0 + 15s);
  EXPECT_FALSE(s.awaitingCredit());
}

TEST(ResponseStream, WaitingForASlowClientIsNotIdling) {
  ResponseStream s(kT0, kLimits);
  for (int i = 0; i < 4; ++i) s.sent(kPiece, kT0 + 1s);
  EXPECT_TRUE(s.awaitingCredit());
  EXPECT_EQ(s.deadline(), kT0 + 60s) << "only the whole duration bounds a stream its client holds";
  EXPECT_FALSE(s.granted(0, kT0 + 30s));
  EXPECT_TRUE(s.granted(kPiece, kT0 + 30s)) << "the app may go on";
  EXPECT_FALSE(s.awaitingCredit());
  EXPECT_EQ(s.deadline(), kT0 + 40s) << "the idle clock starts again when the client is ready";
  EXPECT_FALSE(s.granted(kPiece, kT0 + 31s)) << "it was not waiting";
}

TEST(ResponseStream, APieceMayOvershootTheWindowOnce) {
  ResponseStream s(kT0, kLimits);
  s.sent(ResponseStream::kWindow - 1, kT0);
  EXPECT_EQ(s.sent(kPiece, kT0), 1 - static_cast<std::int64_t>(kPiece));
  EXPECT_TRUE(s.awaitingCredit());
  EXPECT_FALSE(s.granted(kPiece - 2, kT0)) << "still in debt: it waits on";
  EXPECT_TRUE(s.granted(2, kT0));
}

TEST(ResponseStream, CreditNeverGrowsPastAWindow) {
  ResponseStream s(kT0, kLimits);
  s.granted(std::size_t{1} << 40, kT0);  // a peer granting what was never sent
  EXPECT_EQ(s.credit(), ResponseStream::kWindow);
  s.sent(kPiece, kT0);
  s.granted(kPiece * 10, kT0);
  EXPECT_EQ(s.credit(), ResponseStream::kWindow);
}

TEST(ResponseStream, ItsWholeDurationIsBoundEvenWhileItProduces) {
  ResponseStream s(kT0, kLimits);
  s.sent(1, kT0 + 55s);
  EXPECT_EQ(s.deadline(), kT0 + 60s);
  EXPECT_NE(s.expiry(kT0 + 60s).find("stream_max_ms"), std::string::npos);
  ResponseStream idle(kT0, kLimits);
  EXPECT_NE(idle.expiry(kT0 + 10s).find("stream_idle_timeout_ms"), std::string::npos);
}

}  // namespace
}  // namespace isolane

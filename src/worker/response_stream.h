#pragma once
// ResponseStream: the flow of one streamed answer, from its head to its end. Its app may send a
// window of bytes ahead of its client (kStreamWindowBytes), given back as credit as the client
// reads; and two limits bound it: stream_idle_timeout_ms (no piece while the client is ready for
// more: waiting for a slow client does not count) and stream_max_ms (its whole duration).
//
// Bookkeeping only, without an isolate: the loop holds the app's control function, tells
// JavaScript when it may go on, and ends the stream at its deadline (tests/response_stream_test.cc).
// Thread rule: one thread (its isolate's executor thread).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ipc/body_pipe.h"
#include "util/clock.h"

namespace isolane {

struct StreamLimits {
  std::chrono::milliseconds idle{60'000};
  std::chrono::milliseconds max{3'600'000};
};

class ResponseStream {
 public:
  static constexpr auto kWindow = static_cast<std::int64_t>(kStreamWindowBytes);

  ResponseStream(SteadyTime started, StreamLimits limits)
      : limits_(limits), started_(started), lastPiece_(started) {}

  // Bytes the app may still send before it waits for the client (below zero by at most the last
  // piece: a piece is taken whole while any credit is left).
  std::int64_t credit() const { return credit_; }
  // The app waits for credit (its runtime waits for control(CREDIT)).
  bool awaitingCredit() const { return awaitingCredit_; }

  // A piece of `bytes` went out (the caller checked that credit() > 0); the credit left.
  std::int64_t sent(std::size_t bytes, SteadyTime now) {
    credit_ -= static_cast<std::int64_t>(bytes);
    lastPiece_ = now;
    awaitingCredit_ = credit_ <= 0;
    return credit_;
  }
  // The client read `bytes` of it. True when the app waited for credit and may go on now: its
  // idle clock restarts, since the client is ready again.
  bool granted(std::size_t bytes, SteadyTime now) {
    // Never more than a window: a confused or hostile peer cannot grant what was never sent.
    credit_ = std::min(kWindow, credit_ + static_cast<std::int64_t>(std::min<std::size_t>(
                                              bytes, kStreamWindowBytes)));
    if (!awaitingCredit_ || credit_ <= 0) return false;
    awaitingCredit_ = false;
    lastPiece_ = now;
    return true;
  }

  // When the stream must end if nothing more happens: at its whole duration, or earlier after
  // idling for stream_idle_timeout_ms while the client was ready for more.
  SteadyTime deadline() const {
    SteadyTime end = started_ + limits_.max;
    if (!awaitingCredit_) end = std::min(end, lastPiece_ + limits_.idle);
    return end;
  }
  // Why a stream whose deadline came at `now` ends, as the app and the log are told.
  std::string expiry(SteadyTime now) const {
    if (now >= started_ + limits_.max) {
      return "the response stream ran longer than " + std::to_string(limits_.max.count()) +
             " ms (stream_max_ms)";
    }
    return "the response stream produced nothing for " + std::to_string(limits_.idle.count()) +
           " ms (stream_idle_timeout_ms)";
  }

 private:
  StreamLimits limits_;
  SteadyTime started_;
  SteadyTime lastPiece_;
  std::int64_t credit_ = kWindow;
  bool awaitingCredit_ = false;
};

}  // namespace isolane

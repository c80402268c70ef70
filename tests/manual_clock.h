#pragma once
// A Clock tests move by hand (util/clock.h): time passes only when advance() says so.

#include <atomic>
#include <chrono>

#include "util/clock.h"

namespace isolane::test {

class ManualClock final : public Clock {
 public:
  SteadyTime now() const override { return now_.load(); }
  void advance(std::chrono::milliseconds d) { now_.store(now_.load() + d); }

 private:
  std::atomic<SteadyTime> now_{SteadyTime{} + std::chrono::hours(1)};
};

}  // namespace isolane::test

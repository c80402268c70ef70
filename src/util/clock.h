#pragma once
// Time as a parameter: pool/ and worker/ take a Clock so tests can drive time instead of sleeping.

#include <chrono>
#include <ctime>

namespace isolane {

using SteadyTime = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Safe from any thread.
  virtual SteadyTime now() const = 0;
};

class SystemClock final : public Clock {
 public:
  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  static const SystemClock& instance() {
    static const SystemClock clock;
    return clock;
  }
};

// CPU time consumed so far by the calling thread. Deadlines count this, not only wall time: a turn
// that is slow because the host is saturated is not a wedged turn.
inline std::chrono::nanoseconds threadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace isolane

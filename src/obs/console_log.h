#pragma once
// ConsoleLog: where an app's console output goes in a server: the server log, one line per
// call, tagged with the app and the request id. An app is untrusted, and so is how much it
// logs: a line is cut at kMaxConsoleLineBytes (by the native that reads it out of JavaScript,
// web/host_functions.cc, before any copy of the rest), and each app may write at most
// `linesPerSecond` lines and `bytesPerSecond` bytes a second on average (token buckets, with
// bursts of `burstLines` and `burstBytes`). What goes past is dropped and counted: one
// "console output dropped" line per app at most once a second says how much, and
// droppedLines() feeds isolane_console_dropped_lines_total.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "obs/log_sink.h"
#include "util/clock.h"

namespace isolane {

// Past this many bytes of UTF-8, a console line is cut, and a marker says how much went.
inline constexpr std::size_t kMaxConsoleLineBytes = 16 * 1024;

struct ConsoleLimits {
  double linesPerSecond = 1'000;
  double burstLines = 5'000;
  double bytesPerSecond = 1 << 20;  // 1 MiB a second per app
  double burstBytes = 4 << 20;
  std::chrono::milliseconds reportEvery{1'000};  // at most one "dropped" line per app this often
};

class ConsoleLog final : public LogSink {
 public:
  explicit ConsoleLog(ConsoleLimits limits = {}, const Clock& clock = SystemClock::instance())
      : limits_(limits), clock_(clock) {}

  // Safe from any thread.
  void write(std::string_view level, std::string_view app, std::string_view requestId,
             std::string_view text) override;

  // Lines dropped since the start, over every app. Safe from any thread.
  std::uint64_t droppedLines() const { return droppedLines_.load(std::memory_order_relaxed); }

 private:
  struct Bucket {
    double lines = 0;
    double bytes = 0;
    SteadyTime refilled{};
    bool fresh = true;
    // Dropped and not yet reported.
    std::uint64_t droppedLines = 0;
    std::uint64_t droppedBytes = 0;
    SteadyTime reported{};
  };
  // Takes one line of `size` bytes from the app's bucket; false when it has not got them.
  bool take(Bucket& bucket, std::size_t size, SteadyTime now);
  void reportDropped(std::string_view app, Bucket& bucket);

  const ConsoleLimits limits_;
  const Clock& clock_;
  std::mutex mutex_;  // guards buckets_
  // One per app name: a server's apps are its configuration's, so this stays small.
  std::unordered_map<std::string, Bucket> buckets_;
  std::atomic<std::uint64_t> droppedLines_{0};
};

}  // namespace isolane

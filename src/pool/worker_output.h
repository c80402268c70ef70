#pragma once
// WorkerOutput: what a worker writes on its stdout and stderr, which go to a pipe of its own that
// the master reads (never the master's own stderr: a worker could otherwise change the flags of
// the master's log descriptor, or write lines that pass for the master's). Each line is logged
// by the master: a JSON object (the worker's log lines) as it is, but for `process`, which must
// name a worker, and `pid`, which is the one the master spawned; anything else (node's own
// messages) as the `line` of a "worker output" entry. The worker is untrusted here as anywhere:
// a line is cut at kMaxWorkerLineBytes, and past kLinesPerSecond lines or kBytesPerSecond bytes
// a second (on average; bursts of four seconds' worth) lines are dropped, and counted in a
// "worker output dropped" line at most once a second.
//
// Thread rule: one thread (the worker's reader in the master).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "obs/log.h"
#include "util/clock.h"

namespace isolane {

class WorkerOutput {
 public:
  static constexpr std::size_t kMaxWorkerLineBytes = 256 * 1024;
  static constexpr double kLinesPerSecond = 5'000;
  static constexpr double kBytesPerSecond = 8 << 20;

  // Where the lines go: the master's log (logLine) unless a test says otherwise.
  using Sink = std::function<void(Level level, const std::string& json)>;
  explicit WorkerOutput(pid_t pid, Sink sink = {}, const Clock& clock = SystemClock::instance())
      : pid_(pid),
        sink_(sink ? std::move(sink) : Sink([](Level l, const std::string& j) { logLine(l, j); })),
        clock_(clock),
        refilled_(clock.now()),
        reported_(refilled_) {}
  // Bytes read from the worker's output pipe.
  void feed(const char* data, std::size_t size);
  // The pipe ended: a last line without its line break is logged too.
  void finish();

  // One line as the master logs it (exposed for tests): the JSON it writes, at that level.
  struct Rewritten {
    Level level;
    std::string json;
  };
  Rewritten rewrite(std::string_view line) const;

 private:
  void emit(std::string_view line);

  const pid_t pid_;
  const Sink sink_;
  const Clock& clock_;
  std::string partial_;   // a line not ended yet (at most kMaxWorkerLineBytes)
  bool cutting_ = false;  // the current line is past the cap: the rest of it is skipped
  double lineTokens_ = kLinesPerSecond * 4, byteTokens_ = kBytesPerSecond * 4;
  SteadyTime refilled_;
  SteadyTime reported_;
  std::uint64_t droppedLines_ = 0, droppedBytes_ = 0;
};

}  // namespace isolane

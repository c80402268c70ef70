#include "obs/console_log.h"

#include <algorithm>

#include "obs/log.h"

namespace isolane {

bool ConsoleLog::take(Bucket& bucket, std::size_t size, SteadyTime now) {
  if (bucket.fresh) {
    bucket.fresh = false;
    bucket.lines = limits_.burstLines;
    bucket.bytes = limits_.burstBytes;
    bucket.refilled = now;
    bucket.reported = now;
  } else if (now > bucket.refilled) {
    double seconds = std::chrono::duration<double>(now - bucket.refilled).count();
    bucket.lines = std::min(limits_.burstLines, bucket.lines + seconds * limits_.linesPerSecond);
    bucket.bytes = std::min(limits_.burstBytes, bucket.bytes + seconds * limits_.bytesPerSecond);
    bucket.refilled = now;
  }
  auto need = static_cast<double>(size);
  if (bucket.lines < 1 || bucket.bytes < need) return false;
  bucket.lines -= 1;
  bucket.bytes -= need;
  return true;
}

void ConsoleLog::reportDropped(std::string_view app, Bucket& bucket) {
  logEvent(Level::kWarn, "console output dropped: the app logs faster than its limit",
           {{"app", app},
            {"lines", bucket.droppedLines},
            {"bytes", bucket.droppedBytes},
            {"lines_per_second", limits_.linesPerSecond},
            {"bytes_per_second", limits_.bytesPerSecond}});
  bucket.droppedLines = 0;
  bucket.droppedBytes = 0;
}

void ConsoleLog::write(std::string_view level, std::string_view app, std::string_view requestId,
                       std::string_view text) {
  {
    SteadyTime now = clock_.now();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buckets_.find(std::string(app));
    if (it == buckets_.end()) it = buckets_.emplace(std::string(app), Bucket{}).first;
    Bucket& bucket = it->second;
    bool allowed = take(bucket, text.size(), now);
    if (!allowed) {
      ++bucket.droppedLines;
      bucket.droppedBytes += text.size();
      droppedLines_.fetch_add(1, std::memory_order_relaxed);
    }
    // What was dropped is said once the app's lines flow again, or once a second while they do
    // not, never more often.
    if (bucket.droppedLines > 0 && (allowed || now - bucket.reported >= limits_.reportEvery)) {
      bucket.reported = now;
      reportDropped(app, bucket);
    }
    if (!allowed) return;
  }
  Level lvl = level == "error"   ? Level::kError
              : level == "warn"  ? Level::kWarn
              : level == "debug" ? Level::kDebug
                                 : Level::kInfo;
  logEvent(lvl, text,
           {{"source", "console." + std::string(level)}, {"app", app}, {"request", requestId}});
}

}  // namespace isolane

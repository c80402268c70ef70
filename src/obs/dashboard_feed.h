#pragma once
// DashboardFeed: what /dashboard shows, live. While a page watches, once per interval a thread
// of its own reads the metrics registry (the figures /metrics renders at that moment), has the
// owner turn that reading and the previous one into a JSON snapshot (rates and percentiles over
// the interval), and hands it, as one server-sent event, to every page watching. The transport
// is the owner's: a watcher is a function that queues the message for its connection.
//
// Thread rule: watch(), latestMessage() and the destructor are safe from any thread; the
// snapshot function and the watchers run on the feed's thread (a watcher only queues or posts).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "obs/metric_reading.h"

namespace isolane {

class MetricsRegistry;

// The page itself (src/obs/dashboard/dashboard.html, embedded at build time).
std::string_view dashboardPage();

class DashboardFeed {
 public:
  // Makes a snapshot from this interval's reading and the one before (the first time, both are
  // the same reading).
  using Snapshot =
      std::function<nlohmann::json(const MetricReading& now, const MetricReading& before)>;
  // Delivers one message ("event: snapshot\ndata: {...}\n\n"); false when its page is gone.
  using Watcher = std::function<bool(const std::string& message)>;

  // Pages watching at once; past it, watch() refuses (each costs a snapshot per interval).
  static constexpr std::size_t kMaxWatchers = 16;

  DashboardFeed(const MetricsRegistry& registry, Snapshot snapshot,
                std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~DashboardFeed();
  DashboardFeed(const DashboardFeed&) = delete;
  DashboardFeed& operator=(const DashboardFeed&) = delete;

  // Adds a watcher and gives it the latest snapshot at once (on the calling thread). False when
  // kMaxWatchers already watch, or after stop().
  bool watch(Watcher watcher);
  // Drops every watcher and takes no new one (their transport is going away); the thread stops
  // with the feed.
  void stop();
  // The latest message ("" before the first snapshot).
  std::string latestMessage() const;
  std::chrono::milliseconds interval() const { return interval_; }

 private:
  void run();
  void tick(std::optional<MetricReading>& before);
  void forget(const std::vector<std::uint64_t>& ids);

  const MetricsRegistry& registry_;
  const Snapshot snapshot_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string latest_;
  std::uint64_t nextWatcher_ = 0;
  std::vector<std::pair<std::uint64_t, Watcher>> watchers_;  // by id, oldest first
  std::thread thread_;
};

// The common head of every snapshot: kind, version, time (Unix seconds), interval, uptime.
nlohmann::json snapshotHead(const char* kind, std::chrono::milliseconds interval,
                            std::chrono::steady_clock::time_point started);
// The recent events (obs/events.h) as the snapshot's "events" list, oldest first.
nlohmann::json eventsJson();
// A number, or null when there is none (a percentile of an interval with no observations).
nlohmann::json numberOrNull(const std::optional<double>& v);

}  // namespace isolane

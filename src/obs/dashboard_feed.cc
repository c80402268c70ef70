#include "obs/dashboard_feed.h"

#include "obs/events.h"
#include "obs/log.h"
#include "obs/metrics.h"

extern const char kDashboardHtml[];
extern const std::size_t kDashboardHtmlSize;

namespace isolane {

std::string_view dashboardPage() { return {kDashboardHtml, kDashboardHtmlSize}; }

namespace {

double unixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

DashboardFeed::DashboardFeed(const MetricsRegistry& registry, Snapshot snapshot,
                             std::chrono::milliseconds interval)
    : registry_(registry), snapshot_(std::move(snapshot)), interval_(interval) {
  thread_ = std::thread([this] { run(); });
}

DashboardFeed::~DashboardFeed() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool DashboardFeed::watch(Watcher watcher) {
  std::string latest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || watchers_.size() >= kMaxWatchers) return false;
    latest = latest_;
  }
  // The retry hint first (a page reconnects 2 s after losing the stream; the default is 3 s),
  // in one message with the latest snapshot.
  if (!watcher("retry: 2000\n\n" + latest)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  watchers_.push_back(std::move(watcher));
  return true;
}

std::string DashboardFeed::latestMessage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

void DashboardFeed::run() {
  MetricReading before = MetricReading::of(registry_);
  tick(before);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, interval_);
    if (stopping_) break;
    lock.unlock();
    tick(before);
    lock.lock();
  }
}

void DashboardFeed::tick(MetricReading& before) {
  std::string message;
  MetricReading now = MetricReading::of(registry_);
  try {
    // Strings are replaced where they are not UTF-8 (a worker's death reason may carry anything).
    message =
        "event: snapshot\ndata: " +
        snapshot_(now, before).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n\n";
  } catch (const std::exception& e) {
    // A bug in a snapshot must not end the feed (nor the process): the pages keep the last one.
    logEvent(Level::kError, "dashboard snapshot failed", {{"error", e.what()}});
    return;
  }
  before = std::move(now);
  std::vector<Watcher> watchers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_ = message;
    watchers.swap(watchers_);
  }
  // Called without the lock: a watcher may take its connection's lock.
  std::vector<Watcher> alive;
  for (Watcher& w : watchers) {
    if (w(message)) alive.push_back(std::move(w));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (Watcher& w : watchers_) alive.push_back(std::move(w));  // added meanwhile
  watchers_.swap(alive);
}

nlohmann::json snapshotHead(const char* kind, std::chrono::milliseconds interval,
                            std::chrono::steady_clock::time_point started) {
  return {{"kind", kind},
          {"version", ISOLANE_VERSION},
          {"time", unixSeconds(std::chrono::system_clock::now())},
          {"interval_s", std::chrono::duration<double>(interval).count()},
          {"uptime_s",
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
}

nlohmann::json eventsJson() {
  nlohmann::json out = nlohmann::json::array();
  for (const PoolEvent& e : recentEvents()) {
    out.push_back({{"time", unixSeconds(e.time)},
                   {"kind", e.kind},
                   {"slot", e.slot},
                   {"pid", e.pid},
                   {"detail", e.detail}});
  }
  return out;
}

nlohmann::json numberOrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace isolane

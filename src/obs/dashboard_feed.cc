#include "obs/dashboard_feed.h"

#include <algorithm>

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
  std::uint64_t id;
  {
    // The place is taken before the first message, so that pages arriving together cannot all
    // pass the count.
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || watchers_.size() >= kMaxWatchers) return false;
    id = ++nextWatcher_;
    watchers_.emplace_back(id, watcher);
    latest = latest_;
  }
  // The retry hint first (a page reconnects 2 s after losing the stream; the default is 3 s),
  // in one message with the latest snapshot.
  if (!watcher("retry: 2000\n\n" + latest)) forget({id});
  return true;
}

void DashboardFeed::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  watchers_.clear();
  wake_.notify_all();
}

std::string DashboardFeed::latestMessage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

void DashboardFeed::forget(const std::vector<std::uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(watchers_, [&](const auto& w) {
    return std::find(ids.begin(), ids.end(), w.first) != ids.end();
  });
}

void DashboardFeed::run() {
  std::optional<MetricReading> before;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      tick(before);
    } catch (const std::exception& e) {
      // A bug in a snapshot (or a collector) must not end the feed, nor the process: the pages
      // keep the last one.
      logEvent(Level::kError, "dashboard snapshot failed", {{"error", e.what()}});
    }
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

void DashboardFeed::tick(std::optional<MetricReading>& before) {
  std::vector<std::pair<std::uint64_t, Watcher>> watchers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    watchers = watchers_;
    if (watchers.empty()) {
      // Nobody watches: no reading (it runs every collector, some under the pool's lock) and
      // no snapshot. A page that comes later gets none that is old, and its first interval
      // starts then.
      latest_.clear();
      before.reset();
      return;
    }
  }
  MetricReading now = MetricReading::of(registry_);
  // Strings are replaced where they are not UTF-8 (a worker's death reason may carry anything).
  std::string message = "event: snapshot\ndata: " +
                        snapshot_(now, before ? *before : now)
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                        "\n\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_ = message;
  }
  // Called without the lock: a watcher may take its connection's lock.
  std::vector<std::uint64_t> gone;
  for (auto& [id, w] : watchers) {
    if (!w(message)) gone.push_back(id);
  }
  if (!gone.empty()) forget(gone);
  before = std::move(now);
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

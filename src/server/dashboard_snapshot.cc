#include "server/dashboard_snapshot.h"

#include <map>

#include "obs/dashboard_feed.h"
#include "pool/subprocess_backend.h"

namespace isolane {

namespace {

const char* stateName(const WorkerInfo& w, bool draining) {
  switch (w.state) {
    case WorkerState::kResting:
      return w.coolingDown ? "cooling-down" : "empty";
    case WorkerState::kSpawning:
    case WorkerState::kLoading:
      return "starting";
    case WorkerState::kKilling:
      return "killing";
    case WorkerState::kDraining:
      return "draining";
    case WorkerState::kReady:
      break;
  }
  if (draining) return "draining";
  if (w.quarantined) return "quarantined";
  if (w.wedgedThreads > 0) return "wedged";
  return "serving";
}

nlohmann::json workersJson(const std::vector<WorkerInfo>& workers, bool lanes, bool draining) {
  nlohmann::json out = nlohmann::json::array();
  for (const WorkerInfo& w : workers) {
    out.push_back({{"slot", w.slot},
                   {"pid", w.state == WorkerState::kResting ? 0 : w.pid},
                   {"lane", !lanes            ? "all"
                            : w.streamingLane ? "streaming"
                                              : "short"},
                   {"state", stateName(w, draining)},
                   {"inflight", w.inFlight},
                   {"pending", w.pending},
                   {"streams", w.streams},
                   {"wedged_threads", w.wedgedThreads},
                   {"longest_turn_s", std::chrono::duration<double>(w.longestTurn).count()},
                   {"rss_bytes", w.rssBytes},
                   {"heap_used_bytes", w.heapUsedBytes},
                   {"isolates", w.isolates}});
  }
  return out;
}

nlohmann::json lanesJson(const std::vector<WorkerInfo>& workers, bool lanes) {
  struct Lane {
    std::size_t workers = 0, inflight = 0, streams = 0;
  };
  std::map<std::string, Lane> byName;
  for (const WorkerInfo& w : workers) {
    Lane& lane = byName[!lanes ? "all" : w.streamingLane ? "streaming" : "short"];
    ++lane.workers;
    lane.inflight += w.inFlight;
    lane.streams += w.streams;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, lane] : byName) {
    out.push_back({{"name", name},
                   {"workers", lane.workers},
                   {"inflight", lane.inflight},
                   {"streams", lane.streams}});
  }
  return out;
}

nlohmann::json appsJson(const std::vector<std::string>& apps, const MetricReading& now,
                        const MetricReading& before) {
  auto elapsed = now.at - before.at;
  std::map<std::string, double> totals = now.sumBy("isolane_requests_total", "app");
  std::map<std::string, double> earlier = before.sumBy("isolane_requests_total", "app");
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& app : apps) {
    double errors = 0;
    for (const auto& [status, n] : now.sumBy("isolane_requests_total", "status", {{"app", app}})) {
      if (!status.empty() && status[0] == '5') errors += n;
    }
    LabelMatch match{{"app", app}};
    out.push_back({{"app", app},
                   {"requests_total", totals[app]},
                   {"errors_total", errors},
                   {"rps", ratePerSecond(totals[app], earlier[app], elapsed)},
                   {"p50_s", numberOrNull(now.quantileSince(
                                 before, "isolane_request_duration_seconds", 0.5, match))},
                   {"p99_s", numberOrNull(now.quantileSince(
                                 before, "isolane_request_duration_seconds", 0.99, match))}});
  }
  return out;
}

nlohmann::json shedsJson(const MetricReading& now, const MetricReading& before) {
  std::map<std::string, double> earlier =
      before.sumBy("isolane_admission_rejected_total", "reason");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [reason, total] : now.sumBy("isolane_admission_rejected_total", "reason")) {
    out.push_back({{"reason", reason},
                   {"total", total},
                   {"per_s", ratePerSecond(total, earlier[reason], now.at - before.at)}});
  }
  return out;
}

}  // namespace

nlohmann::json serverSnapshot(const ServerDashboardView& view, const MetricReading& now,
                              const MetricReading& before, bool ready, bool draining) {
  nlohmann::json s = snapshotHead("server", view.interval, view.started);
  s["ready"] = ready;
  s["draining"] = draining;
  s["pool"] = {{"inflight", now.sum("isolane_pool_inflight")},
               {"queue", now.sum("isolane_queue_depth")},
               {"streams", now.sum("isolane_http_streams_open")}};
  std::vector<WorkerInfo> workers;
  bool lanes = false;
  if (view.pool) {
    workers = view.pool->workers();
    for (const WorkerInfo& w : workers) lanes = lanes || w.streamingLane;
  }
  s["lanes"] = lanesJson(workers, lanes);
  s["workers"] = workersJson(workers, lanes, draining);
  s["apps"] = appsJson(view.apps, now, before);
  s["sheds"] = shedsJson(now, before);
  s["events"] = eventsJson();
  return s;
}

}  // namespace isolane

#include "exec/exec_dashboard.h"

#include "obs/dashboard_feed.h"

namespace isolane {

namespace {

// Count, rate and percentiles of one histogram over the interval.
nlohmann::json latencyJson(const MetricReading& now, const MetricReading& before,
                           const std::string& histogram) {
  double total = now.sum(histogram);
  return {{"total", total},
          {"per_s", ratePerSecond(total, before.sum(histogram), now.at - before.at)},
          {"p50_s", numberOrNull(now.quantileSince(before, histogram, 0.5))},
          {"p99_s", numberOrNull(now.quantileSince(before, histogram, 0.99))}};
}

}  // namespace

nlohmann::json executorSnapshot(const ExecPool& pool, std::chrono::milliseconds interval,
                                std::chrono::steady_clock::time_point started,
                                const MetricReading& now, const MetricReading& before) {
  nlohmann::json s = snapshotHead("executor", interval, started);
  bool stopping = pool.stopping();
  s["ready"] = !stopping;
  s["draining"] = stopping;

  double total = now.sum("isolane_executions_total");
  nlohmann::json outcomes = nlohmann::json::array();
  for (const auto& [outcome, n] : now.sumBy("isolane_executions_total", "outcome")) {
    outcomes.push_back({{"outcome", outcome}, {"total", n}});
  }
  s["executions"] = {
      {"total", total},
      {"per_s", ratePerSecond(total, before.sum("isolane_executions_total"), now.at - before.at)},
      {"p50_s", numberOrNull(now.quantileSince(before, "isolane_exec_duration_seconds", 0.5))},
      {"p99_s", numberOrNull(now.quantileSince(before, "isolane_exec_duration_seconds", 0.99))},
      {"by_outcome", outcomes}};
  s["queue"] = {{"depth", now.sum("isolane_exec_queue_depth")},
                {"wait_p50_s",
                 numberOrNull(now.quantileSince(before, "isolane_exec_queue_wait_seconds", 0.5))},
                {"wait_p99_s",
                 numberOrNull(now.quantileSince(before, "isolane_exec_queue_wait_seconds", 0.99))}};
  s["tool_calls"] = latencyJson(now, before, "isolane_exec_tool_call_seconds");

  nlohmann::json workers = nlohmann::json::array();
  for (const ExecPool::WorkerView& w : pool.workerViews()) {
    workers.push_back({{"id", w.id},
                       {"pid", w.pid},
                       {"state", w.state},
                       {"running", w.running},
                       {"executions", w.executions},
                       {"rss_bytes", w.rssBytes}});
  }
  s["workers"] = workers;
  s["events"] = eventsJson();
  return s;
}

}  // namespace isolane

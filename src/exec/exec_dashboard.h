#pragma once
// The code-mode executor's dashboard snapshot (kind "executor"): executions per second and
// their percentiles, the queue and its wait, tool-call latency, and the workers as the pool sees
// them now. Same page and transport as the server's (obs/dashboard_feed.h).
//
// Thread rule: called on the dashboard feed's thread; ExecPool::workerViews is safe from any.

#include <chrono>
#include <nlohmann/json.hpp>

#include "exec/exec_pool.h"
#include "obs/metric_reading.h"

namespace isolane {

nlohmann::json executorSnapshot(const ExecPool& pool, std::chrono::milliseconds interval,
                                std::chrono::steady_clock::time_point started,
                                const MetricReading& now, const MetricReading& before);

}  // namespace isolane

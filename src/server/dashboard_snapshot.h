#pragma once
// The server's dashboard snapshot (kind "server"): the pool's workers and lanes as the backend
// sees them now, and per-app rates, percentiles and sheds from two metric readings. The fields
// are listed in the README ("The dashboard"); the page is src/obs/dashboard/dashboard.html.
//
// Thread rule: called on the dashboard feed's thread; what it reads is safe from any thread.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "obs/metric_reading.h"
#include "pool/backend.h"

namespace isolane {

class SubprocessBackend;

struct ServerDashboardView {
  const SubprocessBackend* pool = nullptr;  // null: the in-process backend (no workers to show)
  std::vector<std::string> apps;            // every configured app, shown before its first request
  std::chrono::milliseconds interval{1000};
  std::chrono::steady_clock::time_point started{};
};

nlohmann::json serverSnapshot(const ServerDashboardView& view, const MetricReading& now,
                              const MetricReading& before, bool ready, bool draining);

}  // namespace isolane

#pragma once
// AdminRoutes: what the admin listener answers by itself. /metrics (Prometheus text), /healthz
// (the process runs), /readyz (a worker serves and no stop has begun), /dashboard (the live pool
// page) and /dashboard/events (its snapshots, as server-sent events, one per second).
//
// Thread rule: operator() runs on the admin listener's reactor thread; the feed has its own
// thread (obs/dashboard_feed.h); everything it reads is safe from any thread.

#include <functional>
#include <optional>
#include <string_view>

#include "front/http_server.h"
#include "obs/dashboard_feed.h"
#include "server/dashboard_snapshot.h"

namespace isolane {

class AdminRoutes {
 public:
  // `ready` and `draining` are the server's (safe from any thread).
  AdminRoutes(const MetricsRegistry& metrics, ServerDashboardView view, std::function<bool()> ready,
              std::function<bool()> draining);

  std::optional<InternalReply> operator()(std::string_view path);
  // The admin listener has stopped: the feed lets go of its pages (and takes no more).
  void stop() { feed_.stop(); }

 private:
  InternalReply watchDashboard();

  const MetricsRegistry& metrics_;
  const std::function<bool()> ready_;
  const std::function<bool()> draining_;
  DashboardFeed feed_;  // last: its thread reads the members above
};

}  // namespace isolane

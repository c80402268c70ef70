#include "server/admin_routes.h"

#include "ipc/body_pipe.h"
#include "obs/metrics.h"

namespace isolane {

namespace {

// A page that has this much of the feed unread misses snapshots until it catches up: a stalled
// browser tab costs a bounded buffer, not one snapshot per second for ever.
constexpr std::size_t kMaxUnreadFeedBytes = 256u << 10;

}  // namespace

AdminRoutes::AdminRoutes(const MetricsRegistry& metrics, ServerDashboardView view,
                         std::function<bool()> ready, std::function<bool()> draining)
    : metrics_(metrics),
      ready_(std::move(ready)),
      draining_(std::move(draining)),
      feed_(
          metrics,
          [this, view = std::move(view)](const MetricReading& now, const MetricReading& before) {
            return serverSnapshot(view, now, before, ready_(), draining_());
          },
          view.interval) {}

std::optional<InternalReply> AdminRoutes::operator()(std::string_view path) {
  if (path == "/metrics") {
    return InternalReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
  }
  if (path == "/healthz") return InternalReply{200, "text/plain; charset=utf-8", "ok\n"};
  if (path == "/readyz") {
    if (draining_())
      return InternalReply{503, "text/plain; charset=utf-8", "not ready: draining\n"};
    bool ready = ready_();
    return InternalReply{ready ? 200u : 503u, "text/plain; charset=utf-8",
                         ready ? "ready\n" : "not ready: no worker is serving yet\n"};
  }
  if (path == "/dashboard") {
    return InternalReply{200, "text/html; charset=utf-8", std::string(dashboardPage())};
  }
  if (path == "/dashboard/events") return watchDashboard();
  return std::nullopt;
}

InternalReply AdminRoutes::watchDashboard() {
  // The consumer is our own front, which bounds what it holds: no window to enforce. The feed
  // keeps only a weak reference, so a closed page's pipe goes with its connection.
  auto pipe = std::make_shared<BodyPipe>([](std::size_t) {}, /*enforceWindow=*/false);
  bool watching = feed_.watch([weak = std::weak_ptr<BodyPipe>(pipe)](const std::string& message) {
    auto p = weak.lock();
    if (!p || p->abandoned()) return false;
    if (p->unacknowledgedBytes() + message.size() <= kMaxUnreadFeedBytes) p->push(message);
    return true;
  });
  if (!watching) {
    return InternalReply{503, "text/plain; charset=utf-8",
                         "too many dashboards are open; close one and retry\n"};
  }
  InternalReply reply{200, "text/event-stream; charset=utf-8", {}};
  reply.stream = std::move(pipe);
  return reply;
}

}  // namespace isolane

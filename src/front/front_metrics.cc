#include "front/front_metrics.h"

namespace isolane {

AppFigures::AppFigures(Family<Counter>& requests, Family<Histogram>& duration, std::string app)
    : requests_(requests), app_(std::move(app)), duration_(duration.with({app_})) {}

void AppFigures::record(int status, double seconds) {
  duration_.observe(seconds);
  int i = status - kFirstStatus;
  if (i < 0 || i >= kStatuses) {
    requests_.with({app_, std::to_string(status)}).inc();
    return;
  }
  Counter* counter = byStatus_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
  if (!counter) {
    // Two threads may both look it up: the family gives both the same counter.
    counter = &requests_.with({app_, std::to_string(status)});
    byStatus_[static_cast<std::size_t>(i)].store(counter, std::memory_order_release);
  }
  counter->inc();
}

FrontMetrics::FrontMetrics(MetricsRegistry& registry)
    : requests(registry.counter("isolane_requests_total", "Requests answered, by app and status",
                                {"app", "status"})),
      duration(registry.histogram("isolane_request_duration_seconds",
                                  "Time from a request's head to its answer", {"app"},
                                  latencyBuckets())),
      // Label-less figures exist (at 0) from the first scrape on, not from their first change.
      connections(registry.gauge("isolane_http_connections", "Open client connections", {})
                      .with({})),
      bufferedBytes(registry
                        .gauge("isolane_http_buffered_bytes",
                               "Bytes the front holds for its connections: unparsed input, "
                               "request bodies their app has not read yet, answers being written",
                               {})
                        .with({})),
      badRequests(registry.counter("isolane_http_bad_requests_total",
                                   "Requests refused by the HTTP front before routing, by reason",
                                   {"reason"})),
      connectionsRefused(registry.counter(
          "isolane_http_connections_refused_total",
          "Connections answered 503 and closed at once, by reason (connections, descriptors)",
          {"reason"})),
      idleClosed(registry
                     .counter("isolane_http_idle_connections_closed_total",
                              "Idle connections closed to make room under max_connections", {})
                     .with({})),
      internalErrors(registry
                         .counter("isolane_http_internal_errors_total",
                                  "Unexpected failures on a connection (a bug: see the log)", {})
                         .with({})),
      streamsOpen(registry
                      .gauge("isolane_http_streams_open",
                             "Streamed responses being written to clients", {})
                      .with({})),
      streamBytes(registry
                      .counter("isolane_http_stream_bytes_total",
                               "Bytes of streamed response bodies written to clients", {})
                      .with({})),
      streamsCut(registry.counter(
          "isolane_http_streams_cut_total",
          "Streamed responses that ended before their end, by reason (client, failed)",
          {"reason"})),
      buffersFull(registry.counter(
          "isolane_http_client_buffers_full_total",
          "Requests answered 503 because the bytes held for clients reached client_buffer_mb, "
          "by what did not fit (input, answer, stream)",
          {"what"})) {}

AppFigures& FrontMetrics::app(const std::string& name) {
  std::lock_guard<std::mutex> lock(appsMu_);
  auto& figures = apps_[name];
  if (!figures) figures = std::make_unique<AppFigures>(requests, duration, name);
  return *figures;
}

}  // namespace isolane

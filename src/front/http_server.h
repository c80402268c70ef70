#pragma once
// HttpServer: HTTP/1.1 on reactor threads (Boost.Beast). Accepts connections up to a limit (past
// it, the oldest idle connection is closed to make room, else the new client gets a 503), backs
// off when the process runs out of descriptors, and runs one HttpSession per connection. Reactor
// threads never enter V8: a parsed request goes to the Backend and its answer comes back posted
// to the connection's strand. No exception escapes a reactor thread.

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "front/router.h"
#include "obs/metrics.h"
#include "pool/backend.h"
#include "util/byte_budget.h"
#include "util/result.h"

namespace isolane {

// An answer the server gives itself (the admin listener's /metrics, /healthz, /readyz,
// /dashboard). With `stream`, the body is what comes through that pipe (the dashboard's feed).
struct InternalReply {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  std::shared_ptr<BodyPipe> stream = {};
};
// Consulted before routing; nullopt: not an internal path. Called on a reactor thread.
using InternalHandler = std::function<std::optional<InternalReply>(std::string_view path)>;

// Per-app request counts and latency, recorded when the answer is written; and what the front
// refused or shed on its own.
struct FrontMetrics {
  explicit FrontMetrics(MetricsRegistry& registry)
      : requests(registry.counter("isolane_requests_total", "Requests answered, by app and status",
                                  {"app", "status"})),
        duration(registry.histogram("isolane_request_duration_seconds",
                                    "Time from a request's head to its answer", {"app"},
                                    latencyBuckets())),
        connections(registry.gauge("isolane_http_connections", "Open client connections", {})),
        bufferedBytes(registry.gauge(
            "isolane_http_buffered_bytes",
            "Bytes the front holds for its connections: unparsed input, request bodies their "
            "app has not read yet, answers being written",
            {})),
        badRequests(registry.counter("isolane_http_bad_requests_total",
                                     "Requests refused by the HTTP front before routing, by reason",
                                     {"reason"})),
        connectionsRefused(registry.counter(
            "isolane_http_connections_refused_total",
            "Connections answered 503 and closed at once, by reason (connections, descriptors)",
            {"reason"})),
        idleClosed(registry.counter("isolane_http_idle_connections_closed_total",
                                    "Idle connections closed to make room under max_connections",
                                    {})),
        internalErrors(registry.counter("isolane_http_internal_errors_total",
                                        "Unexpected failures on a connection (a bug: see the log)",
                                        {})),
        streamsOpen(registry.gauge("isolane_http_streams_open",
                                   "Streamed responses being written to clients", {})),
        streamBytes(registry.counter("isolane_http_stream_bytes_total",
                                     "Bytes of streamed response bodies written to clients", {})),
        streamsCut(registry.counter(
            "isolane_http_streams_cut_total",
            "Streamed responses that ended before their end, by reason (client, failed)",
            {"reason"})),
        buffersFull(registry.counter(
            "isolane_http_client_buffers_full_total",
            "Requests answered 503 because the bytes held for clients reached client_buffer_mb, "
            "by what did not fit (input, answer, stream)",
            {"what"})) {
    // Label-less figures exist (at 0) from the first scrape on, not from their first change.
    connections.with({});
    bufferedBytes.with({});
    idleClosed.with({});
    internalErrors.with({});
    streamsOpen.with({});
    streamBytes.with({});
  }
  Family<Counter>& requests;
  Family<Histogram>& duration;
  Family<Gauge>& connections;
  Family<Gauge>& bufferedBytes;
  Family<Counter>& badRequests;
  Family<Counter>& connectionsRefused;
  Family<Counter>& idleClosed;
  Family<Counter>& internalErrors;
  Family<Gauge>& streamsOpen;
  Family<Counter>& streamBytes;
  Family<Counter>& streamsCut;
  Family<Counter>& buffersFull;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port (tests)
  std::size_t reactorThreads = 1;
  std::size_t maxHeaderBytes = std::size_t{16} * 1024;  // over: 431
  std::size_t maxBodyBytes = std::size_t{1024} * 1024;  // over: 413
  std::chrono::milliseconds headerTimeout{10'000};      // a request's head must arrive within this
  std::chrono::milliseconds bodyTimeout{30'000};        // and its body within this
  std::chrono::milliseconds bodyReadTimeout{10'000};    // nor stall longer than this between bytes
  std::chrono::milliseconds idleTimeout{30'000};        // keep-alive connection with no request
  std::chrono::milliseconds sendTimeout{30'000};        // an answer the client reads none of
  // During a stop, a keep-alive connection idle this long is closed. Until then a request on it
  // is served (answered with Connection: close): a balancer that closes its idle connections
  // sooner never sends on one isolane is closing.
  std::chrono::milliseconds drainIdle{5'000};
  // Open connections. At the limit the oldest idle one is closed for a new client; with none
  // idle, the new client is answered 503 + Retry-After and closed.
  std::size_t maxConnections = 10'000;
  // Peers whose well-formed X-Request-Id is adopted as the request's id (a load balancer that
  // made one); from any other peer the header is only passed to the app. IPv4-mapped IPv6
  // addresses compare as the IPv4 address they map, here and in the peer.
  std::vector<boost::asio::ip::address> trustedProxies;
  // Every byte held for clients, over every connection (front/client_buffers.h): unparsed input,
  // request bodies not yet read by their app, whole answers being written, the window of each
  // streamed answer. Null: unbounded (the admin listener, which answers small pages).
  std::shared_ptr<ByteBudget> clientBuffers;
  InternalHandler internal;         // optional
  FrontMetrics* metrics = nullptr;  // optional
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const Router& router, Backend& backend);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts the reactor threads. The error says which address could not be bound.
  Status start();
  // The bound port (useful with port 0).
  std::uint16_t port() const;

  // Safe from any thread. Stops accepting and drains for up to `drain`: requests in flight
  // finish, requests that arrive on open connections are still served (with Connection: close),
  // idle connections close after drainIdle; the drain ends early when no connection is left.
  // Then event streams (text/event-stream) still open get their clean end, `drained` is called
  // (it should make the backend answer whatever still runs; other streams are cut), those
  // answers are written, every connection is closed and the reactor threads are joined.
  void stop(std::chrono::milliseconds drain, const std::function<void()>& drained = {});

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace isolane

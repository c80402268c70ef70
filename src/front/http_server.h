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

#include "front/front_metrics.h"
#include "front/router.h"
#include "ipc/reactor.h"
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

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port (tests)
  // Where connections are served: a reactor shared with the backend (ipc/reactor.h), which must
  // outlive the server; null: the server makes its own, of reactorThreads threads.
  Reactor* reactor = nullptr;
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

  // Binds and starts accepting. The error says which address could not be bound.
  Status start();
  // The bound port (useful with port 0).
  std::uint16_t port() const;

  // Safe from any thread. Stops accepting and drains for up to `drain`: requests in flight
  // finish, requests that arrive on open connections are still served (with Connection: close),
  // idle connections close after drainIdle; the drain ends early when no connection is left.
  // Then event streams (text/event-stream) still open get their clean end, `drained` is called
  // (it should make the backend answer whatever still runs; other streams are cut), those
  // answers are written, every connection is closed and, when the server made its reactor, its
  // threads are joined.
  void stop(std::chrono::milliseconds drain, const std::function<void()>& drained = {});

  struct Impl;

 private:
  ReactorRef reactor_;  // declared first: an own reactor outlives impl_'s handlers
  // Shared with the connections and the acceptor's handlers, which may outlive the server on a
  // reactor it does not own.
  std::shared_ptr<Impl> impl_;
};

}  // namespace isolane

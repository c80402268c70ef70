#pragma once
// ExecDaemon: `isolane executor`, code mode over the network. HTTP/1.1 on Boost.Beast:
// POST /v1/execute runs one execution without tools; a WebSocket at /v1/session carries many
// executions at once with their tool calls (exec/exec_session.h); /healthz, /readyz, /metrics
// and /dashboard as for `serve`. When a token is set, every request but the health probes must
// carry `Authorization: Bearer <token>` (a browser opens /dashboard?token=<token> once: the
// token then travels in a cookie limited to /dashboard); listening beyond loopback requires one.
// The token is checked on a request's head, before any of its body is read. Every byte held for
// clients (request bodies, WebSocket messages coming in and going out, answers being written)
// is charged to one budget, `maxBufferedBytes`: past it a request gets 503 + Retry-After and a
// socket is closed with 1013 (try again later).
//
// Thread rule: start() and stop() from one thread; sessions run on the daemon's I/O threads and
// hand executions to the pool, whose callbacks post back to them.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/exec_json.h"
#include "exec/exec_pool.h"
#include "obs/dashboard_feed.h"
#include "obs/metrics.h"
#include "util/byte_budget.h"
#include "util/result.h"

namespace isolane {

struct ExecDaemonOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8090;  // 0: any free port (tests)
  std::string token;          // empty: no authentication (loopback only)
  std::size_t ioThreads = 1;
  std::size_t maxBodyBytes = 8u << 20;            // a POST body or one WebSocket message
  std::size_t maxInflightPerSocket = 1024;        // executions one WebSocket may run at once
  std::size_t maxSocketBacklogBytes = 16u << 20;  // unsent messages before the socket is closed
  std::size_t maxConnections = 1024;  // HTTP connections and sockets open at once; more: closed
  std::size_t maxBufferedBytes = 256u << 20;  // held for every client together (see above)
  // A WebSocket message must arrive whole within this of its first byte: a client cannot keep a
  // message half-sent (and its bytes held) by trickling it.
  std::chrono::milliseconds messageTimeout{30'000};
  ExecDefaults defaults;
};

// Whether `host` is a loopback address (or "localhost").
bool isLoopbackHost(const std::string& host);

class ExecDaemon {
 public:
  ExecDaemon(ExecDaemonOptions options, ExecPool& pool, MetricsRegistry& metrics);
  ~ExecDaemon();
  ExecDaemon(const ExecDaemon&) = delete;
  ExecDaemon& operator=(const ExecDaemon&) = delete;

  Status start();
  std::uint16_t port() const { return port_; }
  // A graceful stop: stopAccepting(), then the caller shuts the pool down (results of draining
  // executions still reach their clients), then stop() ends every connection and the threads.
  void stopAccepting();
  void stop();

  // A connection the daemon can close when it stops (on the connection's own strand).
  class Closable {
   public:
    virtual ~Closable() = default;
    virtual void closeSoon() = 0;
  };

  // For sessions (exec_daemon.cc, exec_session.cc).
  struct Shared {
    Shared(ExecDaemonOptions o, ExecPool& p, MetricsRegistry& m, Family<Counter>& r)
        : options(std::move(o)),
          pool(p),
          metrics(m),
          requests(r),
          buffers(std::make_shared<ByteBudget>(options.maxBufferedBytes)) {}
    ExecDaemonOptions options;
    ExecPool& pool;
    MetricsRegistry& metrics;
    Family<Counter>& requests;                  // by route and status
    const std::shared_ptr<ByteBudget> buffers;  // options.maxBufferedBytes
    std::atomic<std::size_t> connections{0};
    // Every connection, to close them all on stop(): a connection's objects must be gone before
    // the io_context is (Beast's WebSocket service outlives none of its streams).
    std::mutex sessionsMu;
    std::vector<std::weak_ptr<Closable>> sessions;
    void track(const std::shared_ptr<Closable>& session);
    std::unique_ptr<DashboardFeed> dashboard;  // made by start(), before the first connection
  };

 private:
  void accept();

  std::shared_ptr<Shared> shared_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace isolane

#pragma once
// Server: wires the parts (backend, router, HTTP front) from a ServerConfig. Independent of the
// command line, so tests start a real one on port 0.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "front/http_server.h"
#include "front/router.h"
#include "ipc/reactor.h"
#include "obs/console_log.h"
#include "pool/backend.h"
#include "server/admin_routes.h"
#include "server/config.h"
#include "util/result.h"

namespace isolane {

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads every app (a module that fails to load is an error naming its file and line) and
  // starts listening.
  Status start();
  std::uint16_t port() const;
  std::uint16_t adminPort() const;  // 0 when the admin listener is off

  // The backend, for tests that look at workers.
  Backend& backend() { return *backend_; }

  // Safe from any thread. Stops accepting, drains for up to config.shutdownDrain (see
  // HttpServer::stop), then stops the backend. /readyz answers 503 from its start.
  void stop();
  // Safe from any thread: what /readyz says (a worker serves, and no stop has begun).
  bool ready() const;

  const ServerConfig& config() const { return config_; }

  // Safe from any thread: requests handed to the backend and not answered yet.
  std::size_t inFlight() const { return backend_ ? backend_->inFlight() : 0; }

 private:
  ServerConfig config_;
  // What the front and the backend hold for clients, together (config client_buffer_mb).
  const std::shared_ptr<ByteBudget> clientBuffers_;
  std::atomic<bool> draining_{false};
  ConsoleLog console_;
  MetricsRegistry metrics_;  // before everything that registers in it
  FrontMetrics frontMetrics_{metrics_};
  // The HTTP front's connections and the workers' sockets, on the same threads (config
  // reactor_threads): a worker's answer is written to its client by the thread that read it.
  // Before the backend and the listeners, which it outlives.
  std::unique_ptr<Reactor> reactor_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> http_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<AdminRoutes> adminRoutes_;  // before the listener that calls it
  std::unique_ptr<Router> adminRouter_;
  std::unique_ptr<HttpServer> adminHttp_;
};

// The backends, built from the config's limits. `run` uses the in-process one, which exists
// only in the engine (inprocess_factory.cc); linked into the master, makeInProcessBackend returns
// null (inprocess_unavailable.cc).
// `metrics`: where its admission counts sheds (null: nowhere).
std::unique_ptr<Backend> makeInProcessBackend(const ServerConfig& config, LogSink& log,
                                              MetricsRegistry* metrics = nullptr);
// `clientBuffers`: the budget of bytes held for clients it shares with a front (null: its own).
// `reactor`: where the workers' sockets are read, shared with a front (null: its own).
std::unique_ptr<Backend> makeSubprocessBackend(const ServerConfig& config, MetricsRegistry& metrics,
                                               std::shared_ptr<ByteBudget> clientBuffers = {},
                                               Reactor* reactor = nullptr);
// What the backend is told of each configured app.
std::vector<AppSpec> appSpecs(const ServerConfig& config);

}  // namespace isolane

#include "server/server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "obs/events.h"
#include "obs/log.h"
#include "pool/subprocess_backend.h"
#include "server/engine_command.h"

namespace isolane {

std::unique_ptr<Backend> makeSubprocessBackend(const ServerConfig& config, MetricsRegistry& metrics,
                                               std::shared_ptr<ByteBudget> clientBuffers,
                                               Reactor* reactor) {
  PoolOptions pool = config.pool;
  pool.clientBuffers = clientBuffers;
  pool.reactor = reactor;
  for (const AppConfig& app : config.apps) {
    if (app.ownProcess) pool.ownApps.emplace_back(app.name, app.ownWorkers);
  }
  pool.codeCacheDir = effectiveCodeCacheDir(config);
  pool.requestTimeout = config.requestTimeout;
  // A request may wait behind the longest synchronous turn any app may take.
  pool.requestCpuLimit = config.requestCpuLimit;
  for (const AppConfig& app : config.apps) {
    pool.requestCpuLimit = std::max(pool.requestCpuLimit, app.requestCpuLimit);
  }
  pool.streamIdleTimeout = config.streamIdleTimeout;
  pool.executorThreads = std::max<std::size_t>(config.executorThreads, 1);
  std::vector<std::string> args = {
      "worker",
      "--cpu-ms",
      std::to_string(config.requestCpuLimit.count()),
      "--timeout-ms",
      std::to_string(config.requestTimeout.count()),
      "--stream-idle-ms",
      std::to_string(config.streamIdleTimeout.count()),
      "--stream-max-ms",
      std::to_string(config.streamMaxDuration.count()),
      "--heap-mb",
      std::to_string(config.heapLimitMb),
      "--queue-capacity",
      std::to_string(config.queueCapacity),
      "--max-frame-bytes",
      std::to_string(pool.maxFrameBytes),
      "--threads",
      std::to_string(config.executorThreads),
      "--max-isolates",
      std::to_string(config.maxIsolates),
      "--isolate-idle-ms",
      std::to_string(config.isolateIdleTimeout.count()),
      "--sandbox",
      config.pool.sandbox ? "true" : "false",
      // One thread in the whole pool: a reserve keeps one app's long turns from holding up the
      // others (see PoolOptions::reserveThread).
      "--reserve-thread",
      config.pool.reserveThread && config.pool.size == 1 && config.executorThreads == 1 ? "true"
                                                                                        : "false",
  };
  // Workers are the engine in node; a configured worker binary (tests: a fake worker, or the
  // `isolane` executable, whose `worker` command starts the engine) is run as BINARY worker ....
  if (config.workerBinary.empty()) {
    pool.workerCommand = engineCommand(args);
  } else {
    pool.workerCommand = {config.workerBinary};
    pool.workerCommand.insert(pool.workerCommand.end(), args.begin(), args.end());
  }
  return std::make_unique<SubprocessBackend>(std::move(pool), metrics);
}

// Raises the soft descriptor limit to the hard one (a server that holds thousands of connections
// needs them), and keeps max_connections below what the process can open, with room for the
// worker sockets, the admin listener and files.
std::size_t connectionLimit(std::size_t wanted) {
  constexpr rlim_t kReserve = 256;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      logEvent(Level::kDebug, "descriptor limit raised",
               {{"from", static_cast<std::int64_t>(before)},
                {"to", static_cast<std::int64_t>(limit.rlim_cur)}});
    } else {
      getrlimit(RLIMIT_NOFILE, &limit);
    }
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > wanted + kReserve) return wanted;
  std::size_t capped =
      limit.rlim_cur > 2 * kReserve ? limit.rlim_cur - kReserve : limit.rlim_cur / 2;
  logEvent(Level::kWarn, "max_connections lowered to fit the descriptor limit",
           {{"max_connections", static_cast<std::int64_t>(wanted)},
            {"descriptor_limit", static_cast<std::int64_t>(limit.rlim_cur)},
            {"now", static_cast<std::int64_t>(capped)}});
  return capped;
}

std::vector<AppSpec> appSpecs(const ServerConfig& config) {
  std::vector<AppSpec> specs;
  for (const AppConfig& app : config.apps) {
    AppSpec spec{app.name, app.module, app.vars};
    spec.fetchAllow = app.fetchAllow;
    spec.services = app.services;
    spec.heapLimitMb = app.heapLimitMb;
    spec.cpuLimitMs = static_cast<std::uint32_t>(app.requestCpuLimit.count());
    specs.push_back(std::move(spec));
  }
  return specs;
}

Server::Server(ServerConfig config)
    : config_(std::move(config)),
      clientBuffers_(std::make_shared<ByteBudget>(config_.clientBufferMb << 20)) {}

Server::~Server() {
  stop();
  // The connections' handlers still queued on the reactor go with it, before the backend and
  // the router they were handed.
  adminHttp_.reset();
  http_.reset();
  reactor_.reset();
}

Status Server::start() {
  reactor_ = std::make_unique<Reactor>(config_.reactorThreads, "isolane-io",
                                       [this] { frontMetrics_.internalErrors.inc(); });
  if (config_.backend == "inprocess") {
    backend_ = makeInProcessBackend(config_, console_, &metrics_);
    if (!backend_) {
      return Error{
          "the in-process backend runs only inside the engine (the `isolane` command "
          "starts it there for `serve` with backend = \"inprocess\")"};
    }
  } else {
    backend_ = makeSubprocessBackend(config_, metrics_, clientBuffers_, reactor_.get());
  }
  std::vector<Mount> mounts;
  for (const AppConfig& app : config_.apps) {
    mounts.push_back(Mount{app.name, app.route, app.host, app.stripPrefix, app.streaming});
  }
  if (Status s = backend_->start(appSpecs(config_)); !s) return s;
  router_ = std::make_unique<Router>(std::move(mounts));

  HttpServerOptions http;
  http.host = config_.listenHost;
  http.port = config_.listenPort;
  http.reactor = reactor_.get();
  http.maxBodyBytes = config_.maxBodyBytes;
  http.maxHeaderBytes = config_.maxHeaderBytes;
  http.clientBuffers = clientBuffers_;
  http.maxConnections = connectionLimit(effectiveMaxConnections(config_));
  http.headerTimeout = config_.headerTimeout;
  http.bodyTimeout = config_.bodyTimeout;
  http.bodyReadTimeout = config_.bodyReadTimeout;
  http.idleTimeout = config_.idleTimeout;
  http.sendTimeout = config_.sendTimeout;
  http.drainIdle = config_.drainIdle;
  for (const std::string& proxy : config_.trustedProxies) {
    http.trustedProxies.push_back(boost::asio::ip::make_address(proxy));  // checked by the parser
  }
  http.metrics = &frontMetrics_;
  http_ = std::make_unique<HttpServer>(http, *router_, *backend_);
  if (Status s = http_->start(); !s) return s;
  if (!config_.adminHost.empty()) {
    HttpServerOptions admin;
    admin.host = config_.adminHost;
    admin.port = config_.adminPort;
    admin.reactor = reactor_.get();
    ServerDashboardView view;
    view.pool = dynamic_cast<const SubprocessBackend*>(backend_.get());
    for (const AppConfig& app : config_.apps) view.apps.push_back(app.name);
    view.started = started_;
    adminRoutes_ = std::make_unique<AdminRoutes>(
        metrics_, std::move(view), [this] { return ready(); }, [this] { return draining_.load(); });
    admin.internal = [this](std::string_view path) { return (*adminRoutes_)(path); };
    adminRouter_ = std::make_unique<Router>(std::vector<Mount>{});
    adminHttp_ = std::make_unique<HttpServer>(admin, *adminRouter_, *backend_);
    if (Status s = adminHttp_->start(); !s) return Error{"admin listener: " + s.error()};
  }
  for (const AppConfig& app : config_.apps) {
    logEvent(Level::kInfo, "app mounted",
             {{"app", app.name}, {"module", app.module}, {"host", app.host}, {"route", app.route}});
  }
  logEvent(Level::kInfo, "listening",
           {{"url", "http://" + config_.listenHost + ":" + std::to_string(port())},
            {"backend", config_.backend},
            {"admin", adminHttp_
                          ? "http://" + config_.adminHost + ":" + std::to_string(adminHttp_->port())
                          : "off"}});
  return Status::success();
}

std::uint16_t Server::port() const { return http_ ? http_->port() : 0; }
std::uint16_t Server::adminPort() const { return adminHttp_ ? adminHttp_->port() : 0; }

bool Server::ready() const { return !draining_ && backend_ && backend_->ready(); }

void Server::stop() {
  // The admin listener stays up through the drain: /readyz says "draining", /metrics still counts.
  if (!draining_.exchange(true) && http_) recordEvent("drain", -1, 0, "the server is stopping");
  if (http_) {
    http_->stop(config_.shutdownDrain, [this] { backend_->stop(); });
  }
  if (adminHttp_) adminHttp_->stop(std::chrono::milliseconds(0));
  if (adminRoutes_) adminRoutes_->stop();
  if (backend_) backend_->stop();
  // Last: the backend's workers are reaped on it. What is still queued there (closed
  // connections) is let go of with it, when the server is destroyed.
  if (reactor_) reactor_->stop();
}

}  // namespace isolane

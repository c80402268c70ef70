#include "server/server.h"

#include <spdlog/spdlog.h>

#include "pool/inprocess_backend.h"

namespace isolane {

std::unique_ptr<Backend> makeInProcessBackend(const ServerConfig& config, LogSink& log) {
  InProcessOptions options;
  options.threads = config.executorThreads;
  options.executor.queueCapacity = config.queueCapacity;
  options.executor.loop.limits.heapMb = config.heapLimitMb;
  options.executor.loop.cpuLimit = config.requestCpuLimit;
  options.executor.loop.wallTimeout = config.requestTimeout;
  return std::make_unique<InProcessBackend>(options, log);
}

Server::Server(ServerConfig config) : config_(std::move(config)) {}

Server::~Server() { stop(); }

Status Server::start() {
  backend_ = makeInProcessBackend(config_, console_);
  std::vector<AppSpec> specs;
  std::vector<Mount> mounts;
  for (const AppConfig& app : config_.apps) {
    specs.push_back(AppSpec{app.name, app.module, app.vars});
    mounts.push_back(Mount{app.name, app.route, app.host, app.stripPrefix});
  }
  if (Status s = backend_->start(specs); !s) return s;
  router_ = std::make_unique<Router>(std::move(mounts));

  HttpServerOptions http;
  http.host = config_.listenHost;
  http.port = config_.listenPort;
  http.reactorThreads = config_.reactorThreads;
  http.maxBodyBytes = config_.maxBodyBytes;
  http.headerTimeout = config_.headerTimeout;
  http.bodyTimeout = config_.bodyTimeout;
  http.idleTimeout = config_.idleTimeout;
  http_ = std::make_unique<HttpServer>(http, *router_, *backend_);
  if (Status s = http_->start(); !s) return s;
  for (const AppConfig& app : config_.apps) {
    spdlog::info("app={} module={} mounted at {}{}", app.name, app.module,
                 app.host.empty() ? "" : app.host, app.route);
  }
  spdlog::info("listening on http://{}:{}", config_.listenHost, port());
  return Status::success();
}

std::uint16_t Server::port() const { return http_ ? http_->port() : 0; }

void Server::stop() {
  if (http_) {
    http_->stop(config_.shutdownDrain, [this] { backend_->stop(); });
  }
  if (backend_) backend_->stop();
}

}  // namespace isolane

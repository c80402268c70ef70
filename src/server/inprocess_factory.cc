// The in-process backend, for the engine build (V8 linked in): see server.h.

#include "pool/inprocess_backend.h"
#include "server/server.h"

namespace isolane {

std::unique_ptr<Backend> makeInProcessBackend(const ServerConfig& config, LogSink& log) {
  InProcessOptions options;
  options.threads = config.executorThreads;
  options.streamMaxInflight = config.pool.streamMaxInflight;
  options.executor.queueCapacity = config.queueCapacity;
  options.executor.loop.limits.heapMb = config.heapLimitMb;
  options.executor.loop.cpuLimit = config.requestCpuLimit;
  options.executor.loop.wallTimeout = config.requestTimeout;
  options.executor.loop.streamIdleTimeout = config.streamIdleTimeout;
  options.executor.loop.streamMaxDuration = config.streamMaxDuration;
  options.executor.isolates.maxIsolates =
      perThreadIsolateCap(config.maxIsolates, config.executorThreads);
  options.executor.isolates.idleTimeout = config.isolateIdleTimeout;
  options.codeCacheDir = effectiveCodeCacheDir(config);
  return std::make_unique<InProcessBackend>(options, log);
}

}  // namespace isolane

// The in-process backend, for the engine build (V8 linked in): see server.h.

#include "pool/inprocess_backend.h"
#include "server/server.h"

namespace isolane {

std::unique_ptr<Backend> makeInProcessBackend(const ServerConfig& config, LogSink& log,
                                              MetricsRegistry* metrics) {
  InProcessOptions options;
  options.threads = config.executorThreads;
  options.admission = AdmissionOptions{config.pool.maxInflight, config.pool.streamMaxInflight,
                                       config.pool.maxQueue, config.pool.queueTimeout,
                                       config.pool.shedDelay};
  options.wedgedTurn = config.pool.wedgedTurn;
  options.maxWedgedShare = config.pool.maxWedgedShare;
  options.reserveThread = config.pool.reserveThread && config.executorThreads == 1;
  options.metrics = metrics;
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

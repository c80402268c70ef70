// The master build links no V8, so it has no in-process backend: see server.h.

#include "server/server.h"

namespace isolane {

std::unique_ptr<Backend> makeInProcessBackend(const ServerConfig&, LogSink&, MetricsRegistry*) {
  return nullptr;
}

}  // namespace isolane

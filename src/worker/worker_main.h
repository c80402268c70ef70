#pragma once
// The worker process: what `isolane worker` runs in a child the pool spawned. It speaks the wire
// protocol (src/ipc) on one socket: says hello, loads the apps it is told to, runs requests on its
// executor, answers heartbeats with its figures, and exits on Shutdown or when the master goes.

#include <cstddef>

#include "worker/executor.h"

namespace isolane {

struct WorkerProcessOptions {
  int fd = 3;  // the socketpair end the master passed
  std::size_t maxFrameBytes = 0;
  ExecutorOptions executor;
};

// Returns the process exit status.
int runWorkerProcess(const WorkerProcessOptions& options);

}  // namespace isolane

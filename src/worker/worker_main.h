#pragma once
// The worker process: what `isolane worker` runs in a child the pool spawned. It speaks the wire
// protocol (src/ipc) on one socket: says hello, loads the apps it is told to, runs requests on its
// executor threads (worker/executor_set.h), answers heartbeats with its figures, and exits on
// Shutdown or when the master goes.

#include <cstddef>
#include <vector>

#include "worker/executor_set.h"
#include "worker/sandbox.h"

namespace isolane {

struct WorkerProcessOptions {
  int fd = 3;         // the socketpair end the master passed
  int statusFd = -1;  // the status page the master passed (ipc/status_page.h); -1: none
  int blocksFd = -1;  // the stream blocks the master passed (ipc/stream_blocks.h); -1: none
  // The sockets of executor threads 1 to threads - 1 (thread 0's is `fd`), each read by its own
  // thread; empty: `fd` alone, read by one thread (the executor's, when there is one) that hands
  // each request to the thread ExecutorSet picks.
  std::vector<int> threadFds;
  std::size_t maxFrameBytes = 0;
  std::size_t threads = 1;  // executor threads
  bool reserveThread = false;  // and a reserve one (worker/executor_set.h)
  bool sandbox = true;      // enter the worker sandbox (worker/sandbox.h) before anything else
  // Instead of serving: probe the sandbox from inside (worker/sandbox_probe.h), one JSON line per
  // probe on stdout, and exit 0 when every probe held, 1 otherwise.
  bool probeSandbox = false;
  SandboxOptions sandboxOptions;
  ExecutorOptions executor;
};

// Returns the process exit status.
int runWorkerProcess(const WorkerProcessOptions& options);

}  // namespace isolane

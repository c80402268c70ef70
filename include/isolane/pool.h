#pragma once
// isolane::Pool: isolane for a C++ program, without HTTP. It takes apps (ES modules in the
// Workers shape) and requests, and returns responses, with the server's limits and typed errors:
// the same subprocess backend `isolane serve` runs (supervised, sandboxed worker processes, an
// isolate per app, CPU budget, heap ceiling, admission). JavaScript runs in the pinned `node`
// the workers are, so a program that embeds isolane links no V8: it is a client of its workers.
//
// Thread rule: every method is safe from any thread; a `done` callback runs on one of the pool's
// threads and must not block.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace isolane {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct PoolConfig {
  std::size_t workers = 0;          // worker processes; 0: one per core (at most 16)
  std::size_t executorThreads = 1;  // per worker
  std::size_t heapLimitMb = 128;    // per app isolate
  std::chrono::milliseconds requestCpu{2'000};
  std::chrono::milliseconds requestTimeout{60'000};
  std::size_t maxInflight = 1024;  // requests admitted at once; more are refused (OVERLOADED)
  // The `isolane` executable the workers run (its `worker` command); empty: the one this library
  // was built with.
  std::string isolaneBinary;
};

struct PoolApp {
  std::string name;
  std::string module;                   // absolute path of the app's ES module (bundled)
  Headers vars;                         // become `env`
  std::vector<std::string> fetchAllow;  // non-public addresses its fetch() may reach
};

struct PoolRequest {
  std::string app;
  std::string method = "GET";
  std::string url;  // absolute, as the app sees it
  Headers headers;
  std::string body;
};

struct PoolResponse {
  int status = 0;
  std::string statusText;
  Headers headers;
  std::string body;  // whole, streamed bodies included
  // Empty when the app answered; else the typed error (CPU_LIMIT, HEAP_LIMIT, TIMEOUT,
  // HANDLER_ERROR, OVERLOADED, WORKER_CRASHED, ISOLATE_RECYCLED, UNKNOWN_APP, ...), with
  // `status` what the server would have answered.
  std::string error;
  std::string detail;      // for a log, never for an end user
  bool retryable = false;  // the error came from the server, not the request
};

class Pool {
 public:
  explicit Pool(PoolConfig config = {});
  ~Pool();  // stop()s
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Starts the workers and loads every app; an error names the file and line of a broken module.
  // Returns "" on success.
  std::string start(const std::vector<PoolApp>& apps);
  // Runs the request; `done` gets the response exactly once.
  void fetch(PoolRequest request, std::function<void(PoolResponse)> done);
  // The same, waiting for the answer.
  PoolResponse fetch(PoolRequest request);
  // Answers what runs with SHUTTING_DOWN and ends the workers.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace isolane

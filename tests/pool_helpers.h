#pragma once
// What the subprocess pool's tests share: a pool of fake workers (tests/fake_worker.cc) or real
// ones, a request submitted and its answer awaited, the pid of a ready slot.

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "pool/subprocess_backend.h"

namespace isolane::test {

inline std::vector<std::string> realWorker() {
  return {ISOLANE_BINARY, "worker", "--cpu-ms", "2000", "--timeout-ms", "20000"};
}
inline std::vector<std::string> fakeWorker(const std::string& mode) { return {FAKE_WORKER, mode}; }

inline PoolOptions poolOptions(std::vector<std::string> command, std::size_t size = 2) {
  PoolOptions o;
  o.size = size;
  o.workerCommand = std::move(command);
  return o;
}

inline std::future<AppResponse> call(Backend& backend, const std::string& app,
                                     const std::string& path, const std::string& method = "GET") {
  auto promise = std::make_shared<std::promise<AppResponse>>();
  auto future = promise->get_future();
  backend.submit(AppRequest{app, "t", method, "http://test" + path, {}, ""},
                 [promise](AppResponse r) { promise->set_value(std::move(r)); });
  return future;
}

inline pid_t pidOf(const SubprocessBackend& pool, int slot) {
  for (const WorkerInfo& w : pool.workers()) {
    if (w.slot == slot && w.state == WorkerState::kReady) return w.pid;
  }
  return 0;
}

}  // namespace isolane::test

#pragma once
// Backend: where requests run. Two implementations share this interface: in-process (executor
// threads inside the server, for embedding and tests) and, with the worker-pool issue,
// subprocess (child processes; the default there).

#include <cstdint>
#include <functional>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/http_exchange.h"
#include "util/result.h"

namespace isolane {

class Backend {
 public:
  virtual ~Backend() = default;

  // Loads every app. Fails with the first error (naming the file and line); nothing is served
  // then.
  virtual Status start(const std::vector<AppSpec>& apps) = 0;

  // Safe from any thread. `done` is called exactly once, on a thread of the backend's choosing,
  // possibly before submit returns (a shed request is answered at once). Returns a handle for
  // cancel() (0 when there is nothing to cancel).
  virtual std::uint64_t submit(AppRequest request, std::function<void(AppResponse)> done) = 0;

  // Safe from any thread. The client went away: abort the request's signal and its pending host
  // operations. `done` is still called. Unknown or finished handles are ignored.
  virtual void cancel(std::uint64_t handle) = 0;

  // Safe from any thread. Requests still running are answered with kShuttingDown.
  virtual void stop() = 0;

  // Safe from any thread: requests submitted and not answered yet.
  virtual std::size_t inFlight() const = 0;

  // Safe from any thread: true once the backend can serve a request (/readyz).
  virtual bool ready() const = 0;
};

}  // namespace isolane

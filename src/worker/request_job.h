#pragma once
// A request handed to an executor, with the function that takes its answer.

#include <cstdint>
#include <functional>

#include "ipc/http_exchange.h"

namespace isolane {

struct RequestJob {
  AppRequest request;
  // Called exactly once, on the executor thread; must not block (post to your own thread).
  std::function<void(AppResponse)> done;
  // Names the request for Executor::cancel; 0: not cancellable.
  std::uint64_t cancelKey = 0;
};

}  // namespace isolane

#pragma once
// A request handed to an executor, with the function that takes its answer.

#include <functional>

#include "ipc/http_exchange.h"

namespace isolane {

struct RequestJob {
  AppRequest request;
  // Called exactly once, on the executor thread; must not block (post to your own thread).
  std::function<void(AppResponse)> done;
};

}  // namespace isolane

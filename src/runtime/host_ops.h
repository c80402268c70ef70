#pragma once
// HostOps: the asynchronous operations JavaScript can start (outbound fetch, service bindings),
// as native functions see them. The executor's event loop implements it; outcomes come back
// later through the callbacks object, never re-entrantly.

#include <v8.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "ipc/http_exchange.h"

namespace isolane {

struct ContextState;

class HostOps {
 public:
  virtual ~HostOps() = default;
  // `request.app` and `request.requestId` are unused. Returns the operation id.
  virtual std::uint64_t fetchStart(ContextState& state, AppRequest request,
                                   std::chrono::milliseconds timeout,
                                   v8::Local<v8::Object> callbacks) = 0;
  virtual void fetchPull(ContextState& state, std::uint64_t op) = 0;
  virtual void fetchAbort(ContextState& state, std::uint64_t op) = 0;
  // `request.app` names the target app.
  virtual void serviceFetch(ContextState& state, AppRequest request,
                            v8::Local<v8::Object> callbacks) = 0;
};

}  // namespace isolane

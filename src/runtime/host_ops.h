#pragma once
// HostOps: the asynchronous operations JavaScript can start (outbound fetch, service bindings),
// as native functions see them. The executor's event loop implements it; outcomes come back
// later through the callbacks object, never re-entrantly.

#include <v8.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ipc/http_exchange.h"

namespace isolane {

struct ContextState;

// The outcome of host work run off the executor thread: the byte strings handed to the
// callback, or an error (a WebCrypto name such as "OperationError", and a message).
struct OffloadResult {
  std::vector<std::vector<std::uint8_t>> values;
  std::string errorName;  // empty: success
  std::string error;
};
// Work that touches neither V8 nor the context: it runs on a helper thread.
using OffloadWork = std::function<OffloadResult()>;

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
  // Runs `work` on a helper thread (slow cryptography); later, from the event loop, calls
  // callbacks.onDone(...values as Uint8Arrays) or callbacks.onError(name, message). The wait is a
  // host wait: the work's CPU time is not the request's, and other requests run meanwhile.
  // Returns the operation id, or 0 with a RangeError thrown (too many operations in flight).
  virtual std::uint64_t offload(ContextState& state, OffloadWork work,
                                v8::Local<v8::Object> callbacks) = 0;
};

}  // namespace isolane

#pragma once
// ContextState: what the host keeps per V8 context (one per app), reachable from native callbacks
// through the context's embedder data. Owned by the executor thread's app instance; only that
// thread reads or writes it.

#include <v8.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "obs/log_sink.h"

namespace isolane {

class ModuleGraph;
class HostOps;
struct ContextState;

// The executor's timer queue, as native timer functions see it.
class TimerHost {
 public:
  virtual ~TimerHost() = default;
  virtual std::uint32_t setTimer(ContextState& state, v8::Local<v8::Function> fn, double delayMs,
                                 bool repeat) = 0;
  virtual void clearTimer(ContextState& state, std::uint32_t id) = 0;
};

struct ContextState {
  // Embedder data slot holding this struct's address. Slot 0 is left to V8 tooling.
  static constexpr int kEmbedderSlot = 1;

  std::string appName;
  TimerHost* timers = nullptr;
  HostOps* ops = nullptr;
  LogSink* log = nullptr;
  ModuleGraph* modules = nullptr;

  std::chrono::steady_clock::time_point createdAt;  // performance.now() zero
  double timeOriginMs = 0;                          // performance.timeOrigin

  // The request whose JavaScript is running now (0 and "" outside a request). Set by the
  // executor around every turn, so timers and console lines are attributed to it.
  std::uint64_t currentRequest = 0;
  std::string currentRequestId;

  // The context's open compression streams (web/compression.cc's registry, opaque here),
  // freed with the context.
  std::shared_ptr<void> compression;

  // Tests of the web APIs only: console lines are also appended to globalThis.__capturedLogs as
  // [level, text], and the runtime's dispatch function is visible as globalThis.__dispatchRaw.
  bool testHooks = false;

  static ContextState* from(v8::Local<v8::Context> context) {
    return static_cast<ContextState*>(context->GetAlignedPointerFromEmbedderData(kEmbedderSlot));
  }
  void attachTo(v8::Local<v8::Context> context) {
    context->SetAlignedPointerInEmbedderData(kEmbedderSlot, this);
  }
};

}  // namespace isolane

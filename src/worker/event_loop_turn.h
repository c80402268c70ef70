#pragma once
// EventLoop::turn, shared by the files that make up the event loop (event_loop*.cc): one
// synchronous entry into an app's context on behalf of a request; and loopOf, the loop a native
// callback belongs to. Internal to worker/.
//
// Thread rule: the executor thread that owns the loop.

#include <string>

#include "obs/log.h"
#include "runtime/js_scope.h"
#include "worker/event_loop.h"
#include "worker/watchdog.h"

namespace isolane {

// The loop a native of makeNatives or makeExecutionNatives belongs to (its data).
inline EventLoop* loopOf(const v8::FunctionCallbackInfo<v8::Value>& info) {
  return static_cast<EventLoop*>(info.Data().As<v8::External>()->Value());
}

template <typename Body>
void EventLoop::turn(App& app, std::uint64_t requestId, Body&& body) {
  v8::Isolate* isolate = owner_.isolate();
  std::chrono::nanoseconds budget =
      loadBudget_.count() > 0 ? loadBudget_ : std::chrono::nanoseconds(options_.cpuLimit);
  if (const Request* req = requests_.find(requestId)) {
    budget = cpuBudget(*req);
    app.state.currentRequestId = req->job.request.requestId;
  } else {
    app.state.currentRequestId.clear();
  }
  app.state.currentRequest = requestId;
  std::chrono::nanoseconds cpuStart = watchdog_.arm(budget, owner_, options_.appTag);
  turnCpuStart_ = cpuStart;
  bool terminated;
  {
    JsScope js(owner_, app.web.context);
    // Promise reactions created in this turn remember the request; when one runs later, in
    // whichever turn, V8 restores it, so work it starts belongs to its own request.
    isolate->SetContinuationPreservedEmbedderData(
        requestId ? v8::Local<v8::Value>(v8::Number::New(isolate, static_cast<double>(requestId)))
                  : v8::Local<v8::Value>(v8::Undefined(isolate)));
    v8::TryCatch tryCatch(isolate);
    body(js, tryCatch);
    if (!tryCatch.HasTerminated() && !isolate->IsExecutionTerminating()) {
      isolate->PerformMicrotaskCheckpoint();
    }
    terminated = tryCatch.HasTerminated() || isolate->IsExecutionTerminating();
    isolate->SetContinuationPreservedEmbedderData(v8::Undefined(isolate));
  }
  std::chrono::nanoseconds used{0};
  bool byWatchdog = watchdog_.disarm(&used);
  // The heap limit terminates from inside an allocation, which may come after the turn's
  // JavaScript returned (the microtask checkpoint's, or ours): that termination is still pending
  // and must be cancelled here, or it would end the next, unrelated turn.
  bool heap = owner_.takeHeapLimitHit();
  if (heap) heapLimitHit_ = true;
  if (terminated) {
    // Microtasks the terminated code queued must die with it, not run in the next turn on
    // another request's budget. V8 empties the queue when a checkpoint is terminated.
    v8::Isolate::Scope isolateScope(isolate);
    v8::HandleScope handles(isolate);
    isolate->TerminateExecution();
    isolate->PerformMicrotaskCheckpoint();
  }
  if (terminated || byWatchdog || heap) {
    isolate->CancelTerminateExecution();
    used = threadCpuTime() - cpuStart;  // with what ending it cost
  }
  turnCpuStart_ = std::chrono::nanoseconds(0);
  app.state.currentRequest = 0;
  app.state.currentRequestId.clear();

  Request* req = requests_.find(requestId);
  if (req) req->cpuUsed += used;
  if (!(terminated || byWatchdog || heap)) return;

  FailureKind kind = heap ? FailureKind::kHeapLimit : FailureKind::kCpuLimit;
  std::string detail =
      heap ? "the isolate's heap limit (" + std::to_string(options_.limits.heapMb) +
                 " MiB) was reached; execution was terminated"
           : "JavaScript used more than " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    req ? cpuLimitOf(*req)
                                        : std::chrono::nanoseconds(options_.cpuLimit))
                                    .count()) +
                 " ms of CPU time; execution was terminated";
  if (req) {
    fail(requestId, kind, detail);
  } else {
    logEvent(Level::kError, detail + " (outside a request)", {{"app", app.spec.name}});
  }
}

}  // namespace isolane

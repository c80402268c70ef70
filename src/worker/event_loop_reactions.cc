// EventLoop: V8's foreground tasks and the promise reactions they release, each charged to
// its own request.
#include <tuple>

#include "obs/log.h"
#include "runtime/array_buffers.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {

using std::chrono::nanoseconds;

namespace {
// The loop whose post-task checkpoint is running on this (executor) thread: V8's promise hook is
// a plain function.
thread_local EventLoop* tlsReactionLoop = nullptr;
}  // namespace

void EventLoop::runForegroundTasks() {
  std::optional<std::chrono::steady_clock::time_point> due = owner_.nextForegroundTask();
  if (!due || *due > std::chrono::steady_clock::now()) return;
  v8::Isolate* isolate = owner_.isolate();
  // V8's own tasks (GC finalization, FinalizationRegistry cleanup, the end of a WebAssembly
  // compile): a FinalizationRegistry callback is app code, so the watchdog bounds them like a turn.
  watchdog_.arm(options_.cpuLimit, owner_, options_.appTag);
  owner_.runForegroundTasks();
  bool tasksTerminated = watchdog_.disarm() || isolate->IsExecutionTerminating();
  // The promise reactions the tasks released (the code after `await WebAssembly.compile(...)`)
  // run now, outside any turn, so each is charged to the request it belongs to (V8 restores the
  // continuation data of the request that created it; the promise hook tells us when each
  // starts and ends) and bounded by what that request has left of its CPU budget. Microtasks a
  // reaction queues (queueMicrotask) run unhooked and count for the same request. The work of a
  // request that has ended is dropped.
  if (!tasksTerminated) {
    v8::Isolate::Scope scope(isolate);
    v8::HandleScope handles(isolate);
    reaction_ = Reaction{};
    tlsReactionLoop = this;
    startSegment(0);
    isolate->PerformMicrotaskCheckpoint();
    endSegment();
    tlsReactionLoop = nullptr;
  }
  bool terminated = tasksTerminated || reaction_.overBudget != 0 || reaction_.dropped ||
                    isolate->IsExecutionTerminating();
  if (terminated) {
    // As after a terminated turn: what the terminated code queued dies with it.
    v8::Isolate::Scope scope(isolate);
    v8::HandleScope handles(isolate);
    isolate->TerminateExecution();
    isolate->PerformMicrotaskCheckpoint();
    isolate->CancelTerminateExecution();
  }
  bool heap = owner_.takeHeapLimitHit();
  if (heap) {
    heapLimitHit_ = true;
    // A termination the heap limit asked for after the code had returned must not reach the next
    // turn.
    v8::Isolate::Scope scope(isolate);
    isolate->CancelTerminateExecution();
  }
  std::uint64_t culprit = reaction_.overBudget ? reaction_.overBudget : reaction_.last;
  if (heap && requests_.contains(culprit)) {
    fail(culprit, FailureKind::kHeapLimit,
         "the isolate's heap limit (" + std::to_string(options_.limits.heapMb) +
             " MiB) was reached in code resumed by a V8 task; execution was terminated");
  } else if (reaction_.overBudget && requests_.contains(reaction_.overBudget)) {
    fail(reaction_.overBudget, FailureKind::kCpuLimit,
         "JavaScript used more than " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                cpuLimitOf(requests_.at(reaction_.overBudget)))
                                .count()) +
             " ms of CPU time; execution was terminated");
  } else if (tasksTerminated || heap) {
    logEvent(Level::kError,
             heap ? "the heap limit was reached in a V8 task; execution was terminated"
                  : "a V8 task ran past the CPU limit and was terminated",
             {{"limit_ms", static_cast<std::int64_t>(options_.cpuLimit.count())}});
  }
}

void EventLoop::promiseHook(v8::PromiseHookType type, v8::Local<v8::Promise>,
                            v8::Local<v8::Value>) {
  EventLoop* self = tlsReactionLoop;  // null outside runForegroundTasks: nothing to do
  if (!self || self->reaction_.stopped) return;
  if (type == v8::PromiseHookType::kBefore) {
    self->endSegment();
    v8::Local<v8::Value> data = self->owner_.isolate()->GetContinuationPreservedEmbedderData();
    self->startSegment(!data.IsEmpty() && data->IsNumber()
                           ? static_cast<std::uint64_t>(data.As<v8::Number>()->Value())
                           : 0);
  } else if (type == v8::PromiseHookType::kAfter) {
    // What runs next without a hook (a microtask this reaction queued) is still its work.
    std::uint64_t owner = self->reaction_.request;
    self->endSegment();
    self->startSegment(owner);
  }
}

// Starts charging CPU to `owner` (0: no request, module-level work) under the watchdog.
void EventLoop::startSegment(std::uint64_t owner) {
  nanoseconds budget = options_.cpuLimit;
  if (owner != 0) {
    auto* it = requests_.find(owner);
    if (!it) {
      // Work of a request that has ended: nobody waits for it and nothing may run on its behalf.
      reaction_.dropped = reaction_.stopped = true;
      owner_.isolate()->TerminateExecution();
      return;
    }
    budget = cpuBudget(*it);
    if (budget <= nanoseconds(0)) {
      reaction_.overBudget = owner;
      reaction_.stopped = true;
      owner_.isolate()->TerminateExecution();
      return;
    }
    reaction_.last = owner;
  }
  reaction_.running = true;
  reaction_.request = owner;
  watchdog_.arm(budget, owner_, options_.appTag);  // endSegment() learns what it used
}

void EventLoop::endSegment() {
  if (!reaction_.running) return;
  reaction_.running = false;
  nanoseconds used{0};
  bool fired = watchdog_.disarm(&used);
  auto* it = requests_.find(reaction_.request);
  if (reaction_.request != 0 && it) it->cpuUsed += used;
  if (fired) {
    reaction_.stopped = true;
    if (reaction_.request != 0 && it) {
      reaction_.overBudget = reaction_.request;
    } else {
      reaction_.dropped = true;  // module-level work past the CPU limit
    }
  }
}

std::optional<std::chrono::steady_clock::time_point> EventLoop::nextForegroundTask() {
  return owner_.nextForegroundTask();
}

}  // namespace isolane

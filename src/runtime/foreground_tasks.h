#pragma once
// ForegroundTasks: the task runner V8 posts an isolate's foreground tasks to (GC finalization,
// FinalizationRegistry cleanup, WebAssembly compile results, Atomics.waitAsync...), as the node
// platform's delegate for that isolate. Tasks wait here until the isolate's own thread runs them
// with runDue(); posting rings the owner's wake-up (the executor's doorbell), so an idle executor
// notices. Node's platform never runs them itself: an isolate registered with a delegate belongs
// to its embedder.
//
// Thread rule: post*() from any thread (V8's background threads post here); runDue() and
// nextDue() only on the isolate's thread.
//
// The queue is not bounded: V8 cannot be told "no" (PostTask returns nothing) and it posts a
// bounded number of tasks per unit of JavaScript work, which the request's own limits bound.

#include <node.h>
#include <v8-isolate.h>
#include <v8-platform.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

#include "util/guarded.h"

namespace isolane {

class ForegroundTasks final : public v8::TaskRunner,
                              public std::enable_shared_from_this<ForegroundTasks> {
 public:
  using Clock = std::chrono::steady_clock;

  // `wake` is called (from any thread) after a task was posted.
  explicit ForegroundTasks(std::function<void()> wake) : wake_(std::move(wake)) {}

  bool IdleTasksEnabled() override { return false; }
  bool NonNestableTasksEnabled() const override { return true; }
  bool NonNestableDelayedTasksEnabled() const override { return true; }

  // Runs the tasks due now (not the ones they post: those wait for the next call), stopping when
  // `isolate` is terminating (the rest wait for the next call). Returns how many ran.
  std::size_t runDue(v8::Isolate* isolate);
  // When the earliest delayed task is due, if any; "now" when a task is ready.
  std::optional<Clock::time_point> nextDue();
  // Drops every pending task (the isolate is going away).
  void clear();

 protected:
  void PostTaskImpl(std::unique_ptr<v8::Task> task, const v8::SourceLocation&) override;
  void PostNonNestableTaskImpl(std::unique_ptr<v8::Task> task, const v8::SourceLocation&) override;
  void PostDelayedTaskImpl(std::unique_ptr<v8::Task> task, double delaySeconds,
                           const v8::SourceLocation&) override;
  void PostNonNestableDelayedTaskImpl(std::unique_ptr<v8::Task> task, double delaySeconds,
                                      const v8::SourceLocation&) override;
  void PostIdleTaskImpl(std::unique_ptr<v8::IdleTask>, const v8::SourceLocation&) override {}

 private:
  struct Delayed {
    Clock::time_point due;
    std::uint64_t seq;
    mutable std::unique_ptr<v8::Task> task;
    bool operator>(const Delayed& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  struct Queues {
    std::deque<std::unique_ptr<v8::Task>> ready;
    std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed;
    std::uint64_t seq = 0;
  };
  void post(std::unique_ptr<v8::Task> task, double delaySeconds);

  std::function<void()> wake_;
  Guarded<Queues> queues_;
};

// The node platform's view of one isolate: its foreground tasks go to our runner.
// Defined out of line, in a file built without RTTI like node: a class deriving from node's must
// not emit typeinfo that refers to node's, which node does not export.
class TaskDelegate final : public node::IsolatePlatformDelegate {
 public:
  explicit TaskDelegate(std::shared_ptr<ForegroundTasks> tasks);
  ~TaskDelegate();
  std::shared_ptr<v8::TaskRunner> GetForegroundTaskRunner() override;
  bool IdleTasksEnabled() override;

 private:
  std::shared_ptr<ForegroundTasks> tasks_;
};

}  // namespace isolane

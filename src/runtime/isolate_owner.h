#pragma once
// IsolateOwner: one V8 isolate and the one thread allowed to enter it.
//
// Thread rule (DESIGN rule 1): only the thread that constructed the owner may call anything but
// terminate(). The type is neither copyable nor movable, so it cannot be handed to another
// thread after construction; the owning thread is checked in debug builds.

#include <v8-snapshot.h>
#include <v8.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "runtime/memory_budget.h"
#include "util/thread_checker.h"

namespace isolane {

struct IsolateLimits {
  // The whole V8 heap: old generation plus young generation, V8 sizing the young one from the
  // total (ResourceConstraints::ConfigureDefaultsFromHeapSize). Code and ArrayBuffer contents
  // are outside it (the latter are capped by arrayBufferMb).
  std::size_t heapMb = 128;
  // Backing stores allocated by JavaScript, and the host's copies of its bytes (runtime/memory_budget.h).
  std::size_t arrayBufferMb = 256;
};

// A V8 startup snapshot to create isolates from: the blob, and the addresses of the native
// functions its objects call (null-terminated; the list it was made with, in the same order).
struct IsolateSnapshot {
  v8::StartupData blob{};
  const intptr_t* externalReferences = nullptr;
};

// Tag for the owner of an isolate that is set up to make a snapshot (the build's `isolane
// snapshot`): V8's SnapshotCreator initialises it, and creator() serializes it.
struct MakeSnapshot {
  const intptr_t* externalReferences = nullptr;
};

class ForegroundTasks;
class TaskDelegate;

class IsolateOwner {
 public:
  // `wake` is called from any thread when V8 posts a foreground task for this isolate (the
  // owner's thread should then call runForegroundTasks()); it may be empty.
  // `from`, when given, is the snapshot the isolate is deserialized from (it must outlive the
  // owner); else V8's own.
  explicit IsolateOwner(const IsolateLimits& limits, std::function<void()> wake = {},
                        const IsolateSnapshot* from = nullptr);
  IsolateOwner(const IsolateLimits& limits, MakeSnapshot make);
  ~IsolateOwner();
  IsolateOwner(const IsolateOwner&) = delete;
  IsolateOwner& operator=(const IsolateOwner&) = delete;
  IsolateOwner(IsolateOwner&&) = delete;
  IsolateOwner& operator=(IsolateOwner&&) = delete;

  v8::Isolate* isolate() const {
    ISOLANE_DCHECK_OWNING_THREAD(thread_);
    return isolate_;
  }

  // What the isolate's JavaScript holds outside its heap, and the cap (runtime/memory_budget.h).
  const std::shared_ptr<ByteBudget>& memoryBudget() const { return budget_; }

  // The snapshot the isolate was made from, or null.
  const IsolateSnapshot* snapshot() const { return snapshot_; }
  // The snapshot creator of an owner made with MakeSnapshot, else null.
  v8::SnapshotCreator* creator() const { return creator_.get(); }

  // Safe from any thread: the only cross-thread V8 call we make (the watchdog's).
  void terminate() { isolate_->TerminateExecution(); }

  // True once if the heap ran into its limit since the last call; execution was terminated then.
  // Re-arms the heap limit for the next request.
  bool takeHeapLimitHit();
  // True when the last few full garbage collections each left the live heap above 80% of the
  // old generation's limit: the isolate leaks, and a request would soon hit the limit.
  bool leakSuspected() const { return highAfterFullGc_ >= kLeakGcs; }

  // Runs the foreground tasks V8 posted that are due (inside the isolate, outside any context of
  // ours: a task that runs JavaScript enters its own). The promise reactions they release are
  // left queued for the caller's microtask checkpoint. Returns how many ran.
  std::size_t runForegroundTasks();
  // When the next posted task is due, if any.
  std::optional<std::chrono::steady_clock::time_point> nextForegroundTask();

 private:
  static std::size_t onNearHeapLimit(void* data, std::size_t current, std::size_t initial);
  static void afterGc(v8::Isolate* isolate, v8::GCType type, v8::GCCallbackFlags flags, void* data);
  static constexpr int kLeakGcs = 3;
  // Allocates the isolate and registers it with node's platform; returns the parameters to
  // initialise it with.
  v8::Isolate::CreateParams allocate(const IsolateLimits& limits);
  void setUp();

  ThreadChecker thread_;
  std::shared_ptr<ForegroundTasks> tasks_;
  std::unique_ptr<TaskDelegate> delegate_;
  std::shared_ptr<ByteBudget> budget_;  // shared: a charge may outlive the isolate
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_ = nullptr;
  const IsolateSnapshot* snapshot_ = nullptr;
  std::unique_ptr<v8::SnapshotCreator> creator_;
  std::size_t initialHeapLimit_ = 0;
  std::atomic<bool> heapLimitHit_{false};
  std::size_t oldGenerationLimit_ = 0;  // of the heap limit asked for
  int highAfterFullGc_ = 0;              // consecutive full GCs that left the heap near the limit
};

}  // namespace isolane

#pragma once
// Records the thread that created an object and checks, in debug builds, that only that thread
// uses it. Used by types whose thread rule is "only the owning thread" (see IsolateOwner).

#include <cassert>
#include <thread>

namespace isolane {

class ThreadChecker {
 public:
  ThreadChecker() : owner_(std::this_thread::get_id()) {}

  bool calledOnOwningThread() const { return std::this_thread::get_id() == owner_; }

 private:
  std::thread::id owner_;
};

}  // namespace isolane

// A debug check of the owning thread; free in release builds.
#define ISOLANE_DCHECK_OWNING_THREAD(checker) assert((checker).calledOnOwningThread())

#pragma once
// What a worker says before V8 ends it. A fatal V8 error (out of memory outside the heap limit's
// reach, a failed CHECK) cannot be survived: V8 calls our handler and the process must end. The
// handler logs the app whose isolate the thread was in and V8's reason, so the operator reads
// which app took the worker down, and then aborts.
//
// Thread rule: CurrentApp labels the calling thread only; the handlers run on the failing thread.

#include <v8.h>

#include <string>

namespace isolane {

// Installs the fatal-error and out-of-memory handlers on `isolate`.
void installFatalErrorHandlers(v8::Isolate* isolate);

// While alive, the calling thread works inside `app`'s isolate (restores the previous label).
class CurrentApp {
 public:
  explicit CurrentApp(const std::string& app);
  ~CurrentApp();
  CurrentApp(const CurrentApp&) = delete;
  CurrentApp& operator=(const CurrentApp&) = delete;

 private:
  const std::string* previous_;
};

}  // namespace isolane

// EventLoop: setTimeout/setInterval: the bookkeeping is TimerQueue's (worker/timer_queue.h); here
// the limits, the owning request, and the callbacks run in turns.
#include <algorithm>

#include "obs/log.h"
#include "runtime/array_buffers.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

std::uint32_t EventLoop::setTimer(ContextState& state, v8::Local<v8::Function> fn, double delayMs,
                                  bool repeat) {
  App* app = appByState_.at(&state);
  v8::Isolate* isolate = owner_.isolate();
  if (timers_.countOf(app) >= options_.maxTimersPerApp) {
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, "too many pending timers in this app").ToLocalChecked()));
    return 0;
  }
  // Browsers clamp to at least 1 ms; so do we, which also keeps setInterval(f, 0) from starving
  // everything else.
  auto interval =
      duration_cast<nanoseconds>(std::chrono::duration<double, std::milli>(std::max(delayMs, 1.0)));
  if (delayMs > 2147483647.0) interval = std::chrono::milliseconds(2147483647);
  std::uint64_t owner = owningRequest(state);
  std::uint32_t id = timers_.add(app, owner, v8::Global<v8::Function>(isolate, fn), interval,
                                 repeat, clock_.now());
  if (auto* r = requests_.find(owner); r) {
    std::vector<std::uint32_t>& own = r->timers;
    if (own.size() >= 1024 && own.size() % 1024 == 0) {  // drop ids cleared since
      own.erase(std::remove_if(own.begin(), own.end(),
                               [&](std::uint32_t t) { return !timers_.has(t); }),
                own.end());
    }
    own.push_back(id);
  }
  return id;
}

void EventLoop::clearTimer(ContextState& state, std::uint32_t id) {
  auto app = appByState_.find(&state);
  if (app != appByState_.end()) timers_.clear(id, app->second);  // only the app's own timers
}

void EventLoop::runDueTimers() {
  // Only timers already due when we start: an interval re-armed during this pass waits for the
  // next one, so timers cannot starve new requests.
  SteadyTime now = clock_.now();
  v8::Isolate* isolate = owner_.isolate();
  auto copy = [isolate](const v8::Global<v8::Function>& fn) {
    return v8::Global<v8::Function>(isolate, fn);
  };
  while (auto fired = timers_.popDue(now, copy)) {
    App& app = *fired->owner;
    v8::Global<v8::Function> fn = std::move(fired->callback);
    turn(app, fired->request, [&](JsScope& js, v8::TryCatch& tryCatch) {
      v8::Local<v8::Function> f = fn.Get(js.isolate());
      if (f->Call(js.context(), v8::Undefined(js.isolate()), 0, nullptr).IsEmpty() &&
          !tryCatch.HasTerminated()) {
        // As in browsers, a throwing timer callback is reported, not fatal to its request.
        logEvent(Level::kError, "uncaught exception in a timer callback",
                 {{"app", app.spec.name},
                  {"request", app.state.currentRequestId},
                  {"error", describeException(js, tryCatch)}});
      }
    });
  }
}

}  // namespace isolane

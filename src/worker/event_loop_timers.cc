// EventLoop: setTimeout/setInterval, on a heap of due times.
#include <algorithm>
#include <tuple>

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
  if (app->timerCount >= options_.maxTimersPerApp) {
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, "too many pending timers in this app").ToLocalChecked()));
    return 0;
  }
  // Ids are unique per isolate and never 0; skip ids still in use after wrap-around.
  do {
    if (++nextTimer_ == 0) nextTimer_ = 1;
  } while (timers_.count(nextTimer_));
  std::uint32_t id = nextTimer_;
  // Browsers clamp to at least 1 ms; so do we, which also keeps setInterval(f, 0) from starving
  // everything else.
  auto interval =
      duration_cast<nanoseconds>(std::chrono::duration<double, std::milli>(std::max(delayMs, 1.0)));
  if (delayMs > 2147483647.0) interval = std::chrono::milliseconds(2147483647);
  std::uint64_t generation = ++timerSeq_;
  std::uint64_t owner = owningRequest(state);
  timers_.emplace(
      id, Timer{app, owner, v8::Global<v8::Function>(isolate, fn), interval, repeat, generation});
  if (auto r = requests_.find(owner); r != requests_.end()) {
    std::vector<std::uint32_t>& own = r->second.timers;
    if (own.size() >= 1024 && own.size() % 1024 == 0) {  // drop ids cleared since
      own.erase(std::remove_if(own.begin(), own.end(),
                               [&](std::uint32_t t) { return !timers_.count(t); }),
                own.end());
    }
    own.push_back(id);
  }
  ++app->timerCount;
  timerHeap_.push(HeapEntry{clock_.now() + interval, generation, id, generation});
  return id;
}

void EventLoop::clearTimer(ContextState& state, std::uint32_t id) {
  auto it = timers_.find(id);
  if (it == timers_.end() || &it->second.app->state != &state) return;  // not this app's timer
  --it->second.app->timerCount;
  timers_.erase(it);  // its heap entry is skipped when it comes up, or dropped by compaction
  compactTimerHeap();
}

// Cleared timers leave their heap entries until due (up to 24.8 days): rebuild the heap from the
// live timers once the stale entries outnumber them, so set-and-clear loops cannot grow it.
void EventLoop::compactTimerHeap() {
  if (timerHeap_.size() <= 2 * timers_.size() + 1024) return;
  std::vector<HeapEntry> live;
  live.reserve(timers_.size());
  while (!timerHeap_.empty()) {
    const HeapEntry& e = timerHeap_.top();
    auto it = timers_.find(e.id);
    if (it != timers_.end() && it->second.generation == e.generation) live.push_back(e);
    timerHeap_.pop();
  }
  timerHeap_ = decltype(timerHeap_)(std::greater<>(), std::move(live));
}

void EventLoop::cancelTimersOf(const std::vector<std::uint32_t>& ids, std::uint64_t requestId) {
  // Only the request's own timers: a scan of every timer would make each answer cost O(timers).
  for (std::uint32_t id : ids) {
    auto it = timers_.find(id);
    if (it != timers_.end() && it->second.request == requestId) {
      --it->second.app->timerCount;
      timers_.erase(it);
    }
  }
}

void EventLoop::runDueTimers() {
  // Only timers already due when we start: an interval re-armed during this pass waits for the
  // next one, so timers cannot starve new requests.
  SteadyTime now = clock_.now();
  while (!timerHeap_.empty() && timerHeap_.top().due <= now) {
    HeapEntry entry = timerHeap_.top();
    timerHeap_.pop();
    auto it = timers_.find(entry.id);
    if (it == timers_.end() || it->second.generation != entry.generation) continue;
    Timer& timer = it->second;
    App& app = *timer.app;
    std::uint64_t request = timer.request;
    v8::Global<v8::Function> fn;
    if (timer.repeat) {
      std::uint64_t generation = ++timerSeq_;
      timer.generation = generation;
      timerHeap_.push(HeapEntry{now + timer.interval, generation, entry.id, generation});
      fn.Reset(owner_.isolate(), timer.fn);
    } else {
      fn = std::move(timer.fn);
      --app.timerCount;
      timers_.erase(it);
    }
    turn(app, request, [&](JsScope& js, v8::TryCatch& tryCatch) {
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

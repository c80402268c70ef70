#pragma once
// AppIsolates: the isolates of one executor thread, one per app it serves. An app's isolate is
// made (from the startup snapshot) when work for it arrives, disposed after it has been idle a
// while, and replaced by a fresh one when it hit its heap limit or leaks; the thread holds at
// most `maxIsolates` of them. One app's heap, microtask queue, ArrayBuffer cap and terminations
// are its own: nothing it does reaches the requests of another app.
//
// Thread rule: the executor thread only.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/app_spec.h"
#include "util/clock.h"
#include "util/doorbell.h"
#include "util/result.h"
#include "worker/event_loop.h"
#include "worker/thread_shared.h"

namespace isolane {

struct AppIsolatesOptions {
  // Isolates one thread holds at once. A request for an app without one when every isolate is
  // busy is refused with OVERLOADED (the router sends requests to threads that host the app).
  std::size_t maxIsolates = 16;
  // An isolate with no request in flight for this long is disposed.
  std::chrono::milliseconds idleTimeout{300'000};
};

// A process's cap on isolates, shared among its executor threads (at least one each).
inline std::size_t perThreadIsolateCap(std::size_t total, std::size_t threads) {
  if (threads == 0) threads = 1;
  std::size_t each = (total + threads - 1) / threads;
  return each == 0 ? 1 : each;
}

class AppIsolates final : public LocalApps {
 public:
  AppIsolates(const EventLoopOptions& loop, const AppIsolatesOptions& options, const Clock& clock,
              LogSink& log, Doorbell& wake, Watchdog& watchdog, FetchRouter& fetch);
  ~AppIsolates() override;
  AppIsolates(const AppIsolates&) = delete;
  AppIsolates& operator=(const AppIsolates&) = delete;

  // Registers the app. `warm`: its isolate is made now, and a load error is returned; else it is
  // made on its first request (registering an app already loaded elsewhere).
  Status load(const AppSpec& spec, bool warm, AppLoadReport* report);

  // LocalApps: the thread's own requests and service calls.
  bool knows(const std::string& app) const override { return specs_.count(app) != 0; }
  void start(RequestJob job) override;

  // Code mode: runs the execution in a fresh isolate of its own, disposed once it settles. The
  // isolate is the thread's spare one when there is one of the right size (made ahead, after the
  // thread's first execution), else made now. job.key must be unique among the thread's
  // requests in flight.
  void startExecution(ExecutionJob job);
  void toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text);

  // Controls for a request, by its cancel key (see EventLoop); unknown keys are ignored.
  void cancel(std::uint64_t key);
  void credit(std::uint64_t key, std::size_t bytes);
  void requestBody(std::uint64_t key, std::string piece, bool end, std::string error);

  // One pass over every isolate: host events, timers, deadlines, V8's tasks.
  void pump();
  // What is not a request's (nothing waits for it: the thread's answers leave first): recycling
  // and idle disposal, and the spare isolate of the next execution.
  void housekeep();
  bool hostEventsPending() const;
  // When the thread next has something to do by itself: on the loop's clock (timers, deadlines,
  // idle isolates), and in real time (V8's tasks).
  std::optional<SteadyTime> nextWake() const;
  std::optional<std::chrono::steady_clock::time_point> nextForegroundTask() const;
  void failAll(FailureKind kind, const std::string& detail);

  // The apps with an isolate taking requests here, and a number that changes whenever they do.
  std::vector<std::string> hosted() const;
  std::uint64_t hostedVersion() const { return hostedVersion_; }
  struct Stats {
    std::size_t heapUsedBytes = 0;
    std::size_t heapLimitBytes = 0;
    std::size_t isolates = 0;
    std::uint64_t recycled = 0;  // since start
  };
  Stats stats() const;
  std::size_t count() const { return live_.size() + draining_.size(); }
  std::uint64_t recycled() const { return recycled_; }

 private:
  struct Hosted {
    std::string app;
    std::unique_ptr<EventLoop> loop;
    SteadyTime lastUsed{};
    // Once recycled (in draining_): then what is left fails ISOLATE_RECYCLED. None for an
    // execution's isolate, whose own deadline ends it.
    std::optional<SteadyTime> drainBy{};
    bool retired = false;  // disposed during this pass: skip it
  };
  std::shared_ptr<Hosted> make(const std::string& app, AppLoadReport* report, std::string* error);
  // Disposes the least recently used idle isolate; false when every one is busy.
  bool evictOne();
  // The isolate running the request with this cancel key, or null.
  EventLoop* loopOf(std::uint64_t key);
  void retire(const std::shared_ptr<Hosted>& h);
  void recycleAndDispose();
  EventLoopOptions optionsFor(const AppSpec& spec) const;
  std::unique_ptr<EventLoop> makeExecutionLoop(std::uint32_t memoryMb);
  template <typename F>
  void eachLoop(F&& f);

  const EventLoopOptions loopOptions_;
  const AppIsolatesOptions options_;
  const Clock& clock_;
  LogSink& log_;
  Doorbell& wake_;
  Watchdog& watchdog_;
  FetchRouter& fetch_;
  std::unordered_map<std::string, AppSpec> specs_;
  std::unordered_map<std::string, std::shared_ptr<Hosted>> live_;  // app -> its isolate
  std::vector<std::shared_ptr<Hosted>> draining_;
  std::uint64_t recycled_ = 0;
  std::uint64_t hostedVersion_ = 0;
  std::vector<std::shared_ptr<Hosted>> passScratch_;  // eachLoop's copy, kept between passes
  // Code mode: an isolate made ahead for the next execution (of the default memory limit), once
  // the thread has run one. Executions run among draining_: disposed as soon as they settle.
  std::unique_ptr<EventLoop> spare_;
  bool wantSpare_ = false;
};

}  // namespace isolane

#pragma once
// EventLoop: one app isolate of an executor thread. It owns the isolate, the app loaded into it
// (its own context), its timers, and every request of it in flight. It keeps state per request,
// so many requests interleave on one isolate. An executor thread hosts one EventLoop per app it
// serves (worker/app_isolates.h) and shares its watchdog and fetch client among them.
//
// Thread rule: constructed on the executor thread and used only there (it owns an IsolateOwner).

#include <v8.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/app_spec.h"
#include "runtime/context_state.h"
#include "runtime/host_ops.h"
#include "runtime/isolate_owner.h"
#include "runtime/module_graph.h"
#include "util/byte_budget.h"
#include "util/clock.h"
#include "util/doorbell.h"
#include "util/result.h"
#include "web/web_context.h"
#include "worker/execution_job.h"
#include "worker/fetch_router.h"
#include "worker/host_op_table.h"
#include "worker/offload_pool.h"
#include "worker/request_job.h"
#include "worker/request_table.h"
#include "worker/response_stream.h"
#include "worker/thread_shared.h"
#include "worker/timer_queue.h"
#include "worker/watchdog.h"

namespace isolane {

struct EventLoopOptions {
  IsolateLimits limits;
  std::chrono::milliseconds cpuLimit{2'000};      // CPU time a request's JavaScript may use
  std::chrono::milliseconds wallTimeout{60'000};  // from start to the response's head
  // A streamed body: the longest the app may go without producing a chunk while the client is
  // ready for more (waiting for a slow client does not count), and the longest it may stream.
  std::chrono::milliseconds streamIdleTimeout{60'000};
  std::chrono::milliseconds streamMaxDuration{3'600'000};
  std::size_t maxTimersPerApp = 10'000;
  std::size_t maxHostOpsPerRequest = 1'000;  // fetches and service calls in flight
  std::uint64_t appTag = 0;  // the app's appTag (ipc/status_page.h), published with its turns
  FetchClientOptions fetch;
};

class EventLoop final : public TimerHost, public HostOps {
 public:
  // `wake` is the executor's doorbell: V8 rings it when it posts a task for the isolate.
  EventLoop(const EventLoopOptions& options, const Clock& clock, LogSink& log, Doorbell& wake,
            ThreadShared shared);
  ~EventLoop() override;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Loads an app into its own context. The error names the file and line. `report`, if given,
  // says what became of the spec's code cache (and holds a new one when none was used).
  Status loadApp(const AppSpec& spec, AppLoadReport* report = nullptr);
  bool hasApp(const std::string& name) const { return apps_.count(name) != 0; }

  void startRequest(RequestJob job);
  // Code mode (event_loop_exec.cc): loads an execution's code and modules into a context of
  // their own, named `name`, with `tools` and the outbound mode it asks for. A failure is also
  // recorded in session->outcome (SYNTAX_ERROR with line and column, or GUEST_ERROR). Then
  // startExecution(name, job) runs it (job.session == session).
  Status loadExecution(const std::string& name, std::shared_ptr<ExecutionSession> session);
  // Runs the execution loaded as `name`: job.settled gets its outcome once it settles, or once
  // its time, CPU or memory runs out, or its caller goes away (cancelRequest(job.key)).
  void startExecution(const std::string& name, ExecutionJob job);
  // Makes the context of the next execution ahead of it (the web runtime from the snapshot), so
  // that loadExecution only compiles and runs. False (logged) when it cannot.
  bool prepareExecution();
  // The caller's answer to tool call `call` of the execution submitted with `cancelKey`: its JSON
  // text (`ok`), or an error message. Unknown calls are ignored.
  void toolAnswer(std::uint64_t cancelKey, std::uint64_t call, bool ok, std::string text);
  // True while the request submitted with `cancelKey` is in flight here.
  bool hasRequest(std::uint64_t cancelKey) const {
    return Requests::isSubmitterId(cancelKey) && requests_.contains(cancelKey);
  }
  // The client of the request submitted with `cancelKey` went away: abort its signal and its
  // pending host operations. It runs on until it settles; its answer is then dropped upstream.
  void cancelRequest(std::uint64_t cancelKey);
  // `bytes` of the streamed body of the request submitted with `cancelKey` reached its client.
  void grantCredit(std::uint64_t cancelKey, std::size_t bytes);
  // The next piece (or the end, or the failure) of the streamed request body of that request.
  void requestBody(std::uint64_t cancelKey, std::string piece, bool end, std::string error);
  // Delivers completed host operations (fetch events, service responses) and starts service
  // calls made during the last turns.
  void runHostEvents();
  // True when runHostEvents has something to do without waiting.
  bool hostEventsPending() const {
    return !deferredJobs_.empty() || !serviceResults_.empty() || !streamCancels_.empty() ||
           !bodyReady_.empty() || !fetchEvents_.empty() || offload_.hasDone();
  }
  void runDueTimers();
  void expireDeadlines();
  // When the loop next has something to do by itself (a timer, a deadline).
  std::optional<SteadyTime> nextWake() const;
  // Runs the foreground tasks V8 posted for the isolate that are due, under the CPU watchdog.
  void runForegroundTasks();
  // When the next of them is due (real time: V8 posts them with real delays).
  std::optional<std::chrono::steady_clock::time_point> nextForegroundTask();
  // Answers every request in flight with `kind`.
  void failAll(FailureKind kind, const std::string& detail);
  std::size_t inFlight() const { return requests_.size(); }
  // {used, limit} of the isolate's heap, in bytes.
  std::pair<std::size_t, std::size_t> heapStatistics();
  // Why the isolate should be replaced by a fresh one, or nullptr: it hit its heap limit, or its
  // live heap after full garbage collections stays near the limit (a leak).
  const char* recycleReason() const;

  // TimerHost
  std::uint32_t setTimer(ContextState& state, v8::Local<v8::Function> fn, double delayMs,
                         bool repeat) override;
  void clearTimer(ContextState& state, std::uint32_t id) override;

  // HostOps
  std::uint64_t fetchStart(ContextState& state, AppRequest request,
                           std::chrono::milliseconds timeout,
                           v8::Local<v8::Object> callbacks) override;
  void fetchPull(ContextState& state, std::uint64_t op) override;
  void fetchAbort(ContextState& state, std::uint64_t op) override;
  void serviceFetch(ContextState& state, AppRequest request,
                    v8::Local<v8::Object> callbacks) override;
  std::uint64_t offload(ContextState& state, OffloadWork work,
                        v8::Local<v8::Object> callbacks) override;

 private:
  struct App {
    AppSpec spec;
    ContextState state;
    ModuleGraph modules;
    WebContext web;
    v8::Global<v8::Object> handler;  // the module's default export
    v8::Global<v8::Object> env;
    v8::Global<v8::Object> natives;  // handed to every dispatch: respond, fail, stream*
    // Code mode: the execution this context runs, and where its console lines go.
    std::shared_ptr<ExecutionSession> execution = {};
    std::unique_ptr<LogSink> console = {};
  };
  // What the loop keeps of an app's request, or of a code-mode execution, in flight.
  struct Request {
    std::uint64_t id;  // set by requests_, as is deadline
    RequestJob job;    // an app's request (an execution's is empty)
    App* app;
    SteadyTime deadline;
    std::chrono::nanoseconds cpuUsed{0};
    bool responded = false;             // the answer went out; waitUntil work may still run
    std::vector<std::uint32_t> timers;  // ids it created (some may be gone): cancelled with it
    v8::Global<v8::Function> abort;     // returned by the runtime's dispatch
    bool clientGone = false;            // cancelRequest ran: its failure is expected, not an error
    // A streamed body: from its head (sent through job.done) to its end, and the runtime's
    // control(CREDIT) or control(CANCEL, ...) for it.
    std::optional<ResponseStream> stream = {};
    v8::Global<v8::Function> control = {};
    // A streamed request body: what arrived and was not read yet, and the runtime's callback
    // waiting for the next of it (bodyPull).
    std::deque<std::string> bodyPieces = {};
    bool bodyEnded = false;
    std::string bodyError = {};
    v8::Global<v8::Function> bodyWaiter = {};
    bool bodyPulled = false;  // bodyPull was called: the body is read as a stream
    // The body read whole (bodyAll): each piece is copied into one buffer of its Content-Length
    // as it arrives, on this thread, without a turn; the waiter gets it at the end. The app's
    // budget is charged for what has arrived, not for what the head announced.
    struct BodyGather {
      struct Free {
        void operator()(char* p) const { std::free(p); }
      };
      std::unique_ptr<char, Free> data;  // `size` bytes, never seen by JavaScript before full
      std::size_t size = 0, filled = 0;
      ByteCharge charge;  // of the bytes that arrived
    };
    std::optional<BodyGather> bodyGather = {};
    bool bodyOutOfRoom = false;  // bodyError is the app's budget refusing it (a RangeError)
    // Tool calls waiting on the caller: while there is one, the wall clock is paused with
    // `pausedLeft` of it remaining.
    std::size_t toolWaits = 0;
    std::chrono::nanoseconds pausedLeft{0};
    // A code-mode execution: settled with an ExecutionOutcome, never answered with a response.
    ExecutionJob exec = {};
    bool isExecution() const { return exec.session != nullptr; }
  };
  static constexpr std::chrono::milliseconds kExecutionTurnCpu{ExecLimits::kMaxTurnCpuMs};
  // An execution's CPU time and wall time are both bounded by its timeout_ms.
  std::chrono::nanoseconds cpuLimitOf(const Request& r) const {
    if (r.isExecution()) return std::chrono::milliseconds(r.exec.session->spec.timeoutMs);
    return r.job.cpuLimit.count() > 0 ? std::chrono::nanoseconds(r.job.cpuLimit)
                                      : std::chrono::nanoseconds(options_.cpuLimit);
  }
  std::chrono::milliseconds wallTimeoutOf(const RequestJob& job) const {
    return job.wallTimeout.count() > 0 ? job.wallTimeout : options_.wallTimeout;
  }
  std::chrono::milliseconds wallTimeoutOf(const Request& r) const {
    if (r.isExecution()) return std::chrono::milliseconds(r.exec.session->spec.timeoutMs);
    return wallTimeoutOf(r.job);
  }
  // A request's CPU budget for its next stretch of JavaScript: what is left of cpuLimit; or, once
  // it streams its body (which may go on for hours), cpuLimit for each turn.
  std::chrono::nanoseconds cpuBudget(const Request& r) const {
    std::chrono::nanoseconds left = r.stream ? cpuLimitOf(r) : cpuLimitOf(r) - r.cpuUsed;
    if (r.isExecution()) left = std::min<std::chrono::nanoseconds>(left, kExecutionTurnCpu);
    return left;
  }
  // A streamed body whose app stream must be cancelled (the request is already gone).
  struct StreamCancel {
    App* app;
    v8::Global<v8::Function> control;
    std::string message, name;  // the DOMException the app's cancel(reason) receives
  };
  struct ServiceResult {
    std::uint64_t op;
    AppResponse response;
  };

  // Runs `body` as one synchronous turn in `app`'s context on behalf of request `requestId`
  // (0: none): watchdog armed, microtasks run, termination handled.
  template <typename Body>
  void turn(App& app, std::uint64_t requestId, Body&& body);
  void finish(std::uint64_t id, AppResponse response);
  // Forgets an app whose load failed: its timers, host operations and context.
  void discardApp(std::unique_ptr<App> app);
  // Sends the answer once; the request stays while waitUntil work runs.
  void respond(std::uint64_t id, AppResponse response);
  // Settles an execution once (kNone: as the session says), with its CPU time so far.
  void settleExecution(Request& req, FailureKind kind, const std::string& detail);
  // Forgets the request: cancels its timers and host operations.
  void finalize(std::uint64_t id);
  // Throws a RangeError into JavaScript and returns true when the current request already has
  // maxHostOpsPerRequest operations in flight (the bound of the service-call queue).
  bool overOpLimit(ContextState& state);
  // The request the running JavaScript works for: the one whose promise reaction is running
  // (V8's continuation-preserved data), else the turn's.
  std::uint64_t owningRequest(ContextState& state);
  std::uint64_t registerOp(ContextState& state, v8::Local<v8::Object> callbacks, HostOpKind kind,
                           std::uint64_t id);
  // What ending an operation early takes: a fetch is aborted, offloaded work not started is
  // dropped.
  void endHostOp(std::uint64_t op, HostOpKind kind);
  // Calls callbacks[method](...argv) of a host operation, inside a turn; `last` forgets the
  // operation first.
  void callBack(JsScope& js, std::uint64_t op, const char* method, int argc,
                v8::Local<v8::Value>* argv, bool last);
  static void waitUntilSettled(const v8::FunctionCallbackInfo<v8::Value>& info);
  static constexpr int kMaxServiceDepth = 16;
  void fail(std::uint64_t id, FailureKind kind, const std::string& detail);
  // The promise reactions a V8 task released, run outside any turn (runForegroundTasks): each
  // stretch of that checkpoint is charged to its request, told by a promise hook.
  struct Reaction {
    bool running = false;          // a segment is being charged (watchdog armed)
    bool stopped = false;          // the checkpoint was terminated: charge nothing more
    std::uint64_t request = 0;     // whom the running segment is charged to (0: no request)
    std::uint64_t last = 0;        // the last request charged, for a heap-limit hit
    std::uint64_t overBudget = 0;  // the request whose CPU budget a segment used up
    bool dropped = false;          // stopped without a request to fail
  };
  static void promiseHook(v8::PromiseHookType type, v8::Local<v8::Promise> promise,
                          v8::Local<v8::Value> parent);
  void startSegment(std::uint64_t owner);
  void endSegment();
  Reaction reaction_;

  // Ends the request now, or once the ctx.waitUntil promise settles.
  void finalizeAfter(JsScope& js, std::uint64_t id, v8::Local<v8::Value> waitUntil);
  // Builds the natives object of an app (event_loop_respond.cc).
  bool makeNatives(JsScope& js, v8::Local<v8::Object>* out);
  // Adds `count` native functions of this loop to `natives`.
  struct Native {
    const char* name;
    v8::FunctionCallback callback;
    int length;
  };
  bool addNatives(JsScope& js, v8::Local<v8::Object> natives, const Native* table,
                  std::size_t count);
  static void respondCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void failCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void streamHeadCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void streamChunkCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void streamEndCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  // A streamed request body (event_loop_request_body.cc).
  static void bodyPullCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void bodyAllCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  // Copies a piece into the request's gathered body; false (and bodyError set) past its length
  // or past the app's budget.
  bool gatherPiece(Request& req, const std::string& piece);
  // Code mode (event_loop_exec.cc).
  bool makeExecutionNatives(JsScope& js, v8::Local<v8::Object> natives);
  // The execution a native call names, when it is running and belongs to the calling context.
  ExecutionSession* callingExecution(const v8::FunctionCallbackInfo<v8::Value>& info,
                                     std::uint64_t* id);
  void runExecution(App& app, std::uint64_t id);
  static void settleExecutionCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void failExecutionCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  static void callToolCallback(const v8::FunctionCallbackInfo<v8::Value>& info);
  void pauseClock(Request& req);
  void resumeClock(Request& req);
  // Hands the next of a request's streamed body to its waiting callback (outside any turn).
  void deliverBodies();
  std::deque<std::uint64_t> bodyReady_;  // requests with a waiter and something to deliver
  // The request a native call names, when it is in flight and belongs to the app whose context
  // calls, and is unanswered (kUnanswered) or streaming its body (kStreaming); else 0.
  enum class Expect { kUnanswered, kStreaming, kInFlight };
  std::uint64_t callingRequest(const v8::FunctionCallbackInfo<v8::Value>& info, Expect expect);
  // Ends a streamed body early: the sink cuts the response, and the app's stream is cancelled
  // with a DOMException `name` (after the current turn).
  void abortStream(Request& req, FailureKind kind, const std::string& detail,
                   const std::string& name);
  void runStreamCancels();
  std::deque<StreamCancel> streamCancels_;

  const EventLoopOptions options_;
  const Clock& clock_;
  LogSink& log_;
  IsolateOwner owner_;
  Watchdog& watchdog_;  // the thread's: one turn runs at a time
  bool heapLimitHit_ = false;
  // An execution's context made ahead (prepareExecution); not yet an app.
  std::unique_ptr<App> prepared_;
  // The CPU budget of a turn outside any request while an execution loads (0: cpuLimit).
  std::chrono::nanoseconds loadBudget_{0};
  // The thread's CPU time when the running turn began (0 outside a turn).
  std::chrono::nanoseconds turnCpuStart_{0};

  std::unordered_map<std::string, std::unique_ptr<App>> apps_;
  std::unordered_map<const ContextState*, App*> appByState_;
  // The requests in flight, by the id they came with (job.cancelKey), or one of the table's own,
  // and their deadlines. The runtime keeps the id in its closures and hands it only to the
  // natives: an app never sees it (it counts every app's requests, which is not an app's to know).
  using Requests = RequestTable<Request>;
  Requests requests_;

  TimerQueue<App, v8::Global<v8::Function>> timers_;  // setTimeout and setInterval, every app's

  FetchRouter& fetch_;  // the thread's; events of this loop's operations land in fetchEvents_
  LocalApps& localApps_;
  // Service calls hold a weak reference: the called app may answer after this loop is gone.
  std::shared_ptr<EventLoop*> self_ = std::make_shared<EventLoop*>(this);
  HostOpTable<App, v8::Global<v8::Object>> hostOps_;
  std::uint64_t nextServiceOp_ = 1ull << 62;  // disjoint from the fetch client's ids
  std::deque<FetchEvent> fetchEvents_;
  std::deque<ServiceResult> serviceResults_;
  std::deque<RequestJob> deferredJobs_;  // service calls, started outside the caller's turn
  // Slow host work off this thread (offload()). Last: its destructor waits for the running job
  // before anything it could report to is gone.
  OffloadPool offload_;
};

}  // namespace isolane

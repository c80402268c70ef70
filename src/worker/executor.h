#pragma once
// Executor: one executor thread and the thread-safe door into it. Reactor threads hand it
// requests through a bounded queue and a capacity-one doorbell; they never enter V8. Everything
// inside V8 happens in the app isolates the thread hosts (worker/app_isolates.h), one per app.

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/status_page.h"
#include "util/bounded_queue.h"
#include "util/clock.h"
#include "util/doorbell.h"
#include "util/guarded.h"
#include "util/result.h"
#include "worker/app_isolates.h"
#include "worker/event_loop.h"
#include "worker/execution_job.h"
#include "worker/executor_inbox.h"
#include "worker/request_job.h"

namespace isolane {

struct ExecutorOptions {
  EventLoopOptions loop;
  AppIsolatesOptions isolates;
  // Requests accepted but not yet started. Full: submit() says no and the caller sheds (503).
  std::size_t queueCapacity = 4096;
  // Where the thread's outbound fetches go (called on the executor thread, with its doorbell);
  // empty: a FetchClient of its own (in process).
  std::function<std::unique_ptr<EgressChannel>(Doorbell&)> egress;
  // Where the thread publishes what it is doing (in a worker: its line of the status page the
  // master reads); null: a record of its own.
  ThreadStatus* status = nullptr;
  // Called on the watchdog's thread once in each turn that lasts kLongTurnMark, and on the
  // executor thread each time it is about to wait for work: where an ExecutorSet moves what
  // waits behind a long turn to a free thread (may be empty; must not block).
  std::function<void()> onLongTurn;
  std::function<void()> beforePark;
};

class Executor {
 public:
  // How far into its queue a thread looks for the request of the app whose turn it is.
  static constexpr std::size_t kFairWindow = 64;
  Executor(const ExecutorOptions& options, LogSink& log,
           const Clock& clock = SystemClock::instance());
  ~Executor();  // stop()s
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Safe from any thread. Loads the app on the executor thread and waits for the outcome (on the
  // executor thread itself, e.g. from its inbox: at once). `warm`: its isolate is made now (and a
  // broken module is an error); else it is made when the first request for it arrives.
  Status loadApp(const AppSpec& spec, AppLoadReport* report = nullptr, bool warm = true);

  // Safe from any thread. False when the queue is full or the executor is stopping; `job` is
  // then untouched and the caller answers it. Otherwise job.done is called exactly once.
  bool submit(RequestJob& job);

  // Safe from any thread. The same for a code-mode execution: false when the queue is full or
  // the executor is stopping (`job` untouched); otherwise job.settled is called exactly once.
  // It runs in a fresh isolate of its own (AppIsolates::startExecution); job.key names it for
  // cancel() and toolAnswer() and must be unique among the thread's requests in flight.
  bool submitExecution(ExecutionJob& job);

  // Safe from any thread. Answers every queued and running request with kShuttingDown and joins.
  void stop();

  // Safe from any thread, once. From its next pass the thread reads `inbox` itself (it outlives
  // the executor, or stop() comes first) and waits for it together with its doorbell.
  void attachInbox(ExecutorInbox* inbox);

  // Safe from any thread. The client of the request submitted with job.cancelKey == key went
  // away (see EventLoop::cancelRequest). Unknown or finished keys are ignored.
  void cancel(std::uint64_t key);

  // Safe from any thread. The request submitted with cancel key `key` is answered WITHDRAWN
  // instead of started, if it has not started yet (its submitter places it elsewhere); a started
  // one goes on. Unknown keys are ignored.
  void withdraw(std::uint64_t key);

  // Safe from any thread. Takes out of the queue, oldest first, the requests not yet started that
  // `movable` accepts, for another thread to run (see ExecutorSet): each comes with kNone, or
  // with the answer it must be given instead (kClientGone: its client left while it waited;
  // kWithdrawn: its submitter asked for it back). `movable` runs under the queue's lock.
  struct Taken {
    RequestJob job;
    FailureKind answer = FailureKind::kNone;
  };
  std::vector<Taken> takeQueued(const std::function<bool(const RequestJob&)>& movable);
  // The answer of a request that never started: its client left (kClientGone), it was
  // withdrawn (kWithdrawn), or no queue had room for it (anything else).
  static AppResponse unstarted(FailureKind why);

  // Safe from any thread. `bytes` of the streamed body of that request reached its client: the
  // request may stream that many more (see StreamSink).
  void credit(std::uint64_t key, std::size_t bytes);

  // Safe from any thread. The next piece of the streamed request body of that request, or its
  // end, or its failure (`error` non-empty). Never dropped: the submitter sends at most a window
  // beyond what the request consumed (RequestJob::bodyConsumed).
  void requestBody(std::uint64_t key, std::string piece, bool end, std::string error);

  // Safe from any thread. The caller's answer to tool call `call` of the execution submitted with
  // cancel key `key` (see EventLoop::toolAnswer). Bounded by the tool calls in flight.
  void toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text);

  // Safe from any thread: requests submitted and not yet answered.
  std::size_t pending() const { return status_.pending.load(std::memory_order_relaxed); }
  // The appTag of the app of the thread's last (or current) turn (0: none yet).
  std::uint64_t turnApp() const { return status_.turnApp.load(std::memory_order_relaxed); }

  // Figures for heartbeats and metrics. Safe from any thread; refreshed by the executor thread
  // every few hundred milliseconds while it works.
  struct Stats {
    std::size_t heapUsedBytes = 0;  // over every app isolate of the thread
    std::size_t heapLimitBytes = 0;
    std::uint64_t executions = 0;  // requests answered
    std::size_t isolates = 0;
    std::uint64_t recycled = 0;
  };
  Stats stats() const {
    return {heapUsed_.load(std::memory_order_relaxed), heapLimit_.load(std::memory_order_relaxed),
            executions_.load(std::memory_order_relaxed), isolates_.load(std::memory_order_relaxed),
            recycled_.load(std::memory_order_relaxed)};
  }

  // Safe from any thread: whether the thread has an isolate of `app` taking requests (as of its
  // last pass).
  bool hosts(const std::string& app) const { return hosted_.lock()->count(app) != 0; }
  // Safe from any thread: since when (steady clock) the thread has been working without a
  // pause, or nullopt while it waits for work.
  std::optional<std::chrono::steady_clock::time_point> busySince() const {
    return since(status_.passSinceNs);
  }
  // The app of its last turn longer than kLongTurnMark, and when that turn ended.
  std::pair<std::uint64_t, std::optional<std::chrono::steady_clock::time_point>> lastLongTurn()
      const {
    return {status_.longTurnApp.load(std::memory_order_relaxed), since(status_.longTurnEndNs)};
  }
  // When the synchronous turn it is in began; nullopt between turns.
  std::optional<std::chrono::steady_clock::time_point> turnSince() const {
    return since(status_.turnSinceNs);
  }

 private:
  struct LoadCommand {
    AppSpec spec;
    AppLoadReport* report;  // the caller's, which waits for the outcome
    bool warm;
    std::promise<Status> outcome;
  };

  // A cancel or a credit for one request, from the submitter's thread.
  struct Control {
    enum class Kind { kCancel, kCredit, kBody, kToolAnswer } kind = Kind::kCancel;
    std::uint64_t key = 0;
    std::size_t credit = 0;
    std::string piece;  // kBody; kToolAnswer: the answer's JSON or error message
    bool end = false;   // kToolAnswer: the answer is JSON (not an error)
    std::string error;
    std::uint64_t call = 0;  // kToolAnswer
  };

  static std::optional<std::chrono::steady_clock::time_point> since(
      const std::atomic<std::int64_t>& ns) {
    std::int64_t v = ns.load(std::memory_order_relaxed);
    if (v == 0) return std::nullopt;
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(v));
  }
  void run();
  // On the executor thread: parks until rung, `until`, or (with an inbox) its descriptor is
  // readable; returns whether it is.
  bool park(std::optional<std::chrono::steady_clock::time_point> until, ExecutorInbox* inbox);
  void pushControl(Control control);
  void publish(AppIsolates& isolates);

  const ExecutorOptions options_;
  LogSink& log_;
  const Clock& clock_;
  BoundedQueue<RequestJob> requests_;
  BoundedQueue<ExecutionJob> queuedExecutions_;  // code mode's, beside the apps' requests
  // How many: a pass of an app worker, which never gets one, takes no lock to learn it.
  std::atomic<std::size_t> executionsQueued_{0};
  Guarded<std::deque<LoadCommand>> commands_;
  struct Controls {
    std::deque<Control> order;  // in arrival order; a credit or cancel once per key
    std::unordered_map<std::uint64_t, std::size_t> credits;  // summed per key
    // Marks, kept until the pass that found them has started what it took (a mark matters only
    // until its request starts or leaves the thread).
    std::unordered_set<std::uint64_t> cancelled;
    std::unordered_set<std::uint64_t> withdrawn;
  };
  Guarded<Controls> controls_;

  Doorbell doorbell_;
  std::atomic<bool> stopping_{false};
  std::atomic<ExecutorInbox*> inbox_{nullptr};
  AppIsolates* here_ = nullptr;  // the thread's isolates, while run() runs; executor thread only
  std::atomic<std::size_t> heapUsed_{0};
  std::atomic<std::size_t> heapLimit_{0};
  std::atomic<std::uint64_t> executions_{0};
  std::atomic<std::size_t> isolates_{0};
  std::atomic<std::uint64_t> recycled_{0};
  // What the thread publishes (pending, the pass and the turn it is in): options.status or
  // ownStatus_.
  ThreadStatus ownStatus_;
  ThreadStatus& status_;
  mutable Guarded<std::unordered_set<std::string>> hosted_;
  std::thread thread_;
};

}  // namespace isolane

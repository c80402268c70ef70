#pragma once
// ExecPool: the code-mode worker pool. A bounded set of worker processes (the same engine and
// protocol as the app pool), each running up to `executionsPerWorker` executions at once, every
// one in a fresh isolate. An execution goes to the least loaded live worker with room (the
// earliest on a tie); with none, a worker is spawned while the pool is under `maxWorkers`; past
// that it waits in a bounded FIFO queue, and one arriving at a full queue is refused at once with
// QUEUE_OVERFLOW naming the bound. Workers are retired (drained, then replaced) after
// `retireAfterExecutions` executions or once their RSS reaches `workerMemoryLimitBytes`; a worker
// that misses its first heartbeat or a later one, or runs an execution past its termination
// schedule (timeout + grace + delay, paused while a tool call waits on the caller), is killed,
// and its executions end with WORKER_CRASHED. Every transition is an event (a JSON log line with
// `event`) and a metric.
//
// Thread rule: execute(), shutdown(), stats() are safe from any thread. Frames and deaths arrive
// on the pool's reactor (ExecPoolOptions::reactor); timers run on the supervisor thread. Callbacks
// (done, tool dispatch) are called with no lock held, on those threads: they must not block.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ipc/exec_types.h"
#include "ipc/reactor.h"
#include "obs/log.h"
#include "obs/metrics.h"
#include "pool/crash_budget.h"
#include "pool/egress.h"
#include "pool/pool_options.h"
#include "pool/worker_channel.h"
#include "pool/worker_lifecycle.h"
#include "util/clock.h"

namespace isolane {

struct ExecPoolOptions {
  std::size_t maxWorkers = defaultPoolSize();
  std::size_t executionsPerWorker = 16;  // running at once on one worker
  std::size_t maxQueue = 256;            // executions waiting for room; past it: QUEUE_OVERFLOW
  std::uint64_t retireAfterExecutions = 10'000;       // 0: never
  std::uint64_t workerMemoryLimitBytes = 1ull << 30;  // RSS; 0: no bound
  std::chrono::milliseconds spawnTimeout{10'000};
  // Workers that crash (or fail to start) maxCrashes times within the window spend the pool's
  // budget: it starts no worker for a backoff (500 ms, doubled each time in a row, up to the
  // cooldown). Executions wait in the queue meanwhile while a worker is left; with none, they
  // fail at once with WORKER_CRASHED. Guests that crash their worker on purpose then cost at
  // most maxCrashes spawns per backoff, not one per execution.
  CrashBudgetOptions crashBudget{5, std::chrono::milliseconds(60'000),
                                 std::chrono::milliseconds(30'000)};
  std::chrono::milliseconds heartbeatInterval{5'000};
  std::chrono::milliseconds heartbeatTimeout{2'000};
  // The termination schedule of an execution: its timeout, plus this grace (the worker's own
  // limits end a run within it), plus this delay; then the worker is killed.
  // A worker ends a run by itself within its timeout plus one turn (at most 1 s of CPU, longer in
  // wall time on a loaded host): the grace covers that, generously, since the kill takes every
  // execution of the worker with it.
  std::chrono::milliseconds executionGrace{2'000};
  std::chrono::milliseconds terminationDelay{3'000};
  std::chrono::milliseconds shutdownGrace{1'000};  // SIGTERM, then SIGKILL after this
  std::size_t maxFrameBytes = kDefaultMaxFrameBytes;
  // The worker executable and its arguments (server/engine_command.h); the pool appends --slot.
  std::vector<std::string> workerCommand;
  // How a worker is started: null, a process (spawnWorkerProcess); tests give an in-memory one.
  WorkerSpawner spawnWorker;
  // Where the workers' sockets are read (ipc/reactor.h); null: the pool makes its own, of one
  // thread. It must outlive the pool.
  Reactor* reactor = nullptr;
  // Called with every event (the same fields as its log line, and "event": its name), with the
  // pool's lock held: it must not block or call the pool.
  std::function<void(const nlohmann::ordered_json& event)> onEvent;
};

// A tool call of a running execution, and the function that takes the caller's answer (call it
// once, from any thread: `ok` with JSON text, or an error message).
struct ToolCallRequest {
  std::uint64_t execution;
  std::string provider, tool, argsJson;
};
using ToolAnswer = std::function<void(bool ok, std::string text)>;
using ToolDispatch = std::function<void(const ToolCallRequest& call, ToolAnswer answer)>;

class ExecPool {
 public:
  // Tool calls of one execution waiting on the caller; a worker that asks for more is killed (its
  // own runtime refuses them before).
  static constexpr std::size_t kMaxToolCallsInFlight = 1000;

  enum class Supervision { kThread, kManual };

  ExecPool(ExecPoolOptions options, MetricsRegistry& metrics,
           const Clock& clock = SystemClock::instance(),
           Supervision supervision = Supervision::kThread);
  ~ExecPool();  // shutdown(0)
  ExecPool(const ExecPool&) = delete;
  ExecPool& operator=(const ExecPool&) = delete;

  // Runs `spec`. `dispatch` answers its tool calls (null: every call fails); `done` gets the
  // outcome exactly once, possibly before execute returns (a refusal). Returns the execution's id.
  std::uint64_t execute(ExecutionSpec spec, ToolDispatch dispatch,
                        std::function<void(ExecutionOutcome)> done);

  // The caller no longer wants execution `id` (its socket closed): the worker drops it, and `done`
  // gets CONNECTION_BROKEN now. Unknown or settled ids are ignored.
  void cancel(std::uint64_t id);

  // Refuses new executions and rejects the queued ones (CONNECTION_BROKEN), lets the running
  // ones finish for up to `drain`, then ends the rest with CONNECTION_BROKEN and stops every
  // worker (SIGTERM, then SIGKILL after shutdownGrace). Idempotent.
  void shutdown(std::chrono::milliseconds drain);

  struct Stats {
    std::size_t workers = 0;  // spawning or serving
    std::size_t ready = 0;    // serving
    std::size_t running = 0;
    std::size_t queued = 0;
  };
  Stats stats() const;
  bool stopping() const;

  // Each worker as it is now, for the dashboard.
  struct WorkerView {
    std::uint64_t id = 0;
    std::int64_t pid = 0;
    const char* state = "starting";  // starting, idle, busy, draining, killing
    std::size_t running = 0;
    std::uint64_t executions = 0;
    std::uint64_t rssBytes = 0;
  };
  std::vector<WorkerView> workerViews() const;

  // One pass of supervision at clock.now() (spawn deadlines, heartbeats, termination schedules,
  // retired workers' grace). The supervisor thread calls it; Supervision::kManual tests do.
  void superviseOnce();

 private:
  struct Worker;
  struct Execution;
  using Outbox = std::vector<std::pair<std::shared_ptr<WorkerChannel>, std::string>>;
  // Work to do once mu_ is released: frames to send and callbacks to call.
  struct After {
    Outbox frames;
    std::vector<std::function<void()>> calls;
    void run();
  };

  // exec_pool.cc: leases, the queue, settling.
  Worker* pickLocked();
  void startLocked(Execution& e, Worker& w, After& after);
  void serveQueueLocked(After& after);
  void settleLocked(std::uint64_t id, ExecutionOutcome outcome, After& after);
  void onToolCall(Worker& w, const wire::ToolCall& m, After& after);
  void answerTool(std::uint64_t workerId, std::uint64_t id, std::uint64_t call, bool ok,
                  std::string text, SteadyTime askedAt);
  void failOneWaitingLocked(const std::string& why, After& after);
  // Publishes an event: a log line named `name`, and onEvent.
  void emitLocked(Level level, std::string_view name, std::initializer_list<LogField> fields);

  // exec_pool_workers.cc: spawning, frames, heartbeats, deaths, retirement, shutdown.
  Worker& spawnLocked(After& after);
  void onFrame(std::uint64_t workerId, const wire::Frame& frame, std::string_view trailer);
  void onDeath(std::uint64_t workerId, const std::string& reason);
  void killLocked(Worker& w, const std::string& reason);
  // Every change of a worker's state (WorkerLifecycle's sink): its event, log line and metric.
  void onTransitionLocked(const Worker& w, const WorkerTransition& t);
  void retireIfDueLocked(Worker& w, After& after);
  void retireLocked(Worker& w, After& after);
  // Under maxWorkers, not shutting down, and not backing off after the crash budget was spent.
  bool maySpawnLocked() const;
  // A worker crashed or failed to start: counted against the budget (a backoff once spent).
  void countCrashLocked();
  // Backing off with no worker at all: queued executions would wait out the backoff, so they
  // fail at once (WORKER_CRASHED, stalledWhy()), and so do new ones.
  bool stalledLocked() const;
  std::string stalledWhy() const;
  void superviseLoop();

  const ExecPoolOptions options_;
  const Clock& clock_;
  const bool manual_;
  // The workers' sockets are read on options_.reactor, or on this one when none was given.
  // Declared before the workers: it outlives their processes, whose ends it handles.
  ReactorRef reactor_;

  mutable std::mutex mu_;  // guards everything below but the metrics
  std::condition_variable wake_;
  std::map<std::uint64_t, std::unique_ptr<Worker>> workers_;        // by id: the spawn order
  std::map<std::uint64_t, std::unique_ptr<Execution>> executions_;  // queued and running
  std::deque<std::uint64_t> queue_;
  // Workers sent Shutdown (retired, or the pool's shutdown): SIGTERM now, SIGKILL at the time.
  std::vector<std::pair<std::shared_ptr<WorkerChannel>, SteadyTime>> ending_;
  std::vector<std::shared_ptr<WorkerChannel>> graveyard_;  // dead; destroyed off the reactor
  std::uint64_t nextWorker_ = 1;
  std::uint64_t nextExecution_ = 1;
  bool shuttingDown_ = false;
  bool supervisorStop_ = false;
  CrashBudget crashBudget_;
  FloorBackoff backoff_;
  SteadyTime spawnHeldUntil_{};  // no spawn before then (a backoff)

  Family<Counter>& executionsTotal_;  // by outcome
  Family<Counter>& workerEvents_;     // by event
  Family<Gauge>& queueDepth_;
  Family<Histogram>& queueWait_;
  Family<Histogram>& toolDuration_;
  Family<Histogram>& executionDuration_;

  Egress egress_;  // native outbound fetches of executions
  std::thread supervisor_;
};

}  // namespace isolane

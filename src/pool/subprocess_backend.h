#pragma once
// SubprocessBackend: the default backend. A bounded set of worker processes (slots), fed by the
// master: a lock-free try-admit against the global cap, an optional bounded wait queue, the
// least-loaded live worker with room, and a supervisor that spawns, heartbeats, respawns within a
// crash budget, and answers the requests of a dead worker at once with WORKER_CRASHED.
//
// Thread rule: submit(), stop(), inFlight(), workers() are safe from any thread. Frames and deaths
// arrive on the pool's reactor (PoolOptions::reactor), a strand per worker; supervision runs on the
// supervisor thread (or on the caller of superviseOnce() in tests that drive time themselves).

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ipc/reactor.h"
#include "obs/metrics.h"
#include "pool/admission.h"
#include "pool/backend.h"
#include "pool/capped_count.h"
#include "pool/code_cache_store.h"
#include "pool/crash_budget.h"
#include "pool/egress.h"
#include "pool/heavy_apps.h"
#include "pool/pool_options.h"
#include "pool/scheduler.h"
#include "pool/worker_channel.h"
#include "pool/worker_lifecycle.h"
#include "util/clock.h"

namespace isolane {

class StreamBlocksFile;

struct WorkerInfo {
  int slot;
  WorkerState state;
  pid_t pid;
  std::size_t inFlight;
  std::size_t streams;
  bool streamingLane;
  std::uint64_t rssBytes, heapUsedBytes, heapLimitBytes, executions;
  bool coolingDown;
  std::uint64_t isolates = 0;  // app isolates alive in the worker
  bool quarantined = false;    // it crashed lately: used only when no other worker can be
  // From its status page, now: requests its threads hold, threads inside a turn longer than
  // wedgedTurn, the longest turn in progress, CPU its turns used.
  std::uint64_t pending = 0;
  std::uint32_t wedgedThreads = 0;
  std::chrono::milliseconds longestTurn{0};
  std::uint64_t turnCpuNs = 0;
};

class SubprocessBackend final : public Backend {
 public:
  enum class Supervision { kThread, kManual };

  SubprocessBackend(PoolOptions options, MetricsRegistry& metrics,
                    const Clock& clock = SystemClock::instance(),
                    Supervision supervision = Supervision::kThread);
  ~SubprocessBackend() override;

  Status start(const std::vector<AppSpec>& apps) override;
  std::uint64_t submit(AppRequest request, std::function<void(AppResponse)> done) override;
  void cancel(std::uint64_t handle) override;
  void stop() override;
  std::size_t inFlight() const override;
  bool ready() const override { return readyWorkers() > 0; }

  std::vector<WorkerInfo> workers() const;
  std::size_t readyWorkers() const;
  // One pass of supervision at clock.now(): spawn, heartbeat, deadlines, queue expiry. The
  // supervisor thread calls it in a loop; tests with Supervision::kManual call it themselves.
  void superviseOnce();

 private:
  struct Slot;
  struct Pending;

  // All below run with mu_ held unless named otherwise.
  // Frames to send once mu_ is released: nothing is sent while holding it, so that a worker
  // whose socket is full can never stall the pool (nor, through it, the reactor that reads every
  // other worker and, in `serve`, the HTTP front).
  // Frames to send once mu_ is released, each on its executor thread's socket.
  struct Outgoing {
    std::shared_ptr<WorkerChannel> proc;
    std::string frame;
    std::uint32_t thread = 0;
  };
  using Outbox = std::vector<Outgoing>;
  static void sendAll(Outbox& outbox);
  void spawnLocked(Slot& slot);
  void onFrame(int slot, std::uint64_t generation, const wire::Frame& frame,
               std::string_view trailer);
  // Work that reads or writes files (an app's modules, code caches; mu_ not held): never on the
  // reactor, which in `serve` is the HTTP front's. It runs on the supervisor thread, first thing
  // in its next pass (at once under manual supervision, on the caller's thread).
  void offTheReactor(std::function<void()> work);
  void doDiskWork();  // runs what offTheReactor queued, in order (mu_ not held)
  // A worker said hello (off the reactor; mu_ not held): its apps, with the code caches its
  // engine made before, and its first heartbeat, which it answers once they are loaded.
  void loadApps(int slot, std::uint64_t generation, const std::string& engineKey);
  // What a worker's AppLoaded says of the code cache (off the reactor; mu_ not held).
  // Believed only for `offeredSha256` (what this load was offered) and from a worker's first load
  // (`firstLoad`): see Slot::firstApp.
  void noteCodeCache(const std::string& engineKey, const std::string& app,
                     const AppLoadReport& report, const std::string& offeredSha256,
                     bool cacheOffered, bool firstLoad);
  void onDeath(int slot, std::uint64_t generation, const std::string& reason);
  // Sends SIGKILL to a live worker, once, and remembers why (its death then reports it).
  void killLocked(Slot& slot, const std::string& reason);
  // Every change of a slot's state (WorkerLifecycle's sink): its log line, event and metric.
  void onTransitionLocked(const Slot& slot, const WorkerTransition& t);
  // Dispatches to a worker or queues or sheds; mu_ must not be held.
  // Returns the request's cancel handle (queued ones have one too), 0 when shed.
  // `replayed`: this is the one replay of an idempotent request whose worker died under it.
  // `id`: the handle it was given when it was queued (0: a new one).
  std::uint64_t route(AppRequest request, std::function<void(AppResponse)> done, SteadyTime arrived,
                      bool replayed = false, std::uint64_t id = 0);
  void drainQueue();
  void finish(std::uint64_t id, AppResponse response);
  // The same with mu_ held (and unlocked on return), for a request that is pending.
  void finishLocked(std::uint64_t id, AppResponse response, std::unique_lock<std::mutex>& lock);
  // The cap a request is held by: the stream cap or the global in-flight cap.
  CappedCount& capOf(bool stream) { return admission_.cap(stream); }
  // Gives back the cap `p` holds, and its slot's count when the slot still runs it.
  void releaseLocked(const Pending& p);
  // Forgets a request whose answer has gone out (its stream ended or was cut); mu_ held.
  void forgetLocked(std::uint64_t id);
  // Where a request goes (subprocess_scheduling.cc).
  struct Pick {
    Slot* slot = nullptr;
    bool avoidedWedged = false;  // by counts alone it would have gone to a wedged worker
    bool allWedged = false;      // none: every worker with room is wedged
    bool overloaded = false;     // the slot has a standing queue (so has every other)
    bool quarantined = false;    // the slot is in quarantine (every other was unfit)
    bool confined = false;       // none: the app is heavy and the workers it may use are unfit
    // When it was made, by the machine's monotonic clock (the status pages'): the request's send
    // stamp (wire.fbs Request.sent_ns), a few microseconds early, without another clock read.
    std::chrono::steady_clock::time_point at{};
  };
  Pick pickLocked(bool stream, const std::string& app);
  // Which executor thread of `slot` (its socket) takes the next request (placeThread).
  std::uint32_t pickThreadLocked(const Slot& slot) const;
  // Every executor thread of the worker is inside one turn for longer than wedgedTurn.
  bool wedgedLocked(const Slot& slot) const;
  // Asks each wedged worker to give back the requests it has not started (GETs and HEADs without
  // a body, which can be sent again as they are), to move them to a worker that is free.
  void withdrawFromWedgedLocked(Outbox& outbox);
  // No other slot of its lane is live or about to be (all rest after spending their budget).
  bool lastLiveOfLaneLocked(const Slot& slot, SteadyTime now) const;
  void startStreamLocked(std::uint64_t id, Pending& p, Slot& slot,
                         std::unique_lock<std::mutex>& lock);
  // Bytes of a whole (not streamed) answer, held for its client and charged to the client
  // budget; over that budget the body is dropped and the answer becomes a 503.
  void takeBodyBytesLocked(Pending& p, std::string_view bytes);
  // A whole answer is in: to its client (unlocks mu_).
  void completeLocked(std::uint64_t id, Pending& p, std::unique_lock<std::mutex>& lock);
  SteadyTime streamHangDeadline() const;
  // Strict lanes (PoolOptions::streamingLane): how many slots serve streaming apps only.
  std::size_t streamingLane() const;
  bool lanes() const { return streamingLane() > 0; }
  bool inStreamingLane(const Slot& slot) const;
  // The group whose workers run `app`: its name for an app of its own process, else "".
  std::string groupOf(const std::string& app) const;
  // Whether `slot`'s workers run `app` (its group's apps).
  bool servesLocked(const Slot& slot, const std::string& app) const;
  // The apps a slot's worker loads: its own app, or the shared ones.
  std::vector<AppSpec> appsOf(const Slot& slot) const;
  // The most an app's modules may hold: they travel in one LoadApp frame.
  std::size_t maxModuleBytes() const;
  // Slots that may take `app`'s requests of this kind (the group, and the lane when shared).
  bool candidateLocked(const Slot& slot, const std::string& app, bool stream) const;

  const PoolOptions options_;
  const Clock& clock_;
  const bool manualSupervision_;
  // The workers' sockets are read on options_.reactor, or on this one when none was given.
  // Declared before the slots: it outlives their processes, whose ends it handles.
  ReactorRef reactor_;
  std::vector<AppSpec> apps_;

  // Guards slots_, pending_, graveyard_, retiredBlocks_, diskWork_, stopping_.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::vector<std::shared_ptr<WorkerChannel>> graveyard_;  // dead; destroyed off the reactor
  // Stream blocks of processes since replaced: unmapped by the supervisor, off the lock.
  std::vector<std::shared_ptr<StreamBlocksFile>> retiredBlocks_;
  std::vector<std::function<void()>> diskWork_;            // offTheReactor's, in order
  bool stopping_ = false;
  bool started_ = false;

  // Caps, the wait queue and fair shedding (pool/admission.h), the same as the in-process
  // backend's.
  Admission admission_;
  // Apps lately in long turns, which the scheduler confines (pool/heavy_apps.h).
  HeavyApps heavy_;
  // What pickLocked tells the scheduler of each slot (under mu_; kept to spare an allocation).
  std::vector<WorkerView> views_;
  // Bytes held for clients, shared with the front (PoolOptions::clientBuffers).
  const std::shared_ptr<ByteBudget> clientBuffers_;

  // Metrics.
  Family<Counter>& rejected_;
  Family<Counter>& spawns_;
  Family<Counter>& crashes_;
  Family<Counter>& respawns_;
  Family<Counter>& cooldowns_;
  Family<Histogram>& heartbeatRtt_;
  Family<Histogram>& workerStart_;
  Family<Gauge>& appVersions_;
  Family<Counter>& codeCacheLoads_;
  Family<Counter>& codeCacheStored_;
  Family<Counter>& isolateRecycles_;
  Family<Counter>& consoleDropped_;
  Family<Counter>& replays_;
  Family<Counter>& decisions_;
  // The decisions made for every request, found once (a lookup by label takes the family's lock
  // and builds a label set).
  struct Decided {
    explicit Decided(Family<Counter>& decisions)
        : leastLoaded(decisions.with({"least-loaded"})),
          avoidedWedged(decisions.with({"avoided-wedged"})),
          quarantineFallback(decisions.with({"quarantine-fallback"})),
          stream(decisions.with({"stream"})) {}
    Counter& leastLoaded;
    Counter& avoidedWedged;
    Counter& quarantineFallback;
    Counter& stream;
  } decided_{decisions_};
  Family<Counter>& quarantines_;
  Family<Counter>& backoffs_;
  Family<Counter>& streamPieces_;
  Counter& sharedPieces_;  // streamed pieces that crossed in a shared block
  Counter& socketPieces_;  // and through the worker's socket
  Family<Counter>& requestPieces_;
  Counter& sharedRequestPieces_;  // request body pieces written into a worker's request block
  Counter& socketRequestPieces_;  // and sent through its socket
  // Performs the workers' outbound fetches (they hold no network).
  Egress egress_;
  static std::uint64_t egressOwner(int slot, std::uint64_t generation) {
    return (generation << 5) | static_cast<std::uint64_t>(slot);  // at most 16 slots
  }

  const CodeCacheStore codeCache_;

  std::thread supervisor_;
};

}  // namespace isolane

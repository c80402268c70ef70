#pragma once
// WorkerLifecycle: one worker process as its supervisor sees it, the same for serve's pool
// (SubprocessBackend, one per slot, kept across respawns) and code mode's (ExecPool, one per
// worker). An explicit state machine instead of a set of flags:
//
//   resting --spawned--> spawning --hello--> loading --ready--> ready --drain--> draining
//   draining --retire--> resting
//                                                                 (every live state)
//                                                              --kill--> killing
//   (every live state, killing included) --died--> resting
//
// spawning: the process runs and has not said Hello; loading: it said Hello and loads what it
// will run (its apps; for code mode, its first heartbeat); ready: it takes work; draining: it
// takes no new work and ends once its work has; killing: SIGKILL went out (or the spawn failed),
// its death is on the way and nothing it says counts any more; resting: no process (never
// started, dead, retired), until restAt.
//
// It also keeps the worker's heartbeats and deadlines: `due(now)` says what its supervisor must do
// at `now`: nothing, send a heartbeat, or kill it (with the reason). Every change of state goes
// through one function, which hands the pool's sink what changed: the sink emits the log line, the
// event and the metric. Pure logic with time as a parameter (tests/pool/worker_lifecycle_test.cc
// drives it from tables).
//
// Thread rule: guarded by its pool's lock (SubprocessBackend::mu_, ExecPool::mu_); the sink runs
// under it and must not block.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "util/clock.h"

namespace isolane {

enum class WorkerState { kResting, kSpawning, kLoading, kReady, kDraining, kKilling };
const char* workerStateName(WorkerState state);

struct LifecycleOptions {
  std::chrono::milliseconds spawnTimeout{10'000};  // from spawn to ready
  std::chrono::milliseconds heartbeatInterval{5'000};
  std::chrono::milliseconds heartbeatTimeout{2'000};
  // A heartbeat unanswered past heartbeatTimeout is excused while the worker's status page shows
  // a thread working for less than this (its one executor thread reads the socket between its
  // passes: worker/master_inbox.h); 0: never.
  std::chrono::milliseconds busyGrace{0};
};

// What changed, for the pool's sink. `reason` says why (a kill's, a death's, a drain's); the time
// to ready is `now - spawnedAt()`.
struct WorkerTransition {
  WorkerState from, to;
  const std::string& reason;
  SteadyTime now;
  bool death = false;  // to resting because its process died (not retired)
};

class WorkerLifecycle {
 public:
  using Sink = std::function<void(const WorkerTransition&)>;

  WorkerLifecycle(LifecycleOptions options, Sink sink)
      : options_(options), sink_(std::move(sink)) {}

  WorkerState state() const { return state_; }
  // Live: a process that the supervisor listens to (spawning, loading, ready, draining).
  bool live() const { return state_ != WorkerState::kResting && state_ != WorkerState::kKilling; }
  bool ready() const { return state_ == WorkerState::kReady; }
  bool helloSeen() const {
    return state_ >= WorkerState::kLoading && state_ <= WorkerState::kDraining;
  }
  bool everReady() const { return everReady_; }
  SteadyTime spawnedAt() const { return spawnedAt_; }
  // Resting: when a new process may be spawned (now, or the end of a cooldown or a backoff).
  SteadyTime restUntil() const { return restUntil_; }
  bool restingUntilLater(SteadyTime now) const {
    return state_ == WorkerState::kResting && restUntil_ > now;
  }
  // Why it was last killed or died ("" until then); kept while it rests, cleared by a spawn.
  const std::string& reason() const { return reason_; }

  // A process was started: spawning, with the spawn deadline from now.
  void spawned(SteadyTime now);
  // Its Hello came. Fails (with the violation's text) on a second Hello or outside spawning.
  std::optional<std::string> hello(SteadyTime now);
  // Loaded: ready for work (from loading only; false otherwise).
  bool markReady(SteadyTime now);
  // No new work from here on (from ready only; false otherwise).
  bool drain(SteadyTime now, const std::string& why);
  // Its work is done and it was told to exit (a Shutdown frame): resting, with no process the
  // supervisor listens to (from draining only; false otherwise).
  bool retire(SteadyTime now);
  // SIGKILL goes out (the caller sends it): killing. The first reason is kept. False when it was
  // already killing or resting (then the caller sends nothing).
  bool kill(SteadyTime now, const std::string& why);
  // Its process is gone (any state but resting): resting until `restUntil`. `death` is how it
  // went (an exit status, a signal); the reason kept is the kill's when it was killed. Returns
  // the reason kept.
  const std::string& died(SteadyTime now, const std::string& death, SteadyTime restUntil);

  // The first heartbeat of a loading worker, sent by the pool when its loads are out: returns its
  // sequence number. `heartbeatSent` restarts the round-trip clock of the outstanding one (it sat
  // in a queue until now).
  std::uint64_t firstHeartbeat(SteadyTime now);
  void heartbeatSent(SteadyTime now) { heartbeatSentAt_ = now; }

  // A heartbeat's answer: the round trip when it answers the one outstanding, else nothing (an
  // answer nobody asked for: the pool decides whether that is a violation).
  std::optional<std::chrono::nanoseconds> heartbeatAnswered(std::uint64_t seq, SteadyTime now);

  // What is due at `now`.
  struct Due {
    enum class Kind { kNothing, kHeartbeat, kKill } kind = Kind::kNothing;
    std::uint64_t seq = 0;  // the heartbeat to send
    std::string reason;     // why to kill it
  };
  // spawning and loading: past the spawn deadline, a kill. ready and draining: a heartbeat every
  // heartbeatInterval (its sequence number, marked outstanding), a kill once one goes unanswered
  // past heartbeatTimeout, unless `longestPass` (how long the worker's busiest thread has been
  // working without a pause, as its status page says; 0: idle, or no page) is within busyGrace.
  Due due(SteadyTime now, std::chrono::milliseconds longestPass = {});

 private:
  void moveTo(WorkerState to, SteadyTime now, const std::string& reason, bool death = false);

  LifecycleOptions options_;
  Sink sink_;
  WorkerState state_ = WorkerState::kResting;
  SteadyTime spawnedAt_{}, spawnDeadline_{}, restUntil_{};
  bool everReady_ = false;
  std::string reason_;
  std::uint64_t heartbeatSeq_ = 0;
  bool heartbeatOutstanding_ = false;
  SteadyTime heartbeatSentAt_{}, nextHeartbeat_{};
};

}  // namespace isolane

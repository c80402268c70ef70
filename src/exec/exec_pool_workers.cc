// ExecPool: the workers: spawning, their frames, heartbeats, deaths, retirement, supervision and
// the pool's shutdown (leases and settling: exec_pool.cc).
#include <signal.h>

#include <nlohmann/json.hpp>

#include "exec/exec_pool.h"
#include "exec/exec_pool_state.h"
#include "ipc/exec_codec.h"
#include "ipc/fetch_codec.h"
#include "obs/log.h"

namespace isolane {

ExecPool::Worker& ExecPool::spawnLocked(After& after) {
  auto w = std::make_unique<Worker>();
  w->id = nextWorker_++;
  std::uint64_t id = w->id;
  const Worker* raw = w.get();
  w->life =
      WorkerLifecycle(LifecycleOptions{options_.spawnTimeout, options_.heartbeatInterval,
                                       options_.heartbeatTimeout},
                      [this, raw](const WorkerTransition& t) { onTransitionLocked(*raw, t); });
  std::vector<std::string> argv = options_.workerCommand;
  argv.push_back("--slot");
  argv.push_back(std::to_string(id));
  const WorkerSpawner& spawn = options_.spawnWorker ? options_.spawnWorker : spawnWorkerProcess;
  auto proc = spawn(WorkerSpawn{
      std::move(argv), options_.maxFrameBytes,
      [this, id](const wire::Frame& f, std::string_view trailer) { onFrame(id, f, trailer); },
      [this, id](const std::string& why) { onDeath(id, why); }, -1, -1, &reactor_.io()});
  if (proc) w->proc = std::shared_ptr<WorkerChannel>(std::move(proc.value()));
  w->life.spawned(clock_.now());
  if (!proc) {
    // Reported as its death once the lock is released (it stays spawning, with no process, until
    // then): its leases fail one at a time.
    after.calls.push_back([this, id, why = proc.error()] { onDeath(id, why); });
  }
  Worker& ref = *w;
  workers_.emplace(id, std::move(w));
  wake_.notify_all();  // its spawn deadline
  return ref;
}

bool ExecPool::maySpawnLocked() const {
  return !shuttingDown_ && workers_.size() < options_.maxWorkers && clock_.now() >= spawnHeldUntil_;
}

void ExecPool::countCrashLocked() {
  SteadyTime now = clock_.now();
  if (crashBudget_.recordCrash(now) <= now) return;
  std::chrono::milliseconds backoff = backoff_.next(now);
  spawnHeldUntil_ = now + backoff;
  workerEvents_.with({"backoff"}).inc();
  emitLocked(Level::kWarn, "worker.backoff",
             {{"backoff_ms", static_cast<std::int64_t>(backoff.count())},
              {"reason", "crash budget spent"}});
}

void ExecPool::killLocked(Worker& w, const std::string& reason) {
  // Its death arrives on the reactor.
  if (w.life.kill(clock_.now(), reason) && w.proc) w.proc->kill(SIGKILL);
}

void ExecPool::onTransitionLocked(const Worker& w, const WorkerTransition& t) {
  switch (t.to) {
    case WorkerState::kReady:
      workerEvents_.with({"spawn"}).inc();
      emitLocked(Level::kInfo, "worker.spawn", {{"worker", w.id}, {"pid", w.proc->pid()}});
      break;
    case WorkerState::kKilling:
      logEvent(Level::kError, "code-mode worker killed", {{"worker", w.id}, {"reason", t.reason}});
      break;
    case WorkerState::kResting:
      if (!t.death) {
        workerEvents_.with({"retire"}).inc();
        emitLocked(Level::kInfo, "worker.retire",
                   {{"worker", w.id},
                    {"reason", w.retireReason ? w.retireReason : "shutdown"},
                    {"executions", w.executions},
                    {"rss_bytes", w.rssBytes}});
      } else if (!w.life.everReady()) {
        workerEvents_.with({"spawn_failed"}).inc();
        emitLocked(Level::kError, "worker.spawn_failed", {{"worker", w.id}, {"reason", t.reason}});
      } else if (!shuttingDown_) {
        workerEvents_.with({"crash"}).inc();
        std::vector<std::uint64_t> running(w.running.begin(), w.running.end());
        emitLocked(Level::kError, "worker.crash",
                   {{"worker", w.id}, {"reason", t.reason}, {"executions", running}});
      }
      break;
    case WorkerState::kSpawning:
    case WorkerState::kLoading:
    case WorkerState::kDraining:
      break;
  }
}

void ExecPool::onFrame(std::uint64_t workerId, const wire::Frame& frame,
                       std::string_view trailer) {
  After after;
  {
    std::unique_lock lock(mu_);
    auto found = workers_.find(workerId);
    if (found == workers_.end()) return;  // retired or shut down: what it says is moot
    Worker& w = *found->second;
    if (!w.life.live()) return;
    SteadyTime now = clock_.now();
    auto violation = [&](const std::string& what) { killLocked(w, "protocol violation: " + what); };
    switch (frame.message_type()) {
      case wire::Message::Hello: {
        const wire::Hello* m = frame.message_as_Hello();
        if (w.life.helloSeen()) return violation("a second Hello");
        if (m->version() != kProtocolVersion) {
          return violation("protocol version " + std::to_string(m->version()) + ", expected " +
                           std::to_string(kProtocolVersion));
        }
        if (auto bad = w.life.hello(now)) return violation(*bad);
        after.frames.emplace_back(
            w.proc, encodeHeartbeat(w.life.firstHeartbeat(now), options_.maxFrameBytes).value());
        break;
      }
      case wire::Message::HeartbeatAck: {
        const wire::HeartbeatAck* m = frame.message_as_HeartbeatAck();
        if (!w.life.heartbeatAnswered(m->seq(), now)) {
          return violation("a heartbeat answer nobody asked for");
        }
        w.rssBytes = m->rss_bytes();
        if (w.life.markReady(now)) {
          // Its leases first, up to its capacity; the rest wait at the head of the queue.
          while (!w.reserved.empty()) {
            std::uint64_t id = w.reserved.back();
            w.reserved.pop_back();
            queue_.push_front(id);
          }
          serveQueueLocked(after);
        } else {
          retireIfDueLocked(w, after);
        }
        break;
      }
      case wire::Message::ToolCall:
        onToolCall(w, *frame.message_as_ToolCall(), after);
        break;
      case wire::Message::ExecResult: {
        const wire::ExecResult* m = frame.message_as_ExecResult();
        auto e = executions_.find(m->id());
        if (e == executions_.end() || e->second->worker != w.id) {
          if (w.cancelled.erase(m->id())) break;  // it was cancelled: its answer is moot
          return violation("a result for an execution it does not run");
        }
        ExecutionOutcome outcome = decodeExecResult(*m);
        if (outcome.ok() && !nlohmann::json::accept(outcome.resultJson)) {
          outcome = ExecutionOutcome::failed(ExecErrorCode::kInternal,
                                             "The worker's result is not JSON text.");
        }
        settleLocked(m->id(), std::move(outcome), after);
        serveQueueLocked(after);
        break;
      }
      case wire::Message::FetchCall: {
        // Only a worker running an execution that may fetch gets the network.
        if (w.nativeOutbound == 0) return violation("a fetch with no native-outbound execution");
        Result<FetchCall> call = decodeFetchCall(*frame.message_as_FetchCall(), trailer);
        if (!call) return violation(call.error());
        if (!w.egressReply) w.egressReply = Egress::replyTo(w.proc);
        std::shared_ptr<const Egress::Reply> reply = w.egressReply;
        lock.unlock();
        egress_.call(workerId, reply, std::move(call.value()));
        return;
      }
      default:
        return violation(std::string("an unexpected ") +
                         wire::EnumNameMessage(frame.message_type()) + " frame");
    }
  }
  after.run();
}

void ExecPool::onDeath(std::uint64_t workerId, const std::string& death) {
  egress_.forget(workerId);
  After after;
  {
    std::lock_guard lock(mu_);
    auto node = workers_.extract(workerId);
    if (node.empty()) return;  // retired or shut down: announced already
    Worker& w = *node.mapped();
    // What its executions are told: the kill's reason when it was killed, else how it went.
    std::string reason = w.life.state() == WorkerState::kKilling ? w.life.reason() : death;
    // A spawn that failed, or a crash: told by the transition (onTransitionLocked).
    w.life.died(clock_.now(), death, clock_.now());
    if (!shuttingDown_) countCrashLocked();
    if (w.proc) graveyard_.push_back(w.proc);
    if (!w.life.everReady()) {
      // One waiting lease fails; the others go back to the head of the queue, so a spawn that
      // keeps failing drains the queue instead of parking it.
      for (auto it = w.reserved.rbegin(); it != w.reserved.rend(); ++it) queue_.push_front(*it);
      if (!shuttingDown_) {
        failOneWaitingLocked("Worker " + std::to_string(w.id) + " failed to start: " + reason,
                             after);
      }
    } else {
      std::vector<std::uint64_t> running(w.running.begin(), w.running.end());
      for (std::uint64_t id : running) {
        settleLocked(id,
                     shuttingDown_
                         ? ExecutionOutcome::failed(ExecErrorCode::kConnectionBroken,
                                                    "Worker " + std::to_string(w.id) +
                                                        " was shut down during the execution.")
                         : ExecutionOutcome::failed(ExecErrorCode::kWorkerCrashed,
                                                    "Worker " + std::to_string(w.id) +
                                                        " crashed during an execution: " + reason),
                     after);
      }
    }
    if (!shuttingDown_) serveQueueLocked(after);  // spawns a replacement if work waits
    // Backing off with no worker at all: nothing would run the queued ones for a while.
    if (stalledLocked()) {
      while (!queue_.empty()) {
        std::uint64_t id = queue_.front();
        queue_.pop_front();
        settleLocked(id, ExecutionOutcome::failed(ExecErrorCode::kWorkerCrashed, stalledWhy()),
                     after);
      }
    }
    wake_.notify_all();
  }
  after.run();
}

bool ExecPool::stalledLocked() const {
  return !shuttingDown_ && workers_.empty() && clock_.now() < spawnHeldUntil_;
}

std::string ExecPool::stalledWhy() const {
  return "Code-mode workers crashed or failed to start " +
         std::to_string(options_.crashBudget.maxCrashes) + " times within " +
         std::to_string(options_.crashBudget.window.count()) +
         " ms; the pool starts none for a while (see worker.backoff in the log).";
}

void ExecPool::retireIfDueLocked(Worker& w, After& after) {
  if (w.life.ready()) {
    if (options_.retireAfterExecutions && w.executions >= options_.retireAfterExecutions) {
      w.retireReason = "executions";
    } else if (options_.workerMemoryLimitBytes && w.rssBytes >= options_.workerMemoryLimitBytes) {
      w.retireReason = "memory";
    }
    if (w.retireReason) w.life.drain(clock_.now(), w.retireReason);  // no new work from here on
  }
  if (w.life.state() == WorkerState::kDraining && w.running.empty()) retireLocked(w, after);
}

void ExecPool::retireLocked(Worker& w, After& after) {
  w.life.retire(clock_.now());  // the event and log line (onTransitionLocked)
  after.frames.emplace_back(w.proc, encodeShutdown(0, options_.maxFrameBytes).value());
  ending_.emplace_back(w.proc, clock_.now() + options_.shutdownGrace);
  workers_.erase(w.id);                      // `w` is gone from here
  if (maySpawnLocked()) spawnLocked(after);  // its replacement
  serveQueueLocked(after);
}

void ExecPool::superviseOnce() {
  std::vector<std::shared_ptr<WorkerChannel>> dead;
  After after;
  {
    std::lock_guard lock(mu_);
    SteadyTime now = clock_.now();
    for (auto& [id, w] : workers_) {
      if (!w->proc) continue;  // its spawn failed: its death is on the way
      WorkerLifecycle::Due due = w->life.due(now);
      if (due.kind == WorkerLifecycle::Due::Kind::kKill) {
        killLocked(*w, due.reason);
      } else if (due.kind == WorkerLifecycle::Due::Kind::kHeartbeat) {
        after.frames.emplace_back(w->proc,
                                  encodeHeartbeat(due.seq, options_.maxFrameBytes).value());
      }
    }
    for (auto& [id, e] : executions_) {
      if (e->worker == 0 || now < e->killAt) continue;
      auto w = workers_.find(e->worker);
      if (w == workers_.end() || !w->second->life.live()) continue;
      logEvent(Level::kError, "terminating a hung worker",
               {{"worker", e->worker}, {"execution", id}, {"timeout_ms", e->timeoutMs}});
      killLocked(*w->second, "execution " + std::to_string(id) +
                                 " ran past its termination schedule (timeout_ms " +
                                 std::to_string(e->timeoutMs) + " + grace)");
    }
    for (auto it = ending_.begin(); it != ending_.end();) {
      if (!it->first->alive() || now >= it->second) {
        it->first->kill(SIGKILL);
        graveyard_.push_back(it->first);
        it = ending_.erase(it);
      } else {
        ++it;
      }
    }
    // Executions that waited out a backoff get a worker now.
    if (!shuttingDown_ && !queue_.empty()) serveQueueLocked(after);
    for (auto it = graveyard_.begin(); it != graveyard_.end();) {
      if (!(*it)->alive()) {
        dead.push_back(std::move(*it));
        it = graveyard_.erase(it);
      } else {
        ++it;
      }
    }
  }
  after.run();
  dead.clear();  // off the reactor, with no lock held
}

void ExecPool::superviseLoop() {
  std::unique_lock lock(mu_);
  while (!supervisorStop_) {
    lock.unlock();
    superviseOnce();
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

void ExecPool::shutdown(std::chrono::milliseconds drain) {
  After after;
  {
    std::lock_guard lock(mu_);
    if (shuttingDown_) return;
    shuttingDown_ = true;
    for (auto& [id, w] : workers_) {
      for (std::uint64_t lease : w->reserved) queue_.push_back(lease);
      w->reserved.clear();
    }
    while (!queue_.empty()) {
      std::uint64_t id = queue_.front();
      queue_.pop_front();
      settleLocked(
          id,
          ExecutionOutcome::failed(ExecErrorCode::kConnectionBroken, "The pool is shutting down."),
          after);
    }
    queueDepth_.with({}).set(0);
  }
  after.run();
  {
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, drain, [&] { return executions_.empty(); });
    std::vector<std::uint64_t> left;
    for (auto& [id, e] : executions_) left.push_back(id);
    for (std::uint64_t id : left) {
      std::uint64_t worker = executions_.at(id)->worker;
      settleLocked(id,
                   ExecutionOutcome::failed(
                       ExecErrorCode::kConnectionBroken,
                       "Worker " + std::to_string(worker) + " was shut down during the execution."),
                   after);
    }
    SteadyTime killAt = clock_.now() + options_.shutdownGrace;
    for (auto& [id, w] : workers_) {
      if (!w->proc) continue;
      // Workers ignore SIGTERM: the Shutdown frame ends them, SIGKILL after the grace.
      after.frames.emplace_back(w->proc, encodeShutdown(0, options_.maxFrameBytes).value());
      ending_.emplace_back(w->proc, killAt);
    }
    workers_.clear();
  }
  after.run();
  // The workers get their grace to exit (those retiring already, too), then SIGKILL.
  std::vector<std::shared_ptr<WorkerChannel>> ending;
  {
    std::lock_guard lock(mu_);
    for (auto& [proc, at] : ending_) ending.push_back(proc);
  }
  endWorkers(ending, std::chrono::steady_clock::now() + options_.shutdownGrace);
  {
    std::lock_guard lock(mu_);
    for (auto& [proc, at] : ending_) graveyard_.push_back(proc);
    ending_.clear();
    supervisorStop_ = true;
    wake_.notify_all();
  }
}

}  // namespace isolane

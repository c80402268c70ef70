#include "pool/worker_lifecycle.h"

namespace isolane {

const char* workerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kResting:
      return "resting";
    case WorkerState::kSpawning:
      return "spawning";
    case WorkerState::kLoading:
      return "loading";
    case WorkerState::kReady:
      return "ready";
    case WorkerState::kDraining:
      return "draining";
    case WorkerState::kKilling:
      return "killing";
  }
  return "?";
}

void WorkerLifecycle::moveTo(WorkerState to, SteadyTime now, const std::string& reason,
                             bool death) {
  WorkerState from = state_;
  state_ = to;
  if (sink_) sink_(WorkerTransition{from, to, reason, now, death});
}

void WorkerLifecycle::spawned(SteadyTime now) {
  spawnedAt_ = now;
  spawnDeadline_ = now + options_.spawnTimeout;
  reason_.clear();
  heartbeatOutstanding_ = false;
  moveTo(WorkerState::kSpawning, now, reason_);
}

std::optional<std::string> WorkerLifecycle::hello(SteadyTime now) {
  if (state_ != WorkerState::kSpawning) return std::string("a second Hello");
  moveTo(WorkerState::kLoading, now, reason_);
  return std::nullopt;
}

bool WorkerLifecycle::markReady(SteadyTime now) {
  if (state_ != WorkerState::kLoading) return false;
  everReady_ = true;
  moveTo(WorkerState::kReady, now, reason_);
  return true;
}

bool WorkerLifecycle::drain(SteadyTime now, const std::string& why) {
  if (state_ != WorkerState::kReady) return false;
  moveTo(WorkerState::kDraining, now, why);
  return true;
}

bool WorkerLifecycle::retire(SteadyTime now) {
  if (state_ != WorkerState::kDraining) return false;
  reason_ = "retired";
  heartbeatOutstanding_ = false;
  restUntil_ = now;
  moveTo(WorkerState::kResting, now, reason_);
  return true;
}

bool WorkerLifecycle::kill(SteadyTime now, const std::string& why) {
  if (!live()) return false;
  reason_ = why;
  moveTo(WorkerState::kKilling, now, reason_);
  return true;
}

const std::string& WorkerLifecycle::died(SteadyTime now, const std::string& death,
                                         SteadyTime restUntil) {
  // A kill's reason says why ("missed a heartbeat"), with how it went after it.
  if (state_ != WorkerState::kKilling) {
    reason_ = death;
  } else if (!death.empty()) {
    reason_ += " (" + death + ")";
  }
  restUntil_ = restUntil;
  heartbeatOutstanding_ = false;
  if (state_ != WorkerState::kResting) moveTo(WorkerState::kResting, now, reason_, /*death=*/true);
  return reason_;
}

std::uint64_t WorkerLifecycle::firstHeartbeat(SteadyTime now) {
  heartbeatOutstanding_ = true;
  heartbeatSentAt_ = now;
  return ++heartbeatSeq_;
}

std::optional<std::chrono::nanoseconds> WorkerLifecycle::heartbeatAnswered(std::uint64_t seq,
                                                                           SteadyTime now) {
  if (!heartbeatOutstanding_ || seq != heartbeatSeq_) return std::nullopt;
  heartbeatOutstanding_ = false;
  nextHeartbeat_ = now + options_.heartbeatInterval;
  return now - heartbeatSentAt_;
}

WorkerLifecycle::Due WorkerLifecycle::due(SteadyTime now, std::chrono::milliseconds longestPass) {
  Due d;
  switch (state_) {
    case WorkerState::kSpawning:
    case WorkerState::kLoading:
      if (now > spawnDeadline_) {
        d.kind = Due::Kind::kKill;
        d.reason = "did not answer its first heartbeat within " +
                   std::to_string(options_.spawnTimeout.count()) + " ms";
      }
      break;
    case WorkerState::kReady:
    case WorkerState::kDraining:
      if (heartbeatOutstanding_) {
        // Excused while a pass shorter than the grace runs, and never beyond the grace.
        bool excused = longestPass.count() > 0 && longestPass < options_.busyGrace &&
                       now - heartbeatSentAt_ <= options_.heartbeatTimeout + options_.busyGrace;
        if (now - heartbeatSentAt_ > options_.heartbeatTimeout && !excused) {
          d.kind = Due::Kind::kKill;
          d.reason = "missed a heartbeat (no answer within " +
                     std::to_string(options_.heartbeatTimeout.count()) + " ms)";
        }
      } else if (now >= nextHeartbeat_) {
        d.kind = Due::Kind::kHeartbeat;
        d.seq = firstHeartbeat(now);
      }
      break;
    case WorkerState::kResting:
    case WorkerState::kKilling:
      break;
  }
  return d;
}

}  // namespace isolane

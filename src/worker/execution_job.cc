#include "worker/execution_job.h"

namespace isolane {

ExecutionOutcome completeOutcome(ExecutionSession& session, FailureKind kind,
                                 const std::string& detail) {
  ExecutionOutcome o = std::move(session.outcome);
  const ExecutionSpec& spec = session.spec;
  if (kind == FailureKind::kNone) {
    o.error = ExecErrorCode::kNone;
  } else if (o.error == ExecErrorCode::kNone) {  // ended by the loop, not by the execution
    switch (kind) {
      case FailureKind::kCpuLimit:
        o.error = ExecErrorCode::kCpuLimit;
        if (o.cpuUs + 5'000 < std::uint64_t{spec.timeoutMs} * 1000) {
          o.message =
              "one synchronous stretch of the execution used more than " +
              std::to_string(ExecLimits::kMaxTurnCpuMs) +
              " ms of CPU time (the bound of one turn: yield to a timer between long computations) "
              "and was terminated";
        } else {
          o.message = "the execution used more than its " + std::to_string(spec.timeoutMs) +
                      " ms of CPU time (timeout_ms) and was terminated";
        }
        break;
      case FailureKind::kHeapLimit:
        o.error = ExecErrorCode::kMemoryLimit;
        o.message = "the execution reached its memory limit of " + std::to_string(spec.memoryMb) +
                    " MiB (memory_mb) and was terminated";
        break;
      case FailureKind::kTimeout:
        o.error = ExecErrorCode::kTimeout;
        o.message = detail;
        break;
      case FailureKind::kShuttingDown:
        o.error = ExecErrorCode::kConnectionBroken;
        o.message = "the worker was shut down during the execution";
        break;
      case FailureKind::kClientGone:
        o.error = ExecErrorCode::kConnectionBroken;
        o.message = "the caller went away: the execution was ended";
        break;
      case FailureKind::kOverloaded:
        o.error = ExecErrorCode::kQueueOverflow;
        o.message = detail;
        break;
      default:
        o.error = ExecErrorCode::kInternal;
        o.message = detail;
        break;
    }
  }
  if (!o.ok()) o.resultJson.clear();
  if (session.started != std::chrono::steady_clock::time_point{}) {
    o.durationUs =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - session.started)
                                       .count());
  }
  return o;
}

void ExecutionJob::settle(FailureKind kind, const std::string& detail) {
  auto callback = std::move(settled);
  settled = nullptr;
  if (callback) callback(completeOutcome(*session, kind, detail));
}

ExecutionJob makeExecutionJob(std::uint64_t key, ExecutionSpec spec, ToolCallSink callTool,
                              std::function<void(ExecutionOutcome)> settled) {
  auto session = std::make_shared<ExecutionSession>();
  session->spec = std::move(spec);
  session->callTool = std::move(callTool);
  ExecutionJob job;
  job.key = key;
  job.session = std::move(session);
  job.settled = std::move(settled);
  return job;
}

}  // namespace isolane

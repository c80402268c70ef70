#pragma once
// ExecutionJob: one code-mode execution handed to an executor (Executor::submitExecution), and
// the ExecutionOutcome it settles with: the loop's own verdict (a result, the guest's error, a
// payload limit) or, for a run the loop ended (CPU, memory, timeout, shutdown), the typed error
// that names its bound. An execution is not an app's request: it names no app, has no body,
// stream or sink, and is answered with an outcome, never with an AppResponse.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ipc/exec_types.h"
#include "ipc/http_exchange.h"
#include "worker/execution_session.h"

namespace isolane {

using ToolCallSink = std::function<void(std::uint64_t call, const std::string& provider,
                                        const std::string& tool, const std::string& argsJson)>;

struct ExecutionJob {
  // The caller's id for it (nonzero): Executor::cancel and Executor::toolAnswer name it.
  std::uint64_t key = 0;
  // The spec, the tool-call sink and the outcome as the run builds it.
  std::shared_ptr<ExecutionSession> session;
  // Called exactly once: on the executor thread, or on the thread that refuses it unstarted.
  // Must not block.
  std::function<void(ExecutionOutcome)> settled;
  // When the executor accepted it.
  std::chrono::steady_clock::time_point received{};

  // Settles it with the outcome of a run the loop ended with `kind` (kNone: the session's own).
  void settle(FailureKind kind, const std::string& detail);
};

ExecutionJob makeExecutionJob(std::uint64_t key, ExecutionSpec spec, ToolCallSink callTool,
                              std::function<void(ExecutionOutcome)> settled);

// The outcome of a run the loop ended with `kind` and `detail` (kNone: it settled by itself, and
// session.outcome says how); what the session recorded first (its own error) stands.
ExecutionOutcome completeOutcome(ExecutionSession& session, FailureKind kind,
                                 const std::string& detail);

}  // namespace isolane

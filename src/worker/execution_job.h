#pragma once
// The RequestJob that runs one code-mode execution on an executor, and the outcome its answer
// becomes: the loop's own verdict (a result, the guest's error, a payload limit) or, for a run
// the loop ended (CPU, memory, timeout, shutdown), the typed error that names its bound.

#include <cstdint>
#include <functional>
#include <memory>

#include "ipc/exec_types.h"
#include "worker/request_job.h"

namespace isolane {

using ToolCallSink = std::function<void(std::uint64_t call, const std::string& provider,
                                        const std::string& tool, const std::string& argsJson)>;

// `key` is the cancel key (Executor::cancel, Executor::toolAnswer); `settled` is called once,
// on the executor thread.
RequestJob makeExecutionJob(std::uint64_t key, ExecutionSpec spec, ToolCallSink callTool,
                            std::function<void(ExecutionOutcome)> settled);

// The outcome of a run whose answer was `response`.
ExecutionOutcome completeOutcome(ExecutionSession& session, const AppResponse& response);

}  // namespace isolane

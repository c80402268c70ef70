#pragma once
// Code mode on the wire (wire.fbs Execute, ToolCall, ToolAnswer, ExecResult). Decoders read
// missing strings as empty and out-of-range enums as their safest value; the receiver checks
// every bound again (validateExecutionSpec, the payload limit), since nothing is trusted where it
// arrives.

#include <cstdint>
#include <string>

#include "ipc/exec_types.h"
#include "ipc/wire_generated.h"
#include "util/result.h"

namespace isolane {

Result<std::string> encodeExecute(std::uint64_t id, const ExecutionSpec& spec,
                                  std::size_t maxFrameBytes);
ExecutionSpec decodeExecute(const wire::Execute& m);

Result<std::string> encodeToolCall(std::uint64_t id, std::uint64_t call,
                                   const std::string& provider, const std::string& tool,
                                   const std::string& argsJson, std::size_t maxFrameBytes);
Result<std::string> encodeToolAnswer(std::uint64_t id, std::uint64_t call, bool ok,
                                     const std::string& text, std::size_t maxFrameBytes);

// An outcome too big for one frame (a result near the ceiling) is sent as PAYLOAD_LIMIT, never
// dropped: the execution always gets its answer.
std::string encodeExecResult(std::uint64_t id, const ExecutionOutcome& outcome,
                             std::size_t maxFrameBytes);
ExecutionOutcome decodeExecResult(const wire::ExecResult& m);

}  // namespace isolane

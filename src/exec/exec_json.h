#pragma once
// The JSON of code mode's network protocol (POST /v1/execute and the /v1/session WebSocket, see
// the README): an execution as a caller writes it, and an outcome as the caller reads it.
// Everything a caller sends is checked here or by validateExecutionSpec; errors say what is
// wrong. A result crosses as the JSON text the isolate produced, spliced in unchanged, so keys
// such as __proto__ or constructor arrive as they were.

#include <nlohmann/json.hpp>
#include <string>

#include "ipc/exec_types.h"
#include "util/result.h"

namespace isolane {

// What the server adds to every execution it parses.
// Whether JSON text nests arrays and objects at most `max` deep (a scan, no recursion): checked
// before a client's message is parsed, since copying or printing a deep value recurses.
bool jsonDepthWithin(std::string_view text, std::size_t max);
inline constexpr std::size_t kMaxMessageDepth = 128;

struct ExecDefaults {
  std::uint32_t timeoutMs = ExecLimits::kDefaultTimeoutMs;
  std::uint32_t memoryMb = ExecLimits::kDefaultMemoryMb;
  std::uint32_t payloadLimit = ExecLimits::kDefaultPayloadBytes;
  std::uint32_t resultLimit = ExecLimits::kDefaultResultBytes;
  std::uint32_t consoleLimit = ExecLimits::kDefaultConsoleBytes;
  // What a caller may ask for at most (the operator's ceilings; over them: refused).
  std::uint32_t maxTimeoutMs = 5 * 60'000;
  std::uint32_t maxMemoryMb = 512;
};

// {code, modules?, tools?, timeout_ms?, memory_mb?, outbound?}; modules: name -> ES module text
// (a string) or any other JSON value (a JSON module: its default export); tools: provider ->
// [tool names]; outbound: "disabled" (default) or "native".
Result<ExecutionSpec> parseExecution(const nlohmann::ordered_json& request,
                                     const ExecDefaults& defaults, bool allowTools);

// The members of a settled execution's answer, without the braces: "result":…,"logs":[…],
// "stats":{…}  or  "error":{"code","retryable","message"[,"stack"]}.
std::string outcomeMembers(const ExecutionOutcome& outcome);
nlohmann::json errorObject(ExecErrorCode code, const std::string& message,
                           const std::string& stack = {});

// The HTTP status of an outcome of POST /v1/execute.
int outcomeStatus(const ExecutionOutcome& outcome);

}  // namespace isolane

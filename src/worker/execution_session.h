#pragma once
// ExecutionSession: one code-mode execution as an executor thread runs it: what it asks for, the
// door its tool calls go out by, and what it produced so far (logs, counts, the guest's error).
// It rides on the RequestJob that starts it; the event loop fills `outcome` and the job's done
// callback reads it.
//
// Thread rule: made by the submitter, then touched only by the executor thread that runs it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "ipc/exec_types.h"

namespace isolane {

struct ExecutionSession {
  ExecutionSpec spec;
  // The guest called provider.tool with `argsJson` (checked against the payload limit). Called on
  // the executor thread; must not block. The answer comes back through Executor::toolAnswer with
  // the same `call`.
  std::function<void(std::uint64_t call, const std::string& provider, const std::string& tool,
                     const std::string& argsJson)>
      callTool;
  ExecutionOutcome outcome;  // logs, tool calls, the guest's error; completed by the done callback
  std::chrono::steady_clock::time_point started{};
  std::size_t consoleBytes = 0;
  int functionLine = 1;  // where the function starts in the module the code became

  bool allows(const std::string& provider, const std::string& tool) const {
    for (const ToolProvider& p : spec.tools) {
      if (p.name != provider) continue;
      for (const std::string& t : p.tools) {
        if (t == tool) return true;
      }
    }
    return false;
  }
  // Captures a console line, up to the console limit; past it, one marker line.
  void capture(std::string_view level, std::string_view text) {
    if (outcome.logsTruncated) return;
    std::size_t size = level.size() + 2 + text.size();
    if (consoleBytes + size > spec.consoleLimit) {
      outcome.logsTruncated = true;
      outcome.logs.push_back("[console output truncated at " + std::to_string(spec.consoleLimit) +
                             " bytes]");
      return;
    }
    consoleBytes += size;
    std::string line;
    line.reserve(size);
    line.append(level).append(": ").append(text);
    outcome.logs.push_back(std::move(line));
  }
};

}  // namespace isolane

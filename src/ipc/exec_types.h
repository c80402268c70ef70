#pragma once
// Code mode's plain data: what an execution asks for, how it ended, and its typed errors. Shared
// by the master (no V8) and the engine; it crosses the wire as wire.fbs Execute and ExecResult.
// Nothing here is trusted where it arrives: both ends check every bound again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace isolane {

// The values cross the wire (wire.fbs ExecResult.code): append only.
enum class ExecErrorCode : std::uint8_t {
  kNone,
  kQueueOverflow,     // the pool's queue is at its bound
  kWorkerCrashed,     // the worker died under the execution, or could not be started
  kConnectionBroken,  // the pool shut down during the execution
  kTimeout,           // the run clock passed timeout_ms (time waiting on the caller not counted)
  kCpuLimit,          // its JavaScript used more CPU time than timeout_ms
  kMemoryLimit,       // its isolate reached memory_mb
  kPayloadLimit,      // a tool call's arguments or answer, or the result, over its bound
  kSyntaxError,       // the code or a module does not parse (line and column in the message)
  kGuestError,        // the guest threw or rejected: its message and a stack of guest frames
  kInternal,          // a bug of ours, or a request the pool refuses (shutting down, bad input)
};
inline constexpr ExecErrorCode kLastExecErrorCode = ExecErrorCode::kInternal;

constexpr std::string_view execErrorName(ExecErrorCode code) {
  switch (code) {
    case ExecErrorCode::kNone:
      return "NONE";
    case ExecErrorCode::kQueueOverflow:
      return "QUEUE_OVERFLOW";
    case ExecErrorCode::kWorkerCrashed:
      return "WORKER_CRASHED";
    case ExecErrorCode::kConnectionBroken:
      return "CONNECTION_BROKEN";
    case ExecErrorCode::kTimeout:
      return "TIMEOUT";
    case ExecErrorCode::kCpuLimit:
      return "CPU_LIMIT";
    case ExecErrorCode::kMemoryLimit:
      return "MEMORY_LIMIT";
    case ExecErrorCode::kPayloadLimit:
      return "PAYLOAD_LIMIT";
    case ExecErrorCode::kSyntaxError:
      return "SYNTAX_ERROR";
    case ExecErrorCode::kGuestError:
      return "GUEST_ERROR";
    case ExecErrorCode::kInternal:
      return "INTERNAL";
  }
  return "INTERNAL";
}

// Retryable: the pool, not the request, was the cause; the same request may succeed elsewhere
// or later.
constexpr bool execErrorRetryable(ExecErrorCode code) {
  return code == ExecErrorCode::kQueueOverflow || code == ExecErrorCode::kWorkerCrashed ||
         code == ExecErrorCode::kConnectionBroken;
}

// The app name a native-outbound execution's fetches carry to the egress (its policy: public
// addresses only).
inline constexpr std::string_view kCodeModeEgressApp = "<codemode>";

// Where outbound fetch() of the guest goes.
enum class OutboundMode : std::uint8_t {
  kDisabled,  // fetch() rejects inside the guest (the default)
  kNative,    // performed by the trusted side under the address policy (public addresses only)
};

struct GuestModule {
  std::string name;    // what `import ... from 'name'` names, exactly
  std::string source;  // ES module text, or JSON text when `json`
  bool json = false;   // its default export is the parsed value
};

struct ToolProvider {
  std::string name;                // tools.<name>
  std::vector<std::string> tools;  // tools.<name>.<tool>(args)
};

// Defaults and ceilings of an execution's numbers; the master clamps what a caller asks for.
struct ExecLimits {
  static constexpr std::uint32_t kDefaultTimeoutMs = 30'000;
  static constexpr std::uint32_t kMaxTimeoutMs = 15 * 60'000;
  static constexpr std::uint32_t kDefaultMemoryMb = 128;
  static constexpr std::uint32_t kMinMemoryMb = 16;
  static constexpr std::uint32_t kMaxMemoryMb = 4096;
  static constexpr std::uint32_t kDefaultPayloadBytes = 1u << 20;
  static constexpr std::uint32_t kDefaultResultBytes = 4u << 20;
  static constexpr std::uint32_t kDefaultConsoleBytes = 64u << 10;
  static constexpr std::size_t kMaxCodeBytes = 4u << 20;  // code and modules together
  static constexpr std::size_t kMaxModules = 256;
  static constexpr std::size_t kMaxTools = 1024;     // over every provider
  static constexpr std::size_t kMaxNameBytes = 256;  // of a module, provider or tool name
  // One synchronous stretch of an execution's JavaScript (a turn) may use at most this much CPU:
  // the executions of a worker share its thread, and none may hold it longer.
  static constexpr std::uint32_t kMaxTurnCpuMs = 1000;
};

// One execution, as the engine runs it.
struct ExecutionSpec {
  std::string code;  // an async arrow function, optionally preceded by static imports
  std::vector<GuestModule> modules;
  std::vector<ToolProvider> tools;
  std::uint32_t timeoutMs = ExecLimits::kDefaultTimeoutMs;
  std::uint32_t memoryMb = ExecLimits::kDefaultMemoryMb;
  OutboundMode outbound = OutboundMode::kDisabled;
  std::uint32_t payloadLimit = ExecLimits::kDefaultPayloadBytes;  // each tool call's args, answer
  std::uint32_t resultLimit = ExecLimits::kDefaultResultBytes;
  std::uint32_t consoleLimit = ExecLimits::kDefaultConsoleBytes;  // captured console bytes
};

// Checks what a caller may not send (sizes, counts, names); the message names the bound.
std::optional<std::string> validateExecutionSpec(const ExecutionSpec& spec);

struct ExecutionOutcome {
  ExecErrorCode error = ExecErrorCode::kNone;
  std::string message;            // the error's, naming the bound that was hit where one was
  std::string stack;              // GUEST_ERROR: the guest's frames only
  std::string resultJson;         // on success: the function's value as JSON text
  std::vector<std::string> logs;  // "level: text", in order
  bool logsTruncated = false;
  std::uint64_t durationUs = 0;  // wall time running, not counting the wait for a worker
  std::uint64_t cpuUs = 0;
  std::uint32_t toolCalls = 0;

  bool ok() const { return error == ExecErrorCode::kNone; }
  static ExecutionOutcome failed(ExecErrorCode code, std::string message) {
    ExecutionOutcome o;
    o.error = code;
    o.message = std::move(message);
    return o;
  }
};

}  // namespace isolane

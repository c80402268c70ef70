#pragma once
// isolane::codemode::Executor: code mode for a C++ program. It runs untrusted code (an async
// arrow function an AI agent wrote, optionally preceded by static imports of the request's own
// modules) in a fresh V8 isolate per execution, inside sandboxed worker processes; the code calls
// tools (`await tools.github.search({ q: 'x' })`) that your dispatcher answers; you get back the
// function's value as JSON text, or a typed error. It links no V8: the workers are the pinned
// `node` with isolane's engine. `isolane executor` (the daemon) and `isolane exec` are built on
// it.
//
// Thread rule: every method is safe from any thread. Callbacks (done, the dispatcher) run on the
// executor's threads and must not block: answer a tool call later, from any thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace isolane::codemode {

struct Module {
  std::string name;    // what the code imports: `import { x } from 'name'`, exactly
  std::string source;  // ES module text; or JSON text when `json` (its default export)
  bool json = false;
};

enum class Outbound {
  kDisabled,  // fetch() rejects inside the guest (the default)
  kNative,    // fetch() reaches public addresses (never loopback or private ones)
};

struct Request {
  std::string code;  // e.g. "async () => (await tools.math.add({ a: 1, b: 2 })) * 2"
  std::vector<Module> modules;
  std::map<std::string, std::vector<std::string>> tools;  // provider -> the tools it offers
  std::uint32_t timeoutMs = 30'000;  // run clock: paused while a tool call waits on you
  std::uint32_t memoryMb = 128;      // the isolate's heap
  Outbound outbound = Outbound::kDisabled;
};

struct Error {
  // QUEUE_OVERFLOW, WORKER_CRASHED, CONNECTION_BROKEN, TIMEOUT, CPU_LIMIT, MEMORY_LIMIT,
  // PAYLOAD_LIMIT, SYNTAX_ERROR, GUEST_ERROR or INTERNAL.
  std::string code;
  bool retryable = false;  // the executor, not the request, was the cause: retry it
  std::string message;     // names the bound that was hit, where one was
  std::string stack;       // GUEST_ERROR: the guest's frames only
};

struct Result {
  std::optional<Error> error;     // empty: the function returned
  std::string json;               // its value as JSON text ("null" for undefined)
  std::vector<std::string> logs;  // console output, "level: text" (bounded; truncation marked)
  bool logsTruncated = false;
  std::uint64_t durationUs = 0;  // running on a worker, not waiting for one
  std::uint64_t cpuUs = 0;
  std::uint32_t toolCalls = 0;
  bool ok() const { return !error; }
};

struct ToolCall {
  std::string provider, tool;
  std::string argsJson;  // the guest's argument, as JSON text
};
// Answer once, from any thread: reply(true, json) with a JSON text the guest gets parsed, or
// reply(false, message) to reject the guest's call with that message.
using ToolReply = std::function<void(bool ok, std::string text)>;
using ToolDispatcher = std::function<void(const ToolCall& call, ToolReply reply)>;

struct ExecutorConfig {
  std::size_t workers = 0;                       // worker processes; 0: one per core (at most 16)
  std::size_t executionsPerWorker = 16;          // running at once on one worker
  std::size_t maxQueue = 256;                    // waiting for room; more: QUEUE_OVERFLOW
  std::uint64_t retireAfterExecutions = 10'000;  // then the worker is drained and replaced
  std::size_t workerMemoryMb = 1024;             // RSS at which a worker is retired
  std::uint32_t payloadLimitBytes = 1u << 20;    // each tool call's arguments and answer
  std::uint32_t resultLimitBytes = 4u << 20;
  std::uint32_t consoleLimitBytes = 64u << 10;
  bool sandbox = true;  // workers have no network, no writable files, no exec
  // The `isolane` executable the workers run; empty: the one this library was built with.
  std::string isolaneBinary;
};

class Executor {
 public:
  explicit Executor(ExecutorConfig config = {});
  ~Executor();  // shutdown(0)
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `request`; `done` gets the result exactly once.
  void execute(Request request, ToolDispatcher dispatcher, std::function<void(Result)> done);
  std::future<Result> execute(Request request, ToolDispatcher dispatcher = nullptr);

  // Refuses new executions and fails the queued ones (CONNECTION_BROKEN, retryable), lets the
  // running ones finish for up to `drain`, then ends them with CONNECTION_BROKEN and stops the
  // workers.
  void shutdown(std::chrono::milliseconds drain = std::chrono::milliseconds(0));

  // The Prometheus text of its metrics (isolane_executions_total, ...).
  std::string metrics() const;
  struct Stats {
    std::size_t workers = 0, ready = 0, running = 0, queued = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace isolane::codemode

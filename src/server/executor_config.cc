#include "server/executor_config.h"

#include <cstdlib>

#include "server/config.h"
#include "server/engine_command.h"
#include "server/toml_values.h"

namespace isolane {

Result<ExecutorSettings> loadExecutorConfig(const std::string& path) {
  ExecutorSettings s;
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Error{path + ": " + std::string(e.description())};
  }
  const toml::table* t = root["executor"].as_table();
  if (!t) return s;
  std::string where = path + " [executor]";
  if (auto listen = (*t)["listen"].value<std::string>()) {
    if (Status ok = parseHostPort(*listen, &s.daemon.host, &s.daemon.port); !ok) {
      return Error{where + ": " + ok.error()};
    }
  }
  ExecDefaults& d = s.daemon.defaults;
  std::size_t bufferedMb = s.daemon.maxBufferedBytes >> 20;
  Status checks[] = {
      readInt(*t, "workers", s.workers, 0, 16, where),
      readInt(*t, "executions_per_worker", s.executionsPerWorker, 1, 1024, where),
      readInt(*t, "max_queue", s.maxQueue, 0, 1'000'000, where),
      readInt(*t, "retire_after_executions", s.retireAfterExecutions, 0, 1LL << 40, where),
      readInt(*t, "worker_memory_mb", s.workerMemoryMb, 0, 1 << 20, where),
      readInt(*t, "timeout_ms", d.timeoutMs, 1, ExecLimits::kMaxTimeoutMs, where),
      readInt(*t, "memory_mb", d.memoryMb, ExecLimits::kMinMemoryMb, ExecLimits::kMaxMemoryMb,
              where),
      readInt(*t, "payload_limit_bytes", d.payloadLimit, 1, 16 << 20, where),
      readInt(*t, "result_limit_bytes", d.resultLimit, 1, 16 << 20, where),
      readInt(*t, "console_limit_bytes", d.consoleLimit, 0, 4 << 20, where),
      readInt(*t, "max_executions_per_socket", s.daemon.maxInflightPerSocket, 1, 100'000, where),
      readInt(*t, "max_timeout_ms", d.maxTimeoutMs, 1, ExecLimits::kMaxTimeoutMs, where),
      readInt(*t, "max_memory_mb", d.maxMemoryMb, ExecLimits::kMinMemoryMb,
              ExecLimits::kMaxMemoryMb, where),
      readInt(*t, "max_connections", s.daemon.maxConnections, 1, 1'000'000, where),
      readInt(*t, "max_message_bytes", s.daemon.maxBodyBytes, 1024, 64 << 20, where),
      readInt(*t, "max_buffered_mb", bufferedMb, 16, 1 << 20, where),
      readMs(*t, "message_timeout_ms", s.daemon.messageTimeout, where),
      readMs(*t, "shutdown_drain_ms", s.shutdownDrain, where),
  };
  for (Status& c : checks) {
    if (!c) return Error{c.error()};
  }
  if (d.timeoutMs > d.maxTimeoutMs || d.memoryMb > d.maxMemoryMb) {
    return Error{where +
                 ": timeout_ms and memory_mb must be within max_timeout_ms and max_memory_mb"};
  }
  s.daemon.maxBufferedBytes = bufferedMb << 20;
  if (auto sandbox = (*t)["sandbox"].value<bool>()) s.sandbox = *sandbox;
  return s;
}

void applyExecutorEnvironment(ExecutorSettings& settings) {
  if (const char* token = std::getenv("ISOLANE_EXECUTOR_TOKEN"); token && *token) {
    settings.daemon.token = token;
  }
}

ExecPoolOptions execPoolOptions(const ExecutorSettings& s) {
  ExecPoolOptions o;
  if (s.workers) o.maxWorkers = std::min<std::size_t>(s.workers, 16);
  o.executionsPerWorker = std::max<std::size_t>(1, s.executionsPerWorker);
  o.maxQueue = s.maxQueue;
  o.retireAfterExecutions = s.retireAfterExecutions;
  o.workerMemoryLimitBytes = static_cast<std::uint64_t>(s.workerMemoryMb) << 20;
  std::vector<std::string> args = {
      "worker",
      // Two executor threads: while one disposes of an execution's isolate and makes the next
      // one ahead, the other takes the next execution at once.
      "--threads",
      "2",
      // Each execution is an isolate of its own; one more for the spare made ahead.
      "--max-isolates",
      std::to_string(2 * (o.executionsPerWorker + 1)),
      "--max-frame-bytes",
      std::to_string(o.maxFrameBytes),
      "--sandbox",
      s.sandbox ? "true" : "false",
  };
  if (s.isolaneBinary.empty()) {
    o.workerCommand = engineCommand(args);
  } else {
    o.workerCommand = {s.isolaneBinary};
    o.workerCommand.insert(o.workerCommand.end(), args.begin(), args.end());
  }
  return o;
}

}  // namespace isolane

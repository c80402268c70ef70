#pragma once
// The configuration of code mode: `isolane executor` (the daemon), `isolane exec`, and the
// isolane::codemode::Executor of include/isolane/executor.h. Every number has a default; a TOML
// file's [executor] table and ISOLANE_EXECUTOR_* variables override them (README, "Code mode").

#include <chrono>
#include <cstdint>
#include <string>

#include "exec/exec_daemon.h"
#include "exec/exec_pool.h"
#include "util/result.h"

namespace isolane {

struct ExecutorSettings {
  ExecDaemonOptions daemon;  // listen address, token, limits of the protocol, defaults
  std::size_t workers = 0;   // 0: one per core (at most 16)
  std::size_t executionsPerWorker = 16;
  std::size_t maxQueue = 256;
  std::uint64_t retireAfterExecutions = 10'000;
  std::size_t workerMemoryMb = 1024;
  bool sandbox = true;
  std::chrono::milliseconds shutdownDrain{10'000};
  std::string isolaneBinary;  // the workers' executable; empty: the engine this build made
};

// Reads the [executor] table of a TOML file (missing keys keep their defaults).
Result<ExecutorSettings> loadExecutorConfig(const std::string& path);
// ISOLANE_EXECUTOR_TOKEN (the bearer token).
void applyExecutorEnvironment(ExecutorSettings& settings);
// The pool the settings describe, its workers started like the server's.
ExecPoolOptions execPoolOptions(const ExecutorSettings& settings);

}  // namespace isolane

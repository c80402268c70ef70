// The entry point of a test program of the layers that run JavaScript. Such a program is a shared
// object node loads, like the engine (V8 13.6 exists only inside the pinned node); its launcher
// (launcher.cc) is what ctest runs. The module initialiser takes node's platform, runs the tests
// with the launcher's arguments, and ends the process with their status.

#include <node_api.h>

#include <string>
#include <vector>

#include "runtime/platform.h"

// GoogleTest's main for most programs (gtest_main.cc); web_js_test registers its cases itself.
extern "C" int isolaneTestMain(int argc, char** argv);

extern "C" __attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env,
                                                                                     napi_value) {
  isolane::runInNode("engine test", [](std::vector<std::string> args) {
    args.insert(args.begin(), "engine-test");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return isolaneTestMain(static_cast<int>(args.size()), argv.data());
  });
}

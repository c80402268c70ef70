// The entry point of a test program of the layers that run JavaScript. Such a program is a shared
// object node loads, like the engine (V8 13.6 exists only inside the pinned node); its launcher
// (launcher.cc) is what ctest runs. The module initialiser takes node's platform, runs the tests
// with the launcher's arguments, and ends the process with their status.

#include <node_api.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/platform.h"

// GoogleTest's main for most programs (gtest_main.cc); web_js_test registers its cases itself.
extern "C" int isolaneTestMain(int argc, char** argv);

extern "C" __attribute__((visibility("default"))) napi_value napi_register_module_v1(
    napi_env, napi_value exports) {
  int status = 1;
  try {
    std::vector<std::string> args = isolane::attachToNode();
    args.insert(args.begin(), "engine-test");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    status = isolaneTestMain(static_cast<int>(args.size()), argv.data());
  } catch (const std::exception& e) {
    std::cerr << "engine test: unexpected failure: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(status);
  return exports;
}

// What ctest runs for a test program that lives in a shared object node must load
// (test_main.cc): it replaces itself with node loading that object, passing its arguments on
// (--gtest_list_tests, --gtest_filter=...), so test discovery and runs work as for any program.

#include <iostream>
#include <string>
#include <vector>

#include "server/engine_command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string why = isolane::execEngine(args, ISOLANE_ENGINE_TEST_MODULE);
  std::cerr << why << "\n";
  return 1;
}

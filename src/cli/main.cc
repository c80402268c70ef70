// The `isolane` executable: the master. It links no V8; the commands that run JavaScript start
// the engine in node (cli/commands.h).

#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return isolane::runCommandLine(args, nullptr);
}

#include "runtime/engine_key.h"

#include <node_version.h>
#include <v8.h>

#include <cstdlib>
#include <vector>

#include "runtime/platform.h"

namespace isolane {
namespace {

// node's own options: the words of /proc/self/cmdline between the executable and "-e". Those
// that only size thread pools or turn the inspector off are left out (they change no code).
std::string nodeOptions() {
  std::vector<std::string> words = processCommandLine();
  std::string options;
  for (std::size_t i = 1; i < words.size() && words[i] != "-e"; ++i) {
    if (words[i] == "--disable-sigusr1" || words[i].rfind("--v8-pool-size=", 0) == 0) continue;
    options += " " + words[i];
  }
  if (const char* env = std::getenv("NODE_OPTIONS"); env && *env) options += std::string(" ") + env;
  return options;
}

}  // namespace

const std::string& engineKey() {
  static const std::string key = std::string("v8 ") + v8::V8::GetVersion() + " node " +
                                 NODE_VERSION + " options" + nodeOptions();
  return key;
}

}  // namespace isolane

#include "runtime/engine_key.h"

#include <node_version.h>
#include <v8.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace isolane {
namespace {

// node's own options: the words of /proc/self/cmdline between the executable and "-e". Those
// that only size thread pools or turn the inspector off are left out (they change no code).
std::string nodeOptions() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string options;
  bool first = true;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    std::string word = all.substr(at, end - at);
    at = end + 1;
    if (first) {
      first = false;
      continue;
    }
    if (word == "-e") break;
    if (word == "--disable-sigusr1" || word.rfind("--v8-pool-size=", 0) == 0) continue;
    options += " " + word;
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

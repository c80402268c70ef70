#pragma once
// The environment a child process gets: this process's, less the variables that would change what
// the pinned node does inside it (NODE_OPTIONS can preload code or open an inspector; every other
// NODE_* too). Workers and the engine are started with it.
//
// Reads `environ`; safe from any thread that does not change the environment meanwhile.

#include <unistd.h>  // environ

#include <cstring>
#include <string>
#include <vector>

namespace isolane {

inline std::vector<std::string> childEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "NODE_", 5) == 0) continue;
    env.emplace_back(*e);
  }
  return env;
}

}  // namespace isolane

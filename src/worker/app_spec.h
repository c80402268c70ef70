#pragma once
// What the configuration says about one app, as the executor needs it.

#include <string>
#include <utility>
#include <vector>

namespace isolane {

struct AppSpec {
  std::string name;
  std::string modulePath;                                   // the ES module file
  std::vector<std::pair<std::string, std::string>> vars;    // become `env` string properties
  // Tests of the web APIs only: see ContextState::testHooks.
  bool testHooks = false;
};

}  // namespace isolane

#pragma once
// What the configuration says about one app, as the executor needs it. Plain data: it crosses
// from the master to the workers (wire.fbs LoadApp).

#include <string>
#include <utility>
#include <vector>

namespace isolane {

struct AppSpec {
  std::string name;
  std::string modulePath;                                 // the ES module file
  std::vector<std::pair<std::string, std::string>> vars;  // become `env` string properties
  // Addresses outbound fetch() may reach beyond public ones (see FetchPolicy).
  std::vector<std::string> fetchAllow = {};
  // Service bindings: env[first] calls the app named second, inside the server.
  std::vector<std::pair<std::string, std::string>> services = {};
  // Tests of the web APIs only: see ContextState::testHooks.
  bool testHooks = false;
};

}  // namespace isolane

#pragma once
// The fixture apps of tests/fixtures/apps, as end-to-end tests mount them.

#include <string>

#include "server/config.h"

namespace isolane::test {

inline const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

inline AppConfig fixtureApp(const std::string& name, const std::string& file,
                            const std::string& route) {
  AppConfig a;
  a.name = name;
  a.module = kApps + file;
  a.route = route;
  return a;
}

// A server config for a test: ports 0 (the OS picks), the built `isolane` as the worker, and
// the backend under test.
inline ServerConfig testServer(const std::string& backend = "subprocess") {
  ServerConfig config;
  config.listenPort = 0;
  config.adminPort = 0;
  config.workerBinary = ISOLANE_BINARY;
  config.backend = backend;
  return config;
}

}  // namespace isolane::test

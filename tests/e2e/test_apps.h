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

}  // namespace isolane::test

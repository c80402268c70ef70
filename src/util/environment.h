#pragma once
// The environments of the processes isolane starts.
// - childEnvironment: the engine `isolane run` and `serve --backend inprocess` become (the
//   operator's own command): this process's, less the variables that would change what the
//   pinned node does inside it (NODE_OPTIONS can preload code or open an inspector; every other
//   NODE_* too).
// - workerEnvironment: a worker, which runs untrusted code and must be assumed compromised
//   (DESIGN rule 14): none of this process's variables (they may hold secrets: the executor's
//   token, a password an operator exported) but the few the engine reads, and libuv's io_uring
//   off (the worker sandbox refuses it).
//
// Read `environ`; safe from any thread that does not change the environment meanwhile.

#include <unistd.h>  // environ

#include <cstdlib>
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

// The time zone this process runs in, named so that a worker, which cannot read
// /etc/localtime, gets the same: TZ as set, else the zone /etc/localtime links to (its path
// after "zoneinfo/"), else "" (the worker then runs in UTC).
inline std::string localTimeZone() {
  if (const char* tz = std::getenv("TZ"); tz && *tz) return tz;
  char target[512];
  ssize_t n = ::readlink("/etc/localtime", target, sizeof target - 1);
  if (n <= 0) return "";
  std::string path(target, static_cast<std::size_t>(n));
  std::size_t at = path.rfind("zoneinfo/");
  return at == std::string::npos ? "" : path.substr(at + 9);
}

inline std::vector<std::string> workerEnvironment() {
  std::vector<std::string> env = {"UV_USE_IO_URING=0"};
  // The log level and snapshot the engine reads; the locale Intl follows.
  for (const char* name : {"ISOLANE_LOG_LEVEL", "ISOLANE_SNAPSHOT", "LANG", "LC_ALL"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  // The time zone V8's Date follows, by name (ICU has the zones' rules in itself).
  if (std::string tz = localTimeZone(); !tz.empty()) env.push_back("TZ=" + tz);
  return env;
}

}  // namespace isolane

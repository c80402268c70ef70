#pragma once
// Reading numbers from a TOML table with their bounds; the error names the key, the bounds and
// where (the file and table). Shared by the configurations of `serve` and `executor`.

#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "util/result.h"

namespace isolane {

template <typename T>
inline Status readInt(const toml::table& t, const char* key, T& out, std::int64_t lo,
                      std::int64_t hi, const std::string& where) {
  const toml::node* n = t.get(key);
  if (!n) return Status::success();
  auto v = n->value<std::int64_t>();
  if (!v || *v < lo || *v > hi) {
    return Error{where + ": '" + key + "' must be an integer from " + std::to_string(lo) + " to " +
                 std::to_string(hi)};
  }
  out = static_cast<T>(*v);
  return Status::success();
}

inline Status readMs(const toml::table& t, const char* key, std::chrono::milliseconds& out,
                     const std::string& where) {
  std::int64_t v = out.count();
  Status s = readInt(t, key, v, 1, 86'400'000, where);
  out = std::chrono::milliseconds(v);
  return s;
}

}  // namespace isolane

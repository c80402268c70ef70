#pragma once
// Test helper: reads from a descriptor until `n` bytes came or it ends (blocking).

#include <unistd.h>

#include <cstddef>
#include <string>

namespace isolane::test {

inline std::string readAll(int fd, std::size_t n) {
  std::string out;
  char buffer[65536];
  while (out.size() < n) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) break;
    out.append(buffer, static_cast<std::size_t>(got));
  }
  return out;
}

}  // namespace isolane::test

#pragma once
// A whole file's bytes, as they are on disk.

#include <fstream>
#include <sstream>
#include <string>

namespace isolane {

// False (and `out` untouched) when the file cannot be opened or read.
inline bool readFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return false;
  *out = ss.str();
  return true;
}

}  // namespace isolane

#pragma once
// Reading a Prometheus text page (the admin listener's /metrics) in end-to-end tests.

#include <string>

namespace isolane::test {

// The value of the sample `series` (a name, with its {labels} if it has any, exactly as the page
// writes them) in `page`; `absent` when the page has no such sample.
inline double sample(const std::string& page, const std::string& series, double absent = 0) {
  std::string text = "\n" + page;
  std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return absent;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace isolane::test

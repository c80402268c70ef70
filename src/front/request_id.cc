#include "front/request_id.h"

#include <atomic>
#include <cstdint>
#include <random>

namespace isolane {

std::string newRequestId() {
  // A random per-process base plus a counter: unique within a run, unguessable across runs,
  // and no lock.
  static const std::uint64_t base = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t v =
      base ^ (counter.fetch_add(1, std::memory_order_relaxed) * 0xBF58476D1CE4E5B9ull);
  std::string id(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) id[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 15];
  return id;
}

}  // namespace isolane

namespace isolane {

bool isWellFormedRequestId(std::string_view value) {
  if (value.empty() || value.size() > 128) return false;
  for (char c : value) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace isolane

#pragma once
// CappedCount: how many requests hold a place under a cap, taken and given back without a lock
// (the global in-flight cap, and the stream cap, of both backends).
//
// Thread rule: every method is safe from any thread.

#include <atomic>
#include <cstddef>
#include <string>

#include "ipc/http_exchange.h"

namespace isolane {

class CappedCount {
 public:
  explicit CappedCount(std::size_t cap) : cap_(cap) {}

  // Takes a place; false when the cap is reached.
  bool tryTake() {
    std::size_t cur = count_.load(std::memory_order_relaxed);
    while (cur < cap_) {
      if (count_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  void give(std::size_t n = 1) { count_.fetch_sub(n, std::memory_order_acq_rel); }
  std::size_t taken() const { return count_.load(std::memory_order_acquire); }
  std::size_t room() const {
    std::size_t t = taken();
    return t < cap_ ? cap_ - t : 0;
  }
  std::size_t cap() const { return cap_; }

 private:
  const std::size_t cap_;
  std::atomic<std::size_t> count_{0};
};

// The answer to a stream over the stream cap.
inline AppResponse streamCapShed(std::size_t cap) {
  return AppResponse::shed(
      "stream-full", "shed: " + std::to_string(cap) + " streams are open (stream_max_inflight)");
}

}  // namespace isolane

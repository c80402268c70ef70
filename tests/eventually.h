#pragma once
// Test helper: polls `pred` until it holds or `limit` passes. For what happens on other threads
// or in other processes, where there is no clock to inject.

#include <chrono>
#include <thread>

namespace isolane::test {

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace isolane::test

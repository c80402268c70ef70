#pragma once
// A pool's start returns once one worker is ready (the others join as they start): tests about
// several workers wait for every one first.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "pool/subprocess_backend.h"
#include "server/server.h"

namespace isolane::test {

inline void waitForReadyWorkers(const SubprocessBackend& pool, std::size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pool.readyWorkers() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(pool.readyWorkers(), n);
}

// Every worker of a server's pool (nothing to wait for in process).
inline void waitForEveryWorker(Server& server) {
  if (auto* pool = dynamic_cast<SubprocessBackend*>(&server.backend())) {
    waitForReadyWorkers(*pool, pool->workers().size());
  }
}

}  // namespace isolane::test

#pragma once
// A pool's start returns once one worker is ready (the others join as they start): tests about
// several workers wait for every one first.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
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

// Starts a server from `config` and waits for every worker; null, with a test failure, when it
// does not start.
inline std::unique_ptr<Server> startServer(ServerConfig config) {
  auto server = std::make_unique<Server>(std::move(config));
  if (Status s = server->start(); !s) {
    ADD_FAILURE() << s.error();
    return nullptr;
  }
  waitForEveryWorker(*server);
  return server;
}

}  // namespace isolane::test

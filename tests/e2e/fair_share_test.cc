// Fair share under a CPU flood, end to end: while eight clients keep one app's requests in long
// synchronous turns (each ended by the CPU limit), another app on the same two workers answers
// every request promptly. The flooding app is confined to one worker of the two once it is seen
// in long turns (pool/heavy_apps.h, pool/scheduler.h), its surplus waits in its own queue or is
// shed as app-overloaded, and it still gets its share: its requests keep running.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::HttpConnection;
using test::Response;

class FairShare : public ::testing::TestWithParam<std::string> {};

TEST_P(FairShare, AFloodOfLongTurnsNeverHoldsEveryThreadWhileAnotherAppWaits) {
  // Two threads either way: two workers of one thread, or two threads in process.
  bool inProcess = GetParam() == "inprocess";
  ServerConfig config;
  config.listenPort = 0;
  config.adminPort = 0;
  config.workerBinary = ISOLANE_BINARY;
  config.backend = GetParam();
  config.pool.size = 2;
  config.executorThreads = inProcess ? 2 : 1;
  config.requestCpuLimit = 300ms;  // each wedge ends here
  config.apps = {test::fixtureApp("wedge", "spin.js", "/wedge"),
                 test::fixtureApp("good", "hello.js", "/good")};
  Server server(std::move(config));
  ASSERT_TRUE(server.start());
  test::waitForEveryWorker(server);
  auto* pool = dynamic_cast<SubprocessBackend*>(&server.backend());
  std::vector<pid_t> pids;
  if (pool) {
    for (const WorkerInfo& w : pool->workers()) pids.push_back(w.pid);
  }

  std::atomic<bool> stop{false};
  std::atomic<int> wedgeRan{0}, wedgeShed{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 8; ++i) {
    flood.emplace_back([&] {
      while (!stop) {
        HttpConnection c(server.port());
        Response r = c.request("GET", "/wedge/?ms=1000", "", "Connection: close\r\n");
        if (r.result_int() == 503) {
          ++wedgeShed;
        } else {
          ++wedgeRan;  // 500 CPU_LIMIT: it ran its turn
        }
      }
    });
  }
  // Long enough for the flood to be seen in long turns and confined.
  while (wedgeRan < 2) std::this_thread::sleep_for(5ms);

  HttpConnection c(server.port());
  std::vector<std::chrono::microseconds> took;
  int ok = 0;
  for (int i = 0; i < 100; ++i) {
    auto start = std::chrono::steady_clock::now();
    Response r = c.request("GET", "/good/x");
    took.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start));
    if (r.result_int() == 200) ++ok;
  }
  stop = true;
  for (auto& t : flood) t.join();
  std::sort(took.begin(), took.end());
  std::cout << GetParam() << ": good under the flood: " << ok << "/100 answered 200, p50 " << took[49].count()
            << " us, p99 " << took[98].count() << " us; wedge: " << wedgeRan << " ran, "
            << wedgeShed << " shed\n";
  EXPECT_EQ(ok, 100);
  // Without the confinement, a good request waits behind a 300 ms turn on either worker.
  EXPECT_LT(took[98], 150ms);
  EXPECT_GT(wedgeRan.load(), 2) << "the flood still gets its share of threads";
  for (std::size_t i = 0; i < pids.size(); ++i) {
    EXPECT_EQ(pool->workers()[i].pid, pids[i]) << "no worker was killed";
  }
  if (pool) {
    std::string metrics = test::get(server.adminPort(), "/metrics").body();
    EXPECT_NE(metrics.find("isolane_schedule_decisions_total{reason=\"heavy-app-waits\"}"),
              std::string::npos);
  }
  server.stop();
}

TEST_P(FairShare, WithOneThreadInThePoolTheReserveAnswersTheOtherApps) {
  ServerConfig config;
  config.listenPort = 0;
  config.adminPort = 0;
  config.workerBinary = ISOLANE_BINARY;
  config.backend = GetParam();
  config.pool.size = 1;
  config.executorThreads = 1;
  config.requestCpuLimit = 300ms;
  config.apps = {test::fixtureApp("wedge", "spin.js", "/wedge"),
                 test::fixtureApp("good", "hello.js", "/good")};
  Server server(std::move(config));
  ASSERT_TRUE(server.start());
  test::waitForEveryWorker(server);
  std::atomic<bool> stop{false};
  std::atomic<int> wedgeRan{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 4; ++i) {
    flood.emplace_back([&] {
      while (!stop) {
        HttpConnection c(server.port());
        Response r = c.request("GET", "/wedge/?ms=1000", "", "Connection: close\r\n");
        if (r.result_int() != 503) ++wedgeRan;
      }
    });
  }
  while (wedgeRan < 1) std::this_thread::sleep_for(5ms);
  HttpConnection c(server.port());
  std::vector<std::chrono::microseconds> took;
  int ok = 0;
  for (int i = 0; i < 50; ++i) {
    auto start = std::chrono::steady_clock::now();
    Response r = c.request("GET", "/good/x");
    took.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start));
    if (r.result_int() == 200) ++ok;
  }
  stop = true;
  for (auto& t : flood) t.join();
  std::sort(took.begin(), took.end());
  std::cout << GetParam() << ", one thread: good under the flood: " << ok << "/50, p50 "
            << took[24].count() << " us, p99 " << took[48].count() << " us\n";
  EXPECT_EQ(ok, 50);
  // Without the reserve each waits behind 300 ms turns.
  EXPECT_LT(took[24], 50ms);
  EXPECT_LT(took[48], 150ms);
  server.stop();
}

INSTANTIATE_TEST_SUITE_P(Backends, FairShare, ::testing::Values("subprocess", "inprocess"));

}  // namespace
}  // namespace isolane

// Admission end to end, in both backends: the same configuration sheds the same requests with
// the same reasons (pool/admission.h is shared), whether the apps run in worker processes or in
// executor threads of the server.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
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

class AdmissionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void start(ServerConfig config) {
    config.pool.size = 1;
    config.executorThreads = 1;
    // One thread with nothing beside it: what admission does alone (the reserve thread a pool of
    // one thread gets by default is tested in fair_share_test).
    config.pool.reserveThread = false;
    server_ = test::startServer(std::move(config));
    ASSERT_TRUE(server_);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  // Waits until the server holds `n` requests (running or waiting).
  void waitForInFlight(std::size_t n) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (server_->inFlight() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GE(server_->inFlight(), n);
  }
  // Sends GET `path` on a connection of its own, then waits until the server holds `n` requests.
  std::unique_ptr<HttpConnection> hold(const std::string& path, std::size_t n) {
    auto c = std::make_unique<HttpConnection>(server_->port());
    c->send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    waitForInFlight(n);
    return c;
  }
  std::string metrics() { return test::get(server_->adminPort(), "/metrics").body(); }

  static ServerConfig withApps() {
    ServerConfig config = test::testServer(GetParam());
    config.apps = {test::fixtureApp("slow", "slow.js", "/slow"),
                   test::fixtureApp("spin", "spin.js", "/spin"),
                   test::fixtureApp("hello", "hello.js", "/hello")};
    return config;
  }

  std::unique_ptr<Server> server_;
};

TEST_P(AdmissionTest, OverTheCapWithNoQueueIsShedAtOnce) {
  ServerConfig config = withApps();
  config.pool.maxInflight = 1;
  start(std::move(config));
  auto busy = hold("/slow/?ms=500", 1);
  Response r = test::get(server_->port(), "/hello/");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r["x-isolane-shed"], "queue-full");
  EXPECT_EQ(r["retry-after"], "1");
  EXPECT_EQ(busy->read().body(), "done");
  EXPECT_NE(metrics().find("isolane_admission_rejected_total{reason=\"queue-full\"} 1"),
            std::string::npos);
}

TEST_P(AdmissionTest, AQueuedRequestRunsWhenRoomComesFree) {
  ServerConfig config = withApps();
  config.pool.maxInflight = 1;
  config.pool.maxQueue = 1;
  config.pool.queueTimeout = 5s;
  start(std::move(config));
  auto busy = hold("/slow/?ms=300", 1);
  auto queued = hold("/hello/q", 2);
  // The queue holds one: a third is shed.
  Response third = test::get(server_->port(), "/hello/third");
  EXPECT_EQ(third.result_int(), 503);
  EXPECT_EQ(third["x-isolane-shed"], "queue-full");
  EXPECT_EQ(busy->read().body(), "done");
  Response r = queued->read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "hello /q");
}

TEST_P(AdmissionTest, ARequestThatWaitsPastTheQueueTimeoutIsShed) {
  ServerConfig config = withApps();
  config.pool.maxInflight = 1;
  config.pool.maxQueue = 4;
  config.pool.queueTimeout = 100ms;
  start(std::move(config));
  auto busy = hold("/slow/?ms=1500", 1);
  auto sent = std::chrono::steady_clock::now();
  Response r = test::get(server_->port(), "/hello/");
  auto waited = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r["x-isolane-shed"], "queue-timeout");
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 1000ms) << "it waited for the slow request instead of its own timeout";
  EXPECT_EQ(busy->read().body(), "done");
  EXPECT_NE(metrics().find("isolane_admission_rejected_total{reason=\"queue-timeout\"} 1"),
            std::string::npos);
}

TEST_P(AdmissionTest, WhenEveryThreadIsWedgedARequestWaitsForOneInsteadOfQueueingBehindIt) {
  // max_queue = 0, yet the request is not shed: a thread comes free within the CPU limit.
  ServerConfig config = withApps();
  config.pool.wedgedTurn = 50ms;
  config.pool.queueTimeout = 5s;
  start(std::move(config));
  auto spin = hold("/spin/?ms=600", 1);
  std::this_thread::sleep_for(100ms);  // past wedged_turn_ms: the only thread is wedged
  HttpConnection waiting(server_->port());
  waiting.send("GET /hello/w HTTP/1.1\r\nHost: x\r\n\r\n");
  // It waits in the admission queue, not in the wedged thread's.
  auto deadline = std::chrono::steady_clock::now() + 200ms;
  std::string page;
  do {
    page = metrics();
  } while (page.find("isolane_queue_depth 1") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_NE(page.find("isolane_queue_depth 1"), std::string::npos) << page;
  Response r = waiting.read();
  EXPECT_EQ(r.result_int(), 200) << r["x-isolane-shed"];
  EXPECT_EQ(r.body(), "hello /w");
  EXPECT_EQ(spin->read().result_int(), 200);
}

TEST_P(AdmissionTest, AStreamOverTheStreamCapIsShedWithItsReason) {
  ServerConfig config = withApps();
  config.apps.push_back(test::fixtureApp("stream", "stream.js", "/stream"));
  config.apps.back().streaming = true;
  config.pool.streamMaxInflight = 1;
  start(std::move(config));
  auto open = hold("/stream/sse?n=1000&ms=20", 1);
  Response r = test::get(server_->port(), "/stream/sse?n=1");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r["x-isolane-shed"], "stream-full");
  // Short requests keep their own room.
  EXPECT_EQ(test::get(server_->port(), "/hello/s").result_int(), 200);
}

TEST_P(AdmissionTest, AStandingQueueShedsTheAppThatBuildsItNotItsNeighbour) {
  // Turns of 30 ms (under wedged_turn_ms) from eight clients on one thread: each request waits
  // about 200 ms for its first turn, a standing queue over shed_delay_ms.
  ServerConfig config = withApps();
  config.pool.shedDelay = 20ms;
  start(std::move(config));
  std::atomic<bool> stop{false};
  std::atomic<int> overloaded{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 8; ++i) {
    flood.emplace_back([&] {
      while (!stop) {
        HttpConnection c(server_->port());
        Response r = c.request("GET", "/spin/?ms=30", "", "Connection: close\r\n");
        if (r["x-isolane-shed"] == "overloaded") ++overloaded;
      }
    });
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (overloaded == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  // The neighbour, with nothing in flight, is under any share: it waits its turn, unshed.
  Response neighbour = test::get(server_->port(), "/hello/n");
  stop = true;
  for (auto& t : flood) t.join();
  EXPECT_GT(overloaded.load(), 0);
  EXPECT_EQ(neighbour.result_int(), 200) << neighbour["x-isolane-shed"];
  EXPECT_NE(metrics().find("isolane_admission_rejected_total{reason=\"overloaded\"}"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, AdmissionTest, ::testing::Values("subprocess", "inprocess"));

}  // namespace
}  // namespace isolane

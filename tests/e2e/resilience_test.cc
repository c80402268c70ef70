// The real server on port 0 under the loads that froze pools before (render-pool.md's
// post-mortem): work whose client has gone is dropped before it runs.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::get;
using test::HttpConnection;
using test::Response;

// The value of the sample `name{labels}` in a Prometheus text page (0 when absent).
double sample(const std::string& page, const std::string& series) {
  std::size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(page.substr(at + series.size() + 2));
}

class ResilienceTest : public ::testing::Test {
 protected:
  void start(ServerConfig config) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    test::waitForEveryWorker(*server_);
  }
  std::string metrics() { return "\n" + get(server_->adminPort(), "/metrics").body(); }
  void TearDown() override {
    if (server_) server_->stop();
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

// One worker thread, a route that burns 300 ms of CPU: eight clients ask and hang up at once.
// Before, all eight ran (2.4 s of CPU for nobody) and the next client waited behind them; now
// only what started before the hang-ups runs, the rest is dropped and counted as 499.
TEST_F(ResilienceTest, RequestsWhoseClientsLeftAreDroppedBeforeTheyRun) {
  ServerConfig config;
  config.pool.size = 1;
  config.executorThreads = 1;
  config.apps = {test::fixtureApp("spin", "spin.js", "/spin"),
                 test::fixtureApp("counter", "counter.js", "/counter")};
  start(std::move(config));
  {
    std::vector<std::unique_ptr<HttpConnection>> gone;
    for (int i = 0; i < 8; ++i) {
      gone.push_back(std::make_unique<HttpConnection>(port_));
      gone.back()->send("GET /spin?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    std::this_thread::sleep_for(50ms);  // let them reach the worker's queue, then hang up
  }
  Response next = get(port_, "/counter");
  EXPECT_EQ(next.result_int(), 200);
  std::string page;
  // Every one of the eight is accounted for: answered (it had started) or dropped (499).
  for (int i = 0; i < 200; ++i) {
    page = metrics();
    if (sample(page, R"(isolane_requests_total{app="spin",status="200"})") +
            sample(page, R"(isolane_requests_total{app="spin",status="499"})") ==
        8) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  double ran = sample(page, R"(isolane_requests_total{app="spin",status="200"})");
  double dropped = sample(page, R"(isolane_requests_total{app="spin",status="499"})");
  EXPECT_EQ(ran + dropped, 8) << page;
  EXPECT_GE(dropped, 5) << "ran " << ran << " of 8 abandoned requests";
}

}  // namespace
}  // namespace isolane

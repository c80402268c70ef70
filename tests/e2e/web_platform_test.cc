// The web platform as a client meets it over HTTP: the app's own response headers reach the
// client unchanged, and a trusted proxy's request id is adopted.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using test::HttpConnection;
using test::Response;

class WebPlatformTest : public ::testing::Test {
 protected:
  void start(ServerConfig config) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.pool.size = 1;
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    test::waitForEveryWorker(*server_);
  }
  void startApps(std::vector<std::string> trustedProxies = {}) {
    ServerConfig config;
    config.trustedProxies = std::move(trustedProxies);
    config.apps = {test::fixtureApp("headers", "own_headers.js", "/")};
    start(std::move(config));
  }
  Response get(const std::string& path, const std::string& requestId = "") {
    HttpConnection c(port_);
    std::string extra = requestId.empty() ? "" : "X-Request-Id: " + requestId + "\r\n";
    c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n");
    return c.read();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

TEST_F(WebPlatformTest, TheAppsRequestIdWinsOverIsolanes) {
  startApps();
  Response own = get("/own");
  EXPECT_EQ(own.body(), "own");
  EXPECT_EQ(own["x-request-id"], "app-chosen-id");
  EXPECT_EQ(own.count("x-request-id"), 1u) << "one id, the app's";
  Response streamed = get("/own-stream");
  EXPECT_EQ(streamed.body(), "streamed");
  EXPECT_EQ(streamed["x-request-id"], "app-stream-id");
  Response plain = get("/plain");
  EXPECT_EQ(std::string(plain["x-request-id"]).size(), 16u) << "isolane's, where the app set none";
}

TEST_F(WebPlatformTest, AnUntrustedPeersRequestIdIsPassedOnButNotAdopted) {
  startApps();
  Response r = get("/plain", "from-the-client");
  EXPECT_EQ(r.body(), "seen from-the-client");
  EXPECT_NE(r["x-request-id"], "from-the-client");
  EXPECT_EQ(std::string(r["x-request-id"]).size(), 16u);
}

TEST_F(WebPlatformTest, ATrustedProxysWellFormedRequestIdIsAdopted) {
  startApps({"10.9.9.9", "127.0.0.1"});
  EXPECT_EQ(get("/plain", "lb-7f3a.01")["x-request-id"], "lb-7f3a.01");
  // Not well formed: a space, and over 128 characters. isolane makes its own.
  Response spaced = get("/plain", "two words");
  EXPECT_EQ(std::string(spaced["x-request-id"]).size(), 16u);
  Response longer = get("/plain", std::string(129, 'a'));
  EXPECT_EQ(std::string(longer["x-request-id"]).size(), 16u);
}

}  // namespace
}  // namespace isolane

// Hostile apps end to end, in both backends: each case of tests/fixtures/apps/tamper.js rewrites
// prototypes and globals the way an attacker would, in its own app on a shared server. Every
// answer must be what the Fetch standard says or a 500 for that request alone; the bytes on the
// wire are only what the app legitimately produced (no injected header line, no status past
// 599); and after each case a healthy app on the same server still answers.

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using test::HttpConnection;
using test::Response;

struct Expected {
  int status;
  const char* body;  // checked when status is 200-299
};

// What each case must get: the standard's answer, or a 500 where the app made its own response
// impossible (its handler's promise never becomes a Response, or it asked for bytes the wire
// cannot carry).
const std::map<std::string, Expected> kCases = {
    {"then-forges-status", {200, "x"}},
    {"regexp-test-lies", {500, nullptr}},
    {"regexp-exec-lies", {500, nullptr}},
    {"promise-then-throws", {200, "x"}},
    {"promise-species", {200, "x"}},
    {"promise-global-replaced", {200, "x"}},
    {"array-push-replaced", {200, "x"}},
    {"array-push-throws", {200, "x"}},
    {"array-map-replaced", {200, "x"}},
    {"array-iterator-forged", {500, nullptr}},
    {"array-iterator-next", {200, "x"}},
    {"array-index-setters", {500, nullptr}},
    {"object-prototype-accessors", {200, "survived"}},
    {"array-species", {200, "x"}},
    // Response.json() serializes with the intrinsic JSON.stringify, as Fetch says.
    {"json-replaced", {200, "{\"a\":1}"}},
    {"response-prototype-getters", {200, "x"}},
    {"headers-prototype-methods", {200, "x"}},
    {"string-prototype", {200, "x"}},
    {"globals-replaced", {200, "x"}},
    {"map-prototype", {200, "x"}},
    {"changing-header-getters", {200, "x"}},
    {"status-object-valueof", {500, nullptr}},
    {"status-object-201", {201, "x"}},
    {"header-object-tostring", {500, nullptr}},
    {"status-text-crlf", {500, nullptr}},
    {"million-headers", {500, nullptr}},
    {"response-subclass", {202, "subclass"}},
    {"response-proxy", {500, nullptr}},
    {"thenable-object-prototype", {500, nullptr}},
    {"caller-leak", {200, "sealed"}},
    {"stack-trace-leak", {200, "sealed"}},
};

class HostileAppTest : public ::testing::TestWithParam<std::string> {
 protected:
  // A server on port 0 in the backend under test, one worker with one executor thread (so an
  // app has one isolate, and its state is one).
  static ServerConfig baseConfig() {
    ServerConfig config = test::testServer(GetParam());
    config.pool.size = 1;
    config.executorThreads = 1;
    return config;
  }
  void SetUp() override {
    ServerConfig config = baseConfig();
    config.requestTimeout = std::chrono::milliseconds(3000);
    config.heapLimitMb = 512;  // the million-headers case must reach the header check
    for (const auto& [name, expected] : kCases) {
      AppConfig app = test::fixtureApp(name, "tamper.js", "/" + name);
      app.vars = {{"CASE", name}};
      config.apps.push_back(std::move(app));
    }
    config.apps.push_back(test::fixtureApp("hello", "hello.js", "/hello"));
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    test::waitForEveryWorker(*server_);  // start() returns once one is ready
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  std::unique_ptr<Server> server_;
};

TEST_P(HostileAppTest, EveryCaseIsStandardOrA500AndTheServerServesOn) {
  std::uint16_t port = server_->port();
  for (const auto& [name, expected] : kCases) {
    // The first request installs the tampering; the second runs with it in place. (A million
    // headers take the app two seconds to build: once is enough.)
    int rounds = name == "million-headers" ? 1 : 2;
    for (int round = 0; round < rounds; ++round) {
      HttpConnection c(port);
      Response r = c.request("GET", "/" + name + "/", "", "Connection: close\r\n");
      EXPECT_EQ(r.result_int(), static_cast<unsigned>(expected.status))
          << name << " round " << round << ": " << r.body();
      if (expected.body && r.result_int() == static_cast<unsigned>(expected.status)) {
        EXPECT_EQ(r.body(), expected.body) << name;
      }
      for (const auto& field : r) {
        std::string line = std::string(field.name_string()) + ": " + std::string(field.value());
        EXPECT_EQ(line.find("pwned"), std::string::npos) << name << ": injected " << line;
        EXPECT_NE(field.name_string(), "x") << name << ": injected " << line;
        EXPECT_NE(field.name_string(), "X") << name << ": injected " << line;
      }
      EXPECT_EQ(std::string(r["x-request-id"]).size(), 16u) << name;
      EXPECT_EQ(test::get(port, "/hello/after").body(), "hello /after") << "after " << name;
    }
  }
}

TEST_P(HostileAppTest, AClientDisconnectAbortsTheSignalWhateverTheAppDidToTheBuiltins) {
  ServerConfig config = baseConfig();
  config.apps = {test::fixtureApp("watch", "abort_watch.js", "/")};
  Server server(std::move(config));
  ASSERT_TRUE(server.start());
  {
    HttpConnection c(server.port());
    c.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }  // the client hangs up
  std::string count;
  for (int i = 0; i < 300 && count != "1"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = test::get(server.port(), "/aborted").body();
  }
  EXPECT_EQ(count, "1");
  server.stop();
}

INSTANTIATE_TEST_SUITE_P(Backends, HostileAppTest, ::testing::Values("subprocess", "inprocess"));

}  // namespace
}  // namespace isolane

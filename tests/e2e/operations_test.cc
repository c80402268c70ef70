// Operating isolane behind a load balancer, with the real server on port 0: a stop drains
// without losing what a balancer sends on its open connections, ends event streams cleanly,
// says "draining" on /readyz; a service manager hears READY=1 and STOPPING=1; the client's
// address reaches the app only as a trusted proxy or the socket says; the dashboard and its
// feed show what /metrics says.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/service_notify.h"
#include "e2e/http_client.h"
#include "e2e/metrics_page.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::get;
using test::HttpConnection;
using test::Response;
using Clock = std::chrono::steady_clock;

// The value of the sample `series` in a Prometheus text page (-1 when absent).
double sample(const std::string& page, const std::string& series) {
  return test::sample(page, series, -1);
}

class OperationsTest : public ::testing::Test {
 protected:
  void start(ServerConfig config) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    admin_ = server_->adminPort();
    test::waitForEveryWorker(*server_);
  }
  void TearDown() override {
    if (stopper_.joinable()) stopper_.join();
    if (server_) server_->stop();
  }
  void stopInBackground() {
    stopper_ = std::thread([this] { server_->stop(); });
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0, admin_ = 0;
  std::thread stopper_;
};

ServerConfig helloAndSlow() {
  ServerConfig config;
  config.pool.size = 1;
  config.apps = {test::fixtureApp("slow", "slow.js", "/slow"),
                 test::fixtureApp("hello", "hello.js", "/hello")};
  return config;
}

// A balancer's keep-alive connection that is idle when the stop begins still gets its next
// request served (with Connection: close), so a request the balancer sends as the stop begins
// is not lost; new connections are refused; /readyz says draining while the admin listener
// stays up; the request in flight finishes.
TEST_F(OperationsTest, AStopServesWhatArrivesOnOpenConnectionsAndRefusesNewOnes) {
  start(helloAndSlow());
  HttpConnection idle(port_);
  ASSERT_EQ(idle.request("GET", "/hello").result_int(), 200);  // now idle, kept alive
  HttpConnection busy(port_);
  busy.send("GET /slow?ms=1500 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(200ms);  // the request reaches its worker
  stopInBackground();
  std::this_thread::sleep_for(200ms);

  Response ready = get(admin_, "/readyz");
  EXPECT_EQ(ready.result_int(), 503);
  EXPECT_EQ(ready.body(), "not ready: draining\n");
  Response late = idle.request("GET", "/hello");
  EXPECT_EQ(late.result_int(), 200) << late.body();
  EXPECT_FALSE(late.keep_alive()) << "an answer during the drain must close its connection";
  EXPECT_TRUE(idle.closedWithin(1000ms));
  EXPECT_THROW(HttpConnection fresh(port_), boost::system::system_error)
      << "the listener must be closed once the stop has begun";

  Response r = busy.read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "done");
  EXPECT_FALSE(r.keep_alive());
}

// An idle keep-alive connection is closed once it has been idle for drain_idle_ms (a balancer
// closes its own sooner), and the stop then ends without waiting for shutdown_drain_ms.
TEST_F(OperationsTest, AnIdleConnectionIsClosedAfterDrainIdleAndTheStopEndsEarly) {
  ServerConfig config = helloAndSlow();
  config.drainIdle = 400ms;
  config.shutdownDrain = 20s;
  start(std::move(config));
  HttpConnection idle(port_);
  ASSERT_EQ(idle.request("GET", "/hello").result_int(), 200);
  auto began = Clock::now();
  stopInBackground();
  EXPECT_FALSE(idle.closedWithin(150ms)) << "closed before drain_idle_ms";
  EXPECT_TRUE(idle.closedWithin(3000ms));
  stopper_.join();
  EXPECT_LT(Clock::now() - began, 5s) << "the stop waited for shutdown_drain_ms with nothing open";
}

// An SSE response still open when the drain ends gets its last chunk: its client (or the
// balancer in front) sees a clean end and reconnects elsewhere, not a cut stream.
TEST_F(OperationsTest, AnEventStreamGetsACleanEndWhenTheDrainEnds) {
  ServerConfig config;
  config.pool.size = 1;
  config.shutdownDrain = 600ms;
  AppConfig stream = test::fixtureApp("stream", "stream.js", "/");
  stream.streaming = true;
  config.apps = {stream};
  start(std::move(config));
  HttpConnection client(port_);
  client.send("GET /sse?n=100000&ms=50 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string all;
  client.readRaw(&all, 5000ms, "data: 2");
  ASSERT_NE(all.find("text/event-stream"), std::string::npos) << all;
  stopInBackground();
  client.readRaw(&all, 5000ms);  // until the server closes it
  EXPECT_TRUE(all.ends_with("\r\n0\r\n\r\n"))
      << "no last chunk: the stream was cut\n"
      << all.substr(all.size() > 200 ? all.size() - 200 : 0);
}

// The app learns the client's address from X-Forwarded-For and X-Real-IP: a client's own are
// replaced by the socket's peer; a trusted proxy's are passed on.
TEST_F(OperationsTest, TheClientAddressIsTheSocketsUnlessATrustedProxyGaveIt) {
  ServerConfig config;
  config.pool.size = 1;
  config.drainIdle = 100ms;  // the stop below does not wait for the idle connection
  config.apps = {test::fixtureApp("echo", "echo.js", "/")};
  start(std::move(config));
  HttpConnection c(port_);
  Response r = c.request("GET", "/", "",
                         "X-Forwarded-For: 6.6.6.6\r\nx-real-ip: 6.6.6.6\r\n"
                         "Forwarded: for=6.6.6.6\r\nX-Forwarded-Host: evil\r\n"
                         "X-Forwarded-Prefix: /evil\r\n");
  auto headers = nlohmann::json::parse(r.body())["headers"];
  EXPECT_EQ(headers["x-forwarded-for"], "127.0.0.1");
  EXPECT_EQ(headers["x-real-ip"], "127.0.0.1");
  EXPECT_FALSE(headers.contains("forwarded")) << headers.dump();
  EXPECT_FALSE(headers.contains("x-forwarded-host")) << headers.dump();
  EXPECT_FALSE(headers.contains("x-forwarded-prefix")) << headers.dump();
  server_->stop();
  server_.reset();

  ServerConfig trusted;
  trusted.pool.size = 1;
  trusted.trustedProxies = {"127.0.0.1"};
  trusted.apps = {test::fixtureApp("echo", "echo.js", "/")};
  start(std::move(trusted));
  HttpConnection p(port_);
  r = p.request("GET", "/", "",
                "X-Forwarded-For: 6.6.6.6, 10.0.0.1\r\nX-Real-IP: 6.6.6.6\r\n"
                "X-Forwarded-Prefix: /edge\r\n");
  headers = nlohmann::json::parse(r.body())["headers"];
  EXPECT_EQ(headers["x-forwarded-prefix"], "/edge");
  EXPECT_EQ(headers["x-forwarded-for"], "6.6.6.6, 10.0.0.1");
  EXPECT_EQ(headers["x-real-ip"], "6.6.6.6");
}

// What an autoscaler reads exists from the start, at 0, before any request.
TEST_F(OperationsTest, TheAutoscalingFiguresExistBeforeTheFirstRequest) {
  start(helloAndSlow());
  std::string page = get(admin_, "/metrics").body();
  EXPECT_EQ(sample(page, "isolane_pool_inflight"), 0) << page;
  EXPECT_EQ(sample(page, "isolane_queue_depth"), 0) << page;
}

// The dashboard page is served whole and offline (no external reference); its feed sends a
// snapshot at once and then one per second, and its figures are /metrics'.
TEST_F(OperationsTest, TheDashboardFeedShowsThePoolAsMetricsDo) {
  start(helloAndSlow());
  Response page = get(admin_, "/dashboard");
  EXPECT_EQ(page.result_int(), 200);
  EXPECT_EQ(page[boost::beast::http::field::content_type], "text/html; charset=utf-8");
  // Nothing it loads comes from elsewhere (the SVG namespace URI is a name, not a fetch).
  for (const char* external : {"src=\"http", "href=\"http", "url(http", "@import", "src='http",
                               "href='http", "//fonts.", "<script src"}) {
    EXPECT_EQ(page.body().find(external), std::string::npos)
        << "the page must work offline: it has " << external;
  }
  for (int i = 0; i < 5; ++i) ASSERT_EQ(get(port_, "/hello").result_int(), 200);

  HttpConnection feed(admin_);
  feed.send("GET /dashboard/events HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string all;
  // The first snapshot may predate the requests above: wait for one that counts them.
  nlohmann::json snapshot;
  auto until = Clock::now() + 5s;
  while (Clock::now() < until) {
    feed.readRaw(&all, 3000ms, "}\n\n");
    std::size_t data = all.find("data: ");
    std::size_t end = all.find("\n\n", data);
    if (data == std::string::npos || end == std::string::npos) continue;
    snapshot = nlohmann::json::parse(all.substr(data + 6, end - data - 6));
    all.erase(0, end + 2);
    bool counted = false;
    for (auto& app : snapshot["apps"]) {
      if (app["app"] == "hello" && app["requests_total"] == 5) counted = true;
    }
    if (counted) break;
  }
  ASSERT_EQ(snapshot["kind"], "server") << snapshot.dump();
  EXPECT_EQ(snapshot["ready"], true);
  EXPECT_EQ(snapshot["draining"], false);
  ASSERT_EQ(snapshot["workers"].size(), 1u);
  EXPECT_EQ(snapshot["workers"][0]["state"], "serving");
  EXPECT_GT(snapshot["workers"][0]["pid"].get<int>(), 0);
  std::string metrics = get(admin_, "/metrics").body();
  double hello = sample(metrics, R"(isolane_requests_total{app="hello",status="200"})");
  bool found = false;
  for (auto& app : snapshot["apps"]) {
    if (app["app"] != "hello") continue;
    found = true;
    EXPECT_EQ(app["requests_total"].get<double>(), hello) << snapshot.dump();
  }
  EXPECT_TRUE(found) << snapshot.dump();
  EXPECT_EQ(snapshot["pool"]["inflight"].get<double>(), sample(metrics, "isolane_pool_inflight"));
  bool spawned = false;
  for (auto& e : snapshot["events"]) spawned = spawned || e["kind"] == "ready";
  EXPECT_TRUE(spawned) << snapshot["events"].dump();
}

// A service manager (systemd's Type=notify) hears READY=1 once the server is ready, and
// STOPPING=1 when the stop begins.
TEST(ServiceNotifier, TellsTheNotifySocketReadyAndStopping) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("isolane-notify-" + std::to_string(::getpid())))
          .string();
  ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  std::atomic<bool> ready{false};
  {
    ServiceNotifier notifier([&] { return ready.load(); });
    char buffer[512];
    std::this_thread::sleep_for(150ms);
    ssize_t none = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    EXPECT_LT(none, 0) << "READY=1 before the server was ready";
    ready = true;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    ASSERT_GT(n, 0);
    EXPECT_TRUE(std::string(buffer, n).starts_with("READY=1\n")) << std::string(buffer, n);
    notifier.stopping();
    n = ::recv(fd, buffer, sizeof buffer, 0);
    ASSERT_GT(n, 0);
    EXPECT_TRUE(std::string(buffer, n).starts_with("STOPPING=1\n"));
  }
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(ServiceNotifier::notify("READY=1\n")) << "no socket: nothing to tell";
  ::close(fd);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace isolane

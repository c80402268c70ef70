// The HTTP front against hostile clients, with raw bytes over real sockets: request smuggling
// (every Transfer-Encoding the front does not implement, conflicting framing, bad Hosts), bare LF,
// unbounded chunk lines and trailers, slow bodies, clients that do not read, connection floods.
// Each smuggling case checks what the app saw: nothing, or exactly the one request sent.

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

using test::HttpConnection;
using test::Response;
using namespace std::chrono_literals;

// Reads one response, or nullopt when the server closed (or reset) the connection first.
std::optional<Response> readOrClosed(HttpConnection& c) {
  try {
    return c.read();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

class HostileClientTest : public ::testing::Test {
 protected:
  void start(ServerConfig config = {}) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    // One worker with one executor thread and no reserve thread (which would make an isolate of
    // its own when the first thread's pass runs long): one isolate of the recorder app sees every
    // request.
    config.pool.size = 1;
    config.executorThreads = 1;
    config.pool.reserveThread = false;
    if (config.apps.empty()) config.apps = {test::fixtureApp("recorder", "recorder.js", "/")};
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }
  // What the app saw, as JSON text.
  std::string seen() { return test::get(port_, "/seen").body(); }

  // Sends `raw` and expects a 400 (with a request id) and the connection closed.
  void expect400(const std::string& raw, const std::string& why) {
    HttpConnection c(port_);
    c.send(raw);
    auto r = readOrClosed(c);
    ASSERT_TRUE(r) << why << ": no response";
    EXPECT_EQ(r->result_int(), 400) << why << ": " << r->body();
    EXPECT_EQ(std::string((*r)["x-request-id"]).size(), 16u) << why;
    EXPECT_FALSE(r->keep_alive()) << why;
    EXPECT_TRUE(c.closedWithin(2000ms)) << why;
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

const std::string kSmuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

TEST_F(HostileClientTest, TransferEncodingsOtherThanChunkedAreRefusedAndNothingIsSmuggled) {
  start();
  for (const char* te :
       {"Transfer-Encoding: xchunked\r\n", "Transfer-Encoding: chunked, identity\r\n",
        "Transfer-Encoding: chunked, gzip\r\n", "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: xchunked\r\nContent-Length: 0\r\n",
        "Content-Length: 0\r\nTransfer-Encoding: xchunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 36\r\n",
        "Content-Length: 36\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "Transfer-Encoding: \r\n",
        "Transfer-Encoding: chunked\x0b\r\n"}) {
    expect400("POST /a HTTP/1.1\r\nHost: x\r\n" + std::string(te) + "\r\n" + kSmuggled, te);
  }
  expect400(
      "POST /a HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + kSmuggled,
      "HTTP/1.0 with Transfer-Encoding");
  EXPECT_EQ(seen(), "[]");
}

TEST_F(HostileClientTest, ChunkedIsReadAsOneRequestWhateverItsCase) {
  start();
  HttpConnection c(port_);
  c.send(
      "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200);
  EXPECT_EQ(seen(), R"([{"method":"POST","path":"/a","url":"http://x/a","body":"hello"}])");
}

TEST_F(HostileClientTest, FoldedAndRepeatedFramingHeadersAreRefused) {
  start();
  expect400(
      "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n" +
          kSmuggled,
      "Transfer-Encoding folded onto a second line");
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello",
            "a Content-Length list");
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            "two Content-Length lines");
  EXPECT_EQ(seen(), "[]");
}

TEST_F(HostileClientTest, DotSegmentsAreResolvedBeforeRoutingAsTheAppWillSeeThem) {
  ServerConfig config;
  config.pool.size = 1;
  config.executorThreads = 1;
  config.pool.reserveThread = false;  // one recorder isolate (see start())
  config.listenPort = 0;
  config.adminPort = 0;
  config.workerBinary = ISOLANE_BINARY;
  AppConfig admin = test::fixtureApp("admin", "hello.js", "/admin");
  AppConfig pub = test::fixtureApp("public", "recorder.js", "/");
  config.apps = {admin, pub};
  server_ = std::make_unique<Server>(std::move(config));
  ASSERT_TRUE(server_->start());
  port_ = server_->port();
  // A proxy that allowed "/admin/../x" because it is "/x" must not see isolane route it to admin.
  Response r = test::get(port_, "/admin/../x");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "ok") << "served by the app mounted at /, as /x";
  std::string apps = seen();
  EXPECT_NE(apps.find(R"("url":"http://localhost/x")"), std::string::npos) << apps;
  expect400("GET /admin\\..\\x HTTP/1.1\r\nHost: x\r\n\r\n", "a backslash in the path");
}

TEST_F(HostileClientTest, HostMustBeOneValidHostAndPort) {
  start();
  for (const char* host : {"a b", "a/b?c#d", "a@b", "[::1", "a:99999", "a:x", "a%20b", ""}) {
    expect400("GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n", host);
  }
  expect400("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "two Host headers");
  expect400("GET / HTTP/1.1\r\n\r\n", "no Host in HTTP/1.1");
  expect400("GET http://a b/x HTTP/1.1\r\nHost: a\r\n\r\n", "absolute-form with a bad authority");
  expect400("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", "a fragment in the target");
  expect400("GET * HTTP/1.1\r\nHost: a\r\n\r\n", "asterisk-form");
  EXPECT_EQ(seen(), "[]");
  // What is valid is served, and request.url shows the host the router saw.
  HttpConnection c(port_);
  EXPECT_EQ(c.request("GET", "/p?q", "", "").result_int(), 200);  // Host: localhost
  c.send("GET http://other.example:81/abs?x HTTP/1.1\r\nHost: ignored\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200);
  c.send("GET /v4 HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200);
  std::string apps = seen();
  EXPECT_NE(apps.find(R"("url":"http://localhost/p?q")"), std::string::npos) << apps;
  EXPECT_NE(apps.find(R"("url":"http://other.example:81/abs?x")"), std::string::npos) << apps;
  EXPECT_NE(apps.find(R"("url":"http://[::1]:8080/v4")"), std::string::npos) << apps;
}

TEST_F(HostileClientTest, BareLineFeedsAreA400NotAHang) {
  start();
  auto before = std::chrono::steady_clock::now();
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
            "bare LF in a chunked body");
  expect400("GET /a HTTP/1.1\nHost: x\n\n", "bare LF in the head");
  expect400("GET /a HTTP/1.1\r\nHost: x\r\nX: a\nY: b\r\n\r\n", "bare LF inside the head");
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\n\r\n",
            "bare LF in a trailer");
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s) << "refused at once, not by a timeout";
  EXPECT_EQ(seen(), "[]");
}

TEST_F(HostileClientTest, EndlessChunkExtensionsAndTrailersAreBounded) {
  start();
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;" +
                std::string(20 * 1024, 'a'),
            "a chunk extension past the head limit");
  std::string trailers;
  while (trailers.size() < 20 * 1024) trailers += "X-Trailer: yyyyyyyyyyyyyyyy\r\n";
  expect400("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + trailers,
            "trailers past the head limit");
  EXPECT_EQ(seen(), "[]");
  // Small extensions and trailers are read and dropped; the trailer is not a header.
  HttpConnection c(port_);
  c.send(
      "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nhi\r\n"
      "0\r\nHost: evil\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200);
  EXPECT_EQ(seen(), R"([{"method":"POST","path":"/t","url":"http://x/t","body":"hi"}])");
}

TEST_F(HostileClientTest, EveryAnswerTheFrontMakesCarriesItsOwnRequestId) {
  ServerConfig config;
  config.maxBodyBytes = 100;
  start(std::move(config));
  HttpConnection c(port_);
  Response ok = c.request("GET", "/first");
  std::string first(ok["x-request-id"]);
  ASSERT_EQ(first.size(), 16u);
  c.send("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n");
  Response tooBig = c.read();
  EXPECT_EQ(tooBig.result_int(), 413);
  std::string second(tooBig["x-request-id"]);
  EXPECT_EQ(second.size(), 16u);
  EXPECT_NE(second, first) << "a new id, not the previous request's";

  HttpConnection d(port_);
  d.send("GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(17 * 1024, 'h') + "\r\n\r\n");
  Response big = d.read();
  EXPECT_EQ(big.result_int(), 431);
  EXPECT_EQ(std::string(big["x-request-id"]).size(), 16u);
}

TEST_F(HostileClientTest, ABodyThatStallsIsCutOffWith408) {
  ServerConfig config;
  config.bodyReadTimeout = 200ms;
  start(std::move(config));
  HttpConnection c(port_);
  auto before = std::chrono::steady_clock::now();
  c.send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
  auto r = readOrClosed(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 408);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 3s);
  EXPECT_EQ(seen(), "[]");
}

TEST_F(HostileClientTest, AClientThatReadsNothingLosesItsConnection) {
  ServerConfig config;
  config.sendTimeout = 300ms;
  start(std::move(config));
  HttpConnection c(port_);
  c.send("GET /big?mb=32 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(1500ms);  // reads nothing while the server writes
  std::size_t got = c.drain();
  EXPECT_LT(got, std::size_t{32} << 20) << "the server gave up on the write";
  EXPECT_EQ(test::get(port_, "/after").result_int(), 200);
}

TEST_F(HostileClientTest, IdleConnectionsMakeRoomForNewClientsAtTheLimit) {
  ServerConfig config;
  config.maxConnections = 4;
  start(std::move(config));
  std::vector<std::unique_ptr<HttpConnection>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<HttpConnection>(port_));
  std::this_thread::sleep_for(100ms);  // all four accepted and waiting
  HttpConnection fresh(port_);
  EXPECT_EQ(fresh.request("GET", "/fresh").result_int(), 200);
  EXPECT_TRUE(idle[0]->closedWithin(2000ms)) << "the oldest idle connection made room";
}

TEST_F(HostileClientTest, OverTheLimitWithNoneIdleIsA503WithRetryAfter) {
  ServerConfig config;
  config.maxConnections = 2;
  start(std::move(config));
  HttpConnection a(port_), b(port_);
  a.send("GET /slow?ms=800 HTTP/1.1\r\nHost: x\r\n\r\n");
  b.send("GET /slow?ms=800 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(200ms);  // both busy
  HttpConnection c(port_);
  auto r = readOrClosed(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 503);
  EXPECT_EQ((*r)["retry-after"], "1");
  EXPECT_EQ((*r)["x-isolane-shed"], "connections");
  EXPECT_EQ(std::string((*r)["x-request-id"]).size(), 16u);
  EXPECT_EQ(a.read().result_int(), 200);
  EXPECT_EQ(b.read().result_int(), 200);
}

TEST_F(HostileClientTest, TheBytesConnectionsMakeTheServerHoldAreCounted) {
  ServerConfig config;
  config.apps = {test::fixtureApp("recorder", "recorder.js", "/"),
                 test::fixtureApp("slow", "slow.js", "/slow")};
  start(std::move(config));
  auto buffered = [&] {
    std::string metrics = test::get(server_->adminPort(), "/metrics").body();
    std::size_t at = metrics.find("\nisolane_http_buffered_bytes ");
    return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + 29));
  };
  EXPECT_EQ(buffered(), 0.0);
  {
    // The body of a request whose app has not read it yet is held by the server (at most a
    // window of it: the rest waits in the client's socket).
    HttpConnection c(port_);
    c.send("POST /slow/a?ms=5000 HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
           std::string(60000, 'b'));
    double held = 0;
    for (int i = 0; i < 100 && held < 60000; ++i) {
      std::this_thread::sleep_for(10ms);
      held = buffered();
    }
    EXPECT_GE(held, 60000.0);
  }
  double left = -1;
  for (int i = 0; i < 200 && left != 0; ++i) {
    std::this_thread::sleep_for(10ms);
    left = buffered();
  }
  EXPECT_EQ(left, 0.0) << "released with the connection";
}

TEST_F(HostileClientTest, PipelinedSmugglingAttemptsSeeExactlyTheRequestsSent) {
  start();
  HttpConnection c(port_);
  // Two well-framed requests in one write: both answered, in order, and nothing else.
  c.send(
      "POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
      "GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 200);
  EXPECT_EQ(c.read().result_int(), 200);
  std::string apps = seen();
  EXPECT_NE(apps.find("/one"), std::string::npos);
  EXPECT_NE(apps.find("/two"), std::string::npos);
  EXPECT_EQ(apps.find("smuggled"), std::string::npos);
}

}  // namespace
}  // namespace isolane

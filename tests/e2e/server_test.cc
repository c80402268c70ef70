// The real server on port 0, spoken to over HTTP: examples, keep-alive, pipelining, chunked
// bodies, protocol limits, failing and hostile handlers, many clients at once.

#include "server/server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "eventually.h"
#include "front/http_server.h"
#include "obs/console_log.h"
#include "pool/subprocess_backend.h"

namespace isolane {
namespace {

using test::eventually;
using test::get;
using test::HttpConnection;
using test::Response;
namespace http = boost::beast::http;

using test::kApps;

AppConfig app(const std::string& name, const std::string& file, const std::string& route) {
  return test::fixtureApp(name, file, route);
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerConfig config) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.pool.size = 2;
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    test::waitForEveryWorker(*server_);  // start() returns once one is ready
  }
  // A config serving the hello fixture at "/", for tests about the server rather than the apps.
  static ServerConfig helloAtRoot() {
    ServerConfig config;
    config.apps = {app("hello", "hello.js", "/")};
    return config;
  }
  void startDefault() {
    ServerConfig config;
    config.maxBodyBytes = 4096;
    config.requestCpuLimit = std::chrono::milliseconds(300);
    config.apps = {app("hello", "hello.js", "/hello"), app("echo", "echo.js", "/echo"),
                   app("throws", "throws.js", "/throws"), app("hostile", "hostile.js", "/hostile")};
    start(std::move(config));
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
  ConsoleLog console_;
};

TEST_F(ServerTest, ExamplesAnswer) {
  auto loaded = loadConfigFile(ISOLANE_SOURCE_DIR "/examples/isolane.toml");
  ASSERT_TRUE(loaded) << loaded.error();
  start(std::move(loaded.value()));

  Response r = get(port_, "/hello");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "Hello from isolane\n");

  r = get(port_, "/api/items");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r[http::field::content_type].find("application/json"), std::string::npos);
  EXPECT_NE(r.body().find("\"items\""), std::string::npos) << r.body();

  r = get(port_, "/router/hello/isolane");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("isolane"), std::string::npos) << r.body();

  r = get(port_, "/ssr?n=300");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body().rfind("<!doctype html>", 0), 0u) << r.body().substr(0, 200);
  EXPECT_GT(r.body().size(), 20'000u);

  r = get(port_, "/");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("/ssr"), std::string::npos);
  EXPECT_NE(r.body().find("/sse"), std::string::npos);

  // React streamed: the whole response holds the shell's fallback and the late boundary.
  r = get(port_, "/ssr/stream?delay_ms=50");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r[http::field::content_type].find("text/html"), std::string::npos);
  EXPECT_EQ(r.body().rfind("<!DOCTYPE html>", 0), 0u) << r.body().substr(0, 200);
  EXPECT_NE(r.body().find("Loading deals"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find("Deals loaded after"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find("</html>"), std::string::npos);

  // Server-sent events: a page whose EventSource points under the mount prefix, and a stream.
  r = get(port_, "/sse");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("EventSource"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find(R"(data-events="/sse/events")"), std::string::npos) << r.body();

  r = get(port_, "/sse/events?interval_ms=20&count=3");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r[http::field::content_type], "text/event-stream");
  EXPECT_EQ(r[http::field::cache_control], "no-store");
  EXPECT_EQ(r.body().rfind(": ok\n", 0), 0u) << r.body();
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(r.body(), "\ndata: "), 3u) << r.body();
  for (const char* id : {"id: 1\ndata: ", "id: 2\ndata: ", "id: 3\ndata: "}) {
    EXPECT_NE(r.body().find(id), std::string::npos) << id << " in " << r.body();
  }
  EXPECT_EQ(r.body().find("id: 4"), std::string::npos) << r.body();

  // A reconnecting EventSource names the last id it saw: counting goes on after it.
  HttpConnection again(port_);
  r = again.request("GET", "/sse/events?interval_ms=20&count=2", "", "Last-Event-ID: 41\r\n");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("id: 42\ndata: "), std::string::npos) << r.body();
  EXPECT_NE(r.body().find("id: 43\ndata: "), std::string::npos) << r.body();
  EXPECT_EQ(count(r.body(), "\ndata: "), 2u) << r.body();
}

// examples/jwt: the npm package jose and Hono's jwt middleware, bundled, over crypto.subtle.
TEST_F(ServerTest, JwtExampleSignsAndVerifiesWithJose) {
  auto loaded = loadConfigFile(ISOLANE_SOURCE_DIR "/examples/isolane.toml");
  ASSERT_TRUE(loaded) << loaded.error();
  start(std::move(loaded.value()));

  // Keys generated in the isolate, tokens signed and verified, JWK/SPKI/PKCS #8 round trips.
  Response r = get(port_, "/jwt/selftest");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"HS256":"ok","ES256":"ok","RS256":"ok","EdDSA":"ok"})");

  // Tokens signed by jose under Node verify here.
  r = get(port_, "/jwt/node-tokens");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"ES256":"ok","RS256":"ok","EdDSA":"ok"})");

  // Hono's jwt middleware: refused without a token, the claims with one it issued.
  r = get(port_, "/jwt/protected");
  EXPECT_EQ(r.result_int(), 401);
  r = get(port_, "/jwt/token?sub=ann");
  ASSERT_EQ(r.result_int(), 200);
  const std::string prefix = R"({"token":")";
  ASSERT_EQ(r.body().rfind(prefix, 0), 0u) << r.body();
  std::string token = r.body().substr(prefix.size(), r.body().size() - prefix.size() - 2);
  HttpConnection c(port_);
  r = c.request("GET", "/jwt/protected", "",
                "Authorization: Bearer " + token + "\r\nConnection: close\r\n");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"hello":"ann"})");
  HttpConnection tampered(port_);
  r = tampered.request("GET", "/jwt/protected", "",
                       "Authorization: Bearer " + token + "x\r\nConnection: close\r\n");
  EXPECT_EQ(r.result_int(), 401);
}

// Reads a streamed response from a raw socket, noting when the awaited bytes arrived.
class TimedReader {
 public:
  explicit TimedReader(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ~TimedReader() { ::close(fd_); }

  void send(const std::string& raw) {
    ASSERT_EQ(::send(fd_, raw.data(), raw.size(), MSG_NOSIGNAL), static_cast<ssize_t>(raw.size()));
  }

  // Reads until `needle` has arrived (true) or `limit` passed or the connection closed (false).
  bool readUntil(const std::string& needle, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (data.find(needle) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return false;
      timeval tv{static_cast<long>(left / 1000), static_cast<long>(left % 1000) * 1000};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buffer[65536];
      ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return data.find(needle) != std::string::npos;
      data.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }

  std::string data;

 private:
  int fd_ = -1;
};

TEST_F(ServerTest, ExampleReactStreamSendsTheShellBeforeTheBoundary) {
  auto loaded = loadConfigFile(ISOLANE_SOURCE_DIR "/examples/isolane.toml");
  ASSERT_TRUE(loaded) << loaded.error();
  start(std::move(loaded.value()));
  using std::chrono::milliseconds;
  using Clock = std::chrono::steady_clock;

  TimedReader c(port_);
  c.send("GET /ssr/stream?delay_ms=600 HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ASSERT_TRUE(c.readUntil("Loading deals", milliseconds(10'000))) << c.data;
  auto shell = Clock::now();
  EXPECT_NE(c.data.find("Transfer-Encoding: chunked"), std::string::npos) << c.data;
  EXPECT_EQ(c.data.find("Deals loaded after"), std::string::npos) << "the page arrived whole";
  ASSERT_TRUE(c.readUntil("\r\n0\r\n\r\n", milliseconds(10'000))) << c.data;
  auto end = Clock::now();
  EXPECT_NE(c.data.find("Deals loaded after"), std::string::npos) << c.data;
  EXPECT_GE(end - shell, milliseconds(150)) << "the fallback came with the boundary";
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  startDefault();
  HttpConnection c(port_);
  for (int i = 0; i < 5; ++i) {
    Response r = c.request("GET", "/hello/" + std::to_string(i));
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.body(), "hello /" + std::to_string(i));
    EXPECT_TRUE(r.keep_alive());
  }
}

// An answer goes out byte for byte: its status line (the app's reason), its fields and its body,
// small (one buffer with its head) or large and read late by its client (written from where it
// is, as the client makes room), on HTTP/1.1 and HTTP/1.0.
TEST_F(ServerTest, AnAnswerGoesOutAsTheAppMadeItSmallOrLargeAndReadLate) {
  ServerConfig config;
  config.apps = {app("shaped", "shaped.js", "/")};
  start(std::move(config));
  auto digits = [](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<char>('0' + i % 10);
    return s;
  };
  {
    HttpConnection c(port_);
    c.send("GET /?status=201&reason=Made%20Here&bytes=25 HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string raw;
    c.readRaw(&raw, std::chrono::seconds(10), "\r\n\r\n" + digits(25));
    EXPECT_EQ(raw.rfind("HTTP/1.1 201 Made Here\r\n", 0), 0u) << raw;
    EXPECT_NE(raw.find("\r\nx-shaped: yes\r\n"), std::string::npos) << raw;
    EXPECT_NE(raw.find("\r\nContent-Length: 25\r\n"), std::string::npos) << raw;
    EXPECT_NE(raw.find("\r\nx-request-id: "), std::string::npos) << raw;
    EXPECT_EQ(raw.substr(raw.find("\r\n\r\n") + 4), digits(25));
  }
  {
    HttpConnection c(port_);
    constexpr std::size_t kBig = 3 << 20;  // past what the sockets hold: written in parts
    c.send("GET /?bytes=" + std::to_string(kBig) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Response r = c.read();
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.body().size(), kBig);
    EXPECT_TRUE(r.body() == digits(kBig));
    EXPECT_EQ(r["x-shaped"], "yes");
    EXPECT_EQ(c.request("GET", "/?bytes=3").body(), "012") << "and the connection goes on";
  }
  {
    HttpConnection c(port_);
    c.send("GET /?bytes=5 HTTP/1.0\r\nHost: x\r\n\r\n");
    std::string raw;
    c.readRaw(&raw, std::chrono::seconds(10));  // until the server closes (HTTP/1.0)
    EXPECT_EQ(raw.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << raw;
    EXPECT_EQ(raw.substr(raw.find("\r\n\r\n") + 4), "01234");
  }
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  startDefault();
  HttpConnection c(port_);
  std::string raw;
  for (int i = 0; i < 4; ++i)
    raw += "GET /hello/p" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  c.send(raw);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.read().body(), "hello /p" + std::to_string(i));
}

// The next request arrives while the first one is in the app (the connection is read then, to
// see a client that leaves): it waits, whole, for the first one's answer, a short one and one
// longer than the front's first read of it alike.
TEST_F(ServerTest, RequestsSentWhileThePreviousOneRunsAreAnsweredAfterIt) {
  ServerConfig config;
  config.apps = {app("slow", "slow.js", "/slow"), app("hello", "hello.js", "/hello")};
  start(std::move(config));
  HttpConnection c(port_);
  std::string padding(3000, 'p');
  c.send("GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first is in the app now
  c.send("GET /hello/short HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.read().body(), "done");
  EXPECT_EQ(c.read().body(), "hello /short");
  c.send("GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.send("GET /hello/long HTTP/1.1\r\nHost: x\r\nX-Padding: " + padding + "\r\n\r\n");
  EXPECT_EQ(c.read().body(), "done");
  Response second = c.read();
  EXPECT_EQ(second.body(), "hello /long");
  EXPECT_TRUE(second.keep_alive());
  EXPECT_EQ(c.request("GET", "/hello/after").body(), "hello /after");
}

TEST_F(ServerTest, ChunkedRequestBody) {
  startDefault();
  HttpConnection c(port_);
  c.send(
      "POST /echo/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n7\r\n, chunk\r\n0\r\n\r\n");
  Response r = c.read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find(R"("body":"hello, chunk")"), std::string::npos) << r.body();
}

TEST_F(ServerTest, ExpectContinueGetsA100First) {
  startDefault();
  HttpConnection c(port_);
  c.send("POST /echo/ HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  Response interim = c.read();
  EXPECT_EQ(interim.result_int(), 100);
  c.send("abc");
  Response r = c.read();
  EXPECT_NE(r.body().find(R"("body":"abc")"), std::string::npos) << r.body();
}

TEST_F(ServerTest, MountPrefixIsStrippedAndReported) {
  startDefault();
  Response r = get(port_, "/echo/a/b?c=d");
  EXPECT_NE(r.body().find(R"("url":"http://localhost/a/b?c=d")"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find(R"("x-forwarded-prefix":"/echo")"), std::string::npos) << r.body();
}

TEST_F(ServerTest, HeadHasLengthButNoBody) {
  startDefault();
  HttpConnection c(port_);
  c.send("HEAD /hello/x HTTP/1.1\r\nHost: x\r\n\r\n");
  Response r = c.readHead();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r[http::field::content_length], "8");
  EXPECT_EQ(c.request("GET", "/hello/after").body(), "hello /after");  // framing intact
}

TEST_F(ServerTest, HeadAnsweredByTheServerHasNoBody) {
  startDefault();
  HttpConnection c(port_);
  c.send("HEAD /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.readHead().result_int(), 404);
  EXPECT_EQ(c.request("GET", "/hello/next").body(), "hello /next");  // framing intact
}

TEST_F(ServerTest, UnmountedPathIs404) {
  startDefault();
  EXPECT_EQ(get(port_, "/nothing-here").result_int(), 404);
  EXPECT_EQ(get(port_, "/hellothere").result_int(), 404);  // prefixes match whole segments
}

TEST_F(ServerTest, MalformedRequestIs400) {
  startDefault();
  HttpConnection c(port_);
  c.send("THIS IS NOT HTTP\r\n\r\n");
  Response r = c.read();
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_FALSE(r.keep_alive());
  EXPECT_TRUE(c.closedWithin(std::chrono::milliseconds(2000)));
}

TEST_F(ServerTest, BadContentLengthIs400) {
  startDefault();
  HttpConnection c(port_);
  c.send("POST /echo/ HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 400);
}

TEST_F(ServerTest, OversizedBodyIs413) {
  startDefault();
  HttpConnection c(port_);
  std::string body(5000, 'x');
  c.send("POST /echo/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + body);
  EXPECT_EQ(c.read().result_int(), 413);
}

TEST_F(ServerTest, OversizedChunkedBodyIs413) {
  startDefault();
  HttpConnection c(port_);
  std::string chunk(3000, 'y');
  c.send("POST /echo/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nbb8\r\n" + chunk +
         "\r\nbb8\r\n" + chunk + "\r\n0\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 413);
}

TEST_F(ServerTest, OversizedHeadersAre431) {
  startDefault();
  HttpConnection c(port_);
  c.send("GET /hello/ HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(17 * 1024, 'h') + "\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 431);
}

TEST_F(ServerTest, ThrowingHandlerIs500WithRequestIdAndTheNextRequestSucceeds) {
  startDefault();
  HttpConnection c(port_);
  Response r = c.request("GET", "/throws/sync");
  EXPECT_EQ(r.result_int(), 500);
  std::string id(r["x-request-id"]);
  EXPECT_EQ(id.size(), 16u);
  EXPECT_NE(r.body().find(id), std::string::npos);
  EXPECT_EQ(r.body().find("boom"), std::string::npos) << "no error details to the client";
  EXPECT_EQ(r["x-isolane-error"], "HANDLER_ERROR");
  EXPECT_EQ(c.request("GET", "/throws/ok").body(), "fine");
}

TEST_F(ServerTest, HostileHandlersFailAloneAndOtherAppsKeepServing) {
  startDefault();
  for (const char* path :
       {"/hostile/loop", "/hostile/recursion", "/hostile/huge-string", "/hostile/heap-bomb"}) {
    Response r = get(port_, path);
    EXPECT_EQ(r.result_int(), 500) << path;
    EXPECT_EQ(get(port_, "/hello/alive").body(), "hello /alive") << "after " << path;
  }
}

TEST_F(ServerTest, SlowClientIsDisconnected) {
  ServerConfig config = helloAtRoot();
  config.headerTimeout = std::chrono::milliseconds(200);
  start(std::move(config));
  HttpConnection c(port_);
  c.send("GET / HTTP/1.1\r\nHost: x\r\n");  // never finishes its head
  EXPECT_TRUE(c.closedWithin(std::chrono::milliseconds(3000)));
}

TEST_F(ServerTest, AKeepAliveConnectionIsClosedAfterIdleTimeoutAndNotWhileItIsUsed) {
  // The read deadline moves with each request (ConnectionClock keeps it lazily): a connection in
  // use outlives idle_timeout many times over, and one that goes quiet is closed after it.
  ServerConfig config = helloAtRoot();
  config.idleTimeout = std::chrono::milliseconds(300);
  start(std::move(config));
  HttpConnection c(port_);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
  int answered = 0;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(c.request("GET", "/x").body(), "hello /x") << "after " << answered << " answers";
    ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(c.closedWithin(std::chrono::milliseconds(3000)));
}

TEST_F(ServerTest, ManyConcurrentClients) {
  startDefault();
  constexpr int kClients = 32, kEach = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      HttpConnection c(port_);
      for (int i = 0; i < kEach; ++i) {
        std::string path = "/hello/" + std::to_string(t) + "-" + std::to_string(i);
        if (c.request("GET", path).body() == "hello " + path.substr(6)) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * kEach);
}

TEST_F(ServerTest, StopAnswersInFlightRequests) {
  ServerConfig config;
  config.shutdownDrain = std::chrono::milliseconds(100);
  config.apps = {app("hostile", "hostile.js", "/")};
  start(std::move(config));
  HttpConnection c(port_);
  c.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n");
  while (server_->inFlight() == 0) std::this_thread::yield();  // it reached the app
  server_->stop();
  Response r = c.read();  // answered, never left hanging
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r["x-isolane-error"], "SHUTTING_DOWN");
  EXPECT_EQ(r["retry-after"], "1");
}

// The master keeps the code cache a worker made of an app's module, and the workers of the next
// start compile from it (pool/code_cache_store.h).
TEST_F(ServerTest, WorkersOfTheNextStartCompileFromTheCodeCacheTheFirstMade) {
  std::string dir = testing::TempDir() + "/server-code-cache-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto config = [&] {
    ServerConfig c;
    c.codeCacheDir = dir;
    AppConfig ssr;
    ssr.name = "ssr";
    ssr.module = ISOLANE_SOURCE_DIR "/examples/react-ssr/dist/app.js";
    ssr.route = "/";
    c.apps = {ssr};
    return c;
  };
  auto count = [&](const std::string& sample) {
    std::string text = "\n" + get(server_->adminPort(), "/metrics").body();
    auto at = text.find("\n" + sample + " ");
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + sample.size() + 2));
  };
  start(config());
  EXPECT_EQ(get(port_, "/").result_int(), 200);
  // The first worker made it (stored by the supervisor, off the reactor); the second, started
  // once the first was ready, may have used it.
  EXPECT_TRUE(eventually([&] { return count("isolane_code_cache_stored_total") == 1; }));
  std::size_t files = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    files += e.path().extension() == ".v8cache";
  }
  EXPECT_EQ(files, 1u);
  server_->stop();

  start(config());
  EXPECT_EQ(count("isolane_code_cache_loads_total{result=\"accepted\"}"), 2);
  EXPECT_EQ(count("isolane_code_cache_stored_total"), -1) << "nothing new to store";
  EXPECT_EQ(get(port_, "/").result_int(), 200);
  std::filesystem::remove_all(dir);
}

TEST_F(ServerTest, AdminListenerServesMetricsHealthAndReadiness) {
  startDefault();
  EXPECT_EQ(get(port_, "/hello/m").result_int(), 200);
  get(port_, "/throws/sync");
  std::uint16_t admin = server_->adminPort();
  ASSERT_NE(admin, 0);
  Response health = get(admin, "/healthz");
  EXPECT_EQ(health.result_int(), 200);
  EXPECT_EQ(get(admin, "/readyz").result_int(), 200);
  Response metrics = get(admin, "/metrics");
  EXPECT_EQ(metrics.result_int(), 200);
  EXPECT_NE(metrics[http::field::content_type].find("version=0.0.4"), std::string::npos);
  const std::string& text = metrics.body();
  for (const char* want :
       {"isolane_requests_total{app=\"hello\",status=\"200\"} 1",
        "isolane_requests_total{app=\"throws\",status=\"500\"} 1",
        "isolane_request_duration_seconds_bucket{app=\"hello\",le=\"+Inf\"} 1",
        "isolane_worker_spawns_total 2", "isolane_worker_inflight{slot=\"1\"} 0",
        "isolane_worker_start_seconds_count 2", "isolane_worker_rss_bytes{slot=\"0\"}",
        "isolane_worker_heap_used_bytes{slot=\"0\"}", "isolane_queue_depth 0",
        "isolane_heartbeat_rtt_seconds_count"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(get(admin, "/other").result_int(), 404);
}

TEST_F(ServerTest, AWorkerCrashIsA502ForAPostAndAReplayForAGet) {
  ServerConfig config;
  config.apps = {app("slow", "slow.js", "/")};
  config.pool.size = 1;
  start(std::move(config));
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
  HttpConnection c(port_);
  c.send("POST /?ms=5000 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  while (server_->inFlight() == 0) std::this_thread::yield();
  kill(pool.workers()[0].pid, SIGKILL);
  Response r = c.read();
  EXPECT_EQ(r.result_int(), 502);
  EXPECT_EQ(r["x-isolane-error"], "WORKER_CRASHED");
  // The slot respawns. The next request does not fail meanwhile: with no worker ready but one
  // starting, it waits for it (up to queue_timeout_ms; the default max_queue is 0).
  Response next = get(port_, "/?ms=1");
  EXPECT_EQ(next.result_int(), 200) << next["x-isolane-shed"];
  EXPECT_EQ(next.body(), "done");

  // A GET is idempotent: the master sends it again (here to the respawned worker), and the client
  // sees the app's answer.
  test::waitForEveryWorker(*server_);
  c.send("GET /?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
  while (server_->inFlight() == 0) std::this_thread::yield();
  kill(pool.workers()[0].pid, SIGKILL);
  Response replayed = c.read();
  EXPECT_EQ(replayed.result_int(), 200) << replayed["x-isolane-error"];
  EXPECT_EQ(replayed.body(), "done");
}

TEST_F(ServerTest, AWorkerOutlivesASigtermSentToItsProcessGroup) {
  // `timeout`, systemd's control-group kill or a shell signal every process of the group: the
  // master alone decides when a worker stops, so its workers live on under their requests.
  ServerConfig config;
  config.apps = {app("slow", "slow.js", "/")};
  config.pool.size = 1;
  start(std::move(config));
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
  pid_t pid = pool.workers()[0].pid;
  HttpConnection c(port_);
  c.send("GET /?ms=200 HTTP/1.1\r\nHost: x\r\n\r\n");
  while (server_->inFlight() == 0) std::this_thread::yield();
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  Response r = c.read();
  EXPECT_EQ(r.result_int(), 200) << r["x-isolane-error"];
  EXPECT_EQ(r.body(), "done");
  EXPECT_EQ(pool.workers()[0].pid, pid);
  EXPECT_EQ(get(port_, "/?ms=1").body(), "done");
}

TEST_F(ServerTest, WorkersRunInTheSandbox) {
  ServerConfig config = helloAtRoot();
  config.pool.size = 1;
  start(std::move(config));
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
  EXPECT_EQ(get(port_, "/x").body(), "hello /x");
  std::ifstream in("/proc/" + std::to_string(pool.workers()[0].pid) + "/status");
  std::string status((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(status.find("Seccomp:\t2"), std::string::npos) << status;  // a filter
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  if (geteuid() == 0) {
    EXPECT_NE(status.find("Uid:\t65534"), std::string::npos) << status;
  }
}

TEST_F(ServerTest, OverTheCapIsA503WithRetryAfterAndTheReason) {
  ServerConfig config;
  config.apps = {app("slow", "slow.js", "/")};
  config.pool.maxInflight = 1;
  start(std::move(config));
  HttpConnection busy(port_);
  busy.send("GET /?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n");
  while (server_->inFlight() == 0) std::this_thread::yield();
  Response r = get(port_, "/");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r["retry-after"], "1");
  EXPECT_EQ(r["x-isolane-shed"], "queue-full");
  EXPECT_EQ(busy.read().body(), "done");
}

TEST_F(ServerTest, TheMasterRefusesAHeadAWorkerForged) {
  // A compromised worker is not believed: the front checks every head before Beast sees it.
  for (const char* mode : {"bad-status", "crlf-header"}) {
    // Workers get none of the master's environment: the mode goes on the command line.
    std::string wrapper = testing::TempDir() + "/fake-worker-" + mode;
    std::ofstream(wrapper) << "#!/bin/sh\nexec " << FAKE_WORKER << " " << mode << " \"$@\"\n";
    std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
    ServerConfig config = helloAtRoot();
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = wrapper;
    config.pool.size = 1;
    Server server(std::move(config));
    ASSERT_TRUE(server.start());
    for (int i = 0; i < 2; ++i) {
      Response r = get(server.port(), "/x");
      EXPECT_EQ(r.result_int(), 500) << mode;
      EXPECT_EQ(r["x-isolane-error"], "HANDLER_ERROR") << mode;
      EXPECT_EQ(r.count("set-cookie"), 0u) << mode;
    }
    server.stop();
  }
}

TEST_F(ServerTest, AnExceptionOnAReactorThreadAnswersThatRequestAndTheServerGoesOn) {
  // The admin listener's handler runs on a reactor thread: make it throw.
  // No app runs: a backend that is never asked anything.
  class NoBackend final : public Backend {
   public:
    Status start(const std::vector<AppSpec>&) override { return Status::success(); }
    std::uint64_t submit(AppRequest, std::function<void(AppResponse)> done) override {
      done(AppResponse::failed(FailureKind::kUnknownApp, "none"));
      return 0;
    }
    void cancel(std::uint64_t) override {}
    void stop() override {}
    std::size_t inFlight() const override { return 0; }
    bool ready() const override { return true; }
  } backend;
  Router router({});
  HttpServerOptions options;
  options.port = 0;
  options.internal = [](std::string_view path) -> std::optional<InternalReply> {
    if (path == "/boom") throw std::runtime_error("injected failure");
    return InternalReply{200, "text/plain", "fine\n"};
  };
  HttpServer http(options, router, backend);
  ASSERT_TRUE(http.start());
  HttpConnection c(http.port());
  Response r = c.request("GET", "/boom");
  EXPECT_EQ(r.result_int(), 500);
  EXPECT_EQ(std::string(r["x-request-id"]).size(), 16u);
  EXPECT_TRUE(c.closedWithin(std::chrono::milliseconds(2000)));
  EXPECT_EQ(get(http.port(), "/ok").body(), "fine\n");
  http.stop(std::chrono::milliseconds(0));
}

TEST_F(ServerTest, TheMasterHasNoInProcessBackendAndSaysWhereItIs) {
  // The master links no V8: the in-process backend lives in the engine, which `isolane serve`
  // starts for it (cli_test and hostile_app_test serve through it).
  ServerConfig config = helloAtRoot();
  config.backend = "inprocess";
  config.listenPort = 0;
  config.adminPort = 0;
  Server server(std::move(config));
  Status s = server.start();
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("only inside the engine"), std::string::npos) << s.error();
}

}  // namespace
}  // namespace isolane

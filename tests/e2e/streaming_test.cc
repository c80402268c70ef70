// Streamed responses end to end, in both backends: the real server on port 0 (one worker, or
// one executor thread), spoken to over raw sockets so that the tests see when each byte arrives.
// The fixture app (fixtures/apps/stream.js) reports at /stats what it produced and why its streams
// were cancelled.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "pool/subprocess_backend.h"
#include "server/server.h"

namespace isolane {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A client socket read by hand: what arrived, and when.
class RawClient {
 public:
  // `receiveBuffer` > 0 shrinks the socket's receive buffer (set before connecting, so that the
  // window the kernel advertises stays small): a slow reader.
  explicit RawClient(std::uint16_t port, int receiveBuffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receiveBuffer > 0) {
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ~RawClient() { close(); }

  void send(const std::string& raw) {
    ASSERT_EQ(::send(fd_, raw.data(), raw.size(), MSG_NOSIGNAL), static_cast<ssize_t>(raw.size()));
  }
  void get(const std::string& target, const std::string& method = "GET") {
    send(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }

  // Reads until `needle` has arrived or `limit` passed (or the connection closed).
  bool readUntil(const std::string& needle, milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (data.find(needle) == std::string::npos) {
      if (!readSome(deadline)) return data.find(needle) != std::string::npos;
    }
    return true;
  }

  // True when the server closes the connection within `limit` (what arrives is kept).
  bool closedWithin(milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (readSome(deadline)) {
    }
    return eof_;
  }

  void close() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

  std::string data;

 private:
  // One read, waiting at most until `deadline`; false at the deadline or the end.
  bool readSome(Clock::time_point deadline) {
    if (eof_) return false;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    timeval tv{static_cast<long>(left / 1000), static_cast<long>(left % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      eof_ = true;
      return false;
    }
    if (n < 0) {
      // Interrupted, or the receive timeout before the deadline: try again until the deadline.
      return (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline;
    }
    data.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
};

class StreamingTest : public ::testing::TestWithParam<const char*> {
 protected:
  void start(ServerConfig config = {}, std::size_t workers = 1) {
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.backend = GetParam();
    config.pool.size = workers;  // one by default: the app's /stats sees every stream
    config.executorThreads = 1;
    config.apps.push_back(test::fixtureApp("stream", "stream.js", "/"));
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    test::waitForEveryWorker(*server_);  // start() returns once one is ready
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  nlohmann::json stats() {
    test::Response r = test::get(port_, "/stats");
    EXPECT_EQ(r.result_int(), 200);
    return nlohmann::json::parse(r.body());
  }

  // Waits up to `limit` for a cancel reason containing `text`; returns how long it took.
  std::optional<milliseconds> waitForCancel(const std::string& text, milliseconds limit) {
    auto start = Clock::now();
    while (Clock::now() - start < limit) {
      nlohmann::json now = stats();  // not in the range expression: it must outlive the loop
      for (const auto& reason : now["cancels"]) {
        if (reason.get<std::string>().find(text) != std::string::npos) {
          return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        }
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return std::nullopt;
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

constexpr const char* kLastChunk = "\r\n0\r\n\r\n";

TEST_P(StreamingTest, EventsArriveAsTheyAreProducedNotAtTheEnd) {
  start();
  RawClient c(port_);
  auto sent = Clock::now();
  c.get("/sse?n=4&ms=400");
  ASSERT_TRUE(c.readUntil(": open", milliseconds(5000))) << c.data;
  auto firstByte = Clock::now() - sent;
  // The head and the first event are here while the app still has 1.6 s of events to send.
  EXPECT_NE(c.data.find("HTTP/1.1 200 OK"), std::string::npos) << c.data;
  EXPECT_NE(c.data.find("Transfer-Encoding: chunked"), std::string::npos) << c.data;
  EXPECT_NE(c.data.find("content-type: text/event-stream"), std::string::npos) << c.data;
  EXPECT_EQ(c.data.find("data: 3"), std::string::npos) << "the stream arrived whole";
  EXPECT_LT(firstByte, milliseconds(1200));
  ASSERT_TRUE(c.readUntil("data: 0", milliseconds(3000))) << c.data;
  EXPECT_EQ(c.data.find(kLastChunk), std::string::npos);
  ASSERT_TRUE(c.readUntil(kLastChunk, milliseconds(5000))) << c.data;
  EXPECT_NE(c.data.find("data: 3\n\n"), std::string::npos);
  // The connection stays usable after a complete stream.
  c.data.clear();
  c.get("/hello");
  EXPECT_TRUE(c.readUntil("hello\n", milliseconds(3000))) << c.data;
}

TEST_P(StreamingTest, BodiesAreFramedRightForEveryClient) {
  start();
  // Chunked, bigger than the window: 1,000 KiB in pieces.
  test::HttpConnection http(port_);
  test::Response r = http.request("GET", "/big?n=10");
  EXPECT_EQ(r.result_int(), 200);
  ASSERT_EQ(r.body().size(), 10u * 100 * 1024);
  EXPECT_EQ(r.body()[0], 'a');
  EXPECT_EQ(r.body()[9 * 100 * 1024], 'j');
  EXPECT_TRUE(r.chunked());
  // The app's Content-Length is kept and the body is sent as is.
  r = http.request("GET", "/length");
  EXPECT_EQ(r.body(), "0123456789");
  EXPECT_FALSE(r.chunked());
  EXPECT_EQ(r[boost::beast::http::field::content_length], "10");
  // HTTP/1.0 has no chunked encoding: the body ends with the connection.
  RawClient old(port_);
  old.send("GET /sse?n=2&ms=10 HTTP/1.0\r\nHost: localhost\r\n\r\n");
  EXPECT_TRUE(old.closedWithin(milliseconds(5000)));
  EXPECT_NE(old.data.find("data: 1\n\n"), std::string::npos) << old.data;
  EXPECT_EQ(old.data.find("chunked"), std::string::npos) << old.data;
}

TEST_P(StreamingTest, ABodyShorterThanItsContentLengthEndsTheConnection) {
  start();
  RawClient c(port_);
  c.get("/short");
  EXPECT_TRUE(c.closedWithin(milliseconds(5000)));
  EXPECT_NE(c.data.find("Content-Length: 10"), std::string::npos) << c.data;
  EXPECT_NE(c.data.find("0123"), std::string::npos);
  EXPECT_EQ(test::get(port_, "/hello").body(), "hello\n");
}

TEST_P(StreamingTest, ASlowReaderStopsTheAppsPull) {
  start();
  RawClient slow(port_, 4096);
  slow.get("/endless");
  ASSERT_TRUE(slow.readUntil("\r\n\r\n", milliseconds(5000)));
  std::this_thread::sleep_for(milliseconds(800));
  std::uint64_t produced = stats()["produced"];
  std::this_thread::sleep_for(milliseconds(500));
  std::uint64_t later = stats()["produced"];
  // Without flow control the app would produce until its heap gave out. With it, production
  // stops at one window beyond what the sockets hold.
  EXPECT_EQ(later, produced) << "the app kept producing for a client that reads nothing";
  EXPECT_LT(produced, std::uint64_t{16} << 20);
  // Reading resumes the stream.
  std::size_t before = slow.data.size();
  ASSERT_TRUE(slow.readUntil(std::string(64, 'x'), milliseconds(2000)));
  for (int i = 0; i < 50; ++i) slow.readUntil("never", milliseconds(20));
  EXPECT_GT(slow.data.size(), before);
  EXPECT_GT(static_cast<std::uint64_t>(stats()["produced"]), produced);
  slow.close();
  EXPECT_TRUE(waitForCancel("AbortError", milliseconds(3000)));
}

TEST_P(StreamingTest, AClientThatGoesAwayCancelsTheAppsStream) {
  start();
  RawClient c(port_);
  c.get("/sse?n=100000&ms=20");
  ASSERT_TRUE(c.readUntil("data: 1\n", milliseconds(5000))) << c.data;
  c.close();
  auto took = waitForCancel("AbortError: the client went away", milliseconds(3000));
  ASSERT_TRUE(took) << stats().dump();
  std::printf("cancel reached the app %lld ms after the client closed\n",
              static_cast<long long>(took->count()));
  EXPECT_GE(static_cast<int>(stats()["aborted"]), 1) << "request.signal did not abort";
}

TEST_P(StreamingTest, AStreamWhoseClientLeftBeforeItsHeadIsCancelled) {
  start();
  {
    RawClient c(port_);
    c.get("/late-sse?ms=300");
    std::this_thread::sleep_for(milliseconds(50));
  }  // gone before the head
  // The app's stream is cancelled rather than left producing into a pipe nobody reads.
  EXPECT_TRUE(waitForCancel("AbortError", milliseconds(3000))) << stats().dump();
  if (std::string(GetParam()) == "subprocess") {
    auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
    bool none = false;
    for (int i = 0; i < 300 && !none; ++i) {
      none = pool.workers()[0].streams == 0 && pool.inFlight() == 0;
      if (!none) std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_TRUE(none) << "the stream still holds its place";
  }
}

TEST_P(StreamingTest, AStreamThatStallsIsEndedAtItsIdleLimit) {
  ServerConfig config;
  config.streamIdleTimeout = milliseconds(300);
  start(std::move(config));
  RawClient c(port_);
  c.get("/stall");
  ASSERT_TRUE(c.readUntil("first\n", milliseconds(5000)));
  auto start = Clock::now();
  EXPECT_TRUE(c.closedWithin(milliseconds(5000)));
  EXPECT_GE(Clock::now() - start, milliseconds(200));
  EXPECT_EQ(c.data.find(kLastChunk), std::string::npos) << "a cut stream must look incomplete";
  EXPECT_TRUE(waitForCancel("TimeoutError", milliseconds(3000))) << stats().dump();
}

TEST_P(StreamingTest, AStreamIsEndedAtItsTotalLimit) {
  ServerConfig config;
  config.streamMaxDuration = milliseconds(600);
  start(std::move(config));
  RawClient c(port_);
  c.get("/sse?n=100000&ms=20");
  auto start = Clock::now();
  EXPECT_TRUE(c.closedWithin(milliseconds(5000)));
  EXPECT_GE(Clock::now() - start, milliseconds(500));
  EXPECT_NE(c.data.find("data: 5\n"), std::string::npos);
  EXPECT_EQ(c.data.find(kLastChunk), std::string::npos);
  EXPECT_TRUE(waitForCancel("TimeoutError", milliseconds(3000))) << stats().dump();
}

TEST_P(StreamingTest, AStreamThatFailsIsCutAndTheServerGoesOn) {
  start();
  for (const char* target : {"/error", "/not-bytes"}) {
    RawClient c(port_);
    c.get(target);
    EXPECT_TRUE(c.closedWithin(milliseconds(5000))) << target;
    EXPECT_NE(c.data.find("HTTP/1.1 200"), std::string::npos) << c.data;
    EXPECT_EQ(c.data.find(kLastChunk), std::string::npos) << target;
  }
  EXPECT_EQ(test::get(port_, "/hello").body(), "hello\n");
}

TEST_P(StreamingTest, HostileStreamsAreCutAndTheServerGoesOn) {
  ServerConfig config;
  config.requestCpuLimit = milliseconds(300);
  config.heapLimitMb = 64;
  start(std::move(config));
  // A pull() that never returns is terminated at the CPU limit; one that hoards memory at the
  // heap limit. Either way the head went out, so the response is cut (after the first chunk,
  // when the app's stream let it out before the pull that blew up).
  for (const char* target : {"/spin-in-pull", "/heap-bomb"}) {
    RawClient c(port_);
    c.get(target);
    EXPECT_TRUE(c.closedWithin(milliseconds(20000))) << target;
    EXPECT_NE(c.data.find("HTTP/1.1 200"), std::string::npos) << target << ": " << c.data;
    if (std::string(target) == "/spin-in-pull") {
      EXPECT_NE(c.data.find("first\n"), std::string::npos) << c.data;
    }
    EXPECT_EQ(c.data.find(kLastChunk), std::string::npos) << target;
    EXPECT_EQ(test::get(port_, "/hello").body(), "hello\n") << "after " << target;
  }
}

TEST_P(StreamingTest, AStreamHasTheCpuLimitForEachTurnNotForItsWholeLife) {
  ServerConfig config;
  config.requestCpuLimit = milliseconds(200);
  start(std::move(config));
  // 12 turns of 40 ms each: 480 ms of CPU in all, more than twice the limit.
  test::HttpConnection http(port_);
  test::Response r = http.request("GET", "/busy?n=12");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_NE(r.body().find("tick 11\n"), std::string::npos) << r.body();
}

TEST_P(StreamingTest, AHeadRequestGetsTheHeadAndTheStreamIsCancelled) {
  start();
  test::HttpConnection http(port_);
  http.send("HEAD /endless HTTP/1.1\r\nHost: localhost\r\n\r\n");
  test::Response r = http.readHead();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(http.request("GET", "/hello").body(), "hello\n");
  EXPECT_TRUE(waitForCancel("AbortError", milliseconds(3000))) << stats().dump();
}

TEST_P(StreamingTest, StreamsHaveTheirOwnCapAndLeaveShortRequestsTheirRoom) {
  ServerConfig config;
  config.pool.maxInflight = 2;
  config.pool.streamMaxInflight = 2;
  start(std::move(config));
  RawClient a(port_), b(port_);
  a.get("/sse?n=100000&ms=50");
  b.get("/sse?n=100000&ms=50");
  ASSERT_TRUE(a.readUntil(": open", milliseconds(5000)));
  ASSERT_TRUE(b.readUntil(": open", milliseconds(5000)));
  // Two streams hold the whole stream cap; the two short slots are free.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(test::get(port_, "/hello").result_int(), 200);
  test::Response third = test::get(port_, "/sse?n=3&ms=10");
  EXPECT_EQ(third.result_int(), 503);
  EXPECT_EQ(third["x-isolane-shed"], "stream-full");
  a.close();
  ASSERT_TRUE(waitForCancel("AbortError", milliseconds(3000)));
  test::Response again = test::get(port_, "/sse?n=2&ms=10");
  EXPECT_EQ(again.result_int(), 200);
  EXPECT_NE(again.body().find("data: 1"), std::string::npos);
}

TEST_P(StreamingTest, AnAppMarkedStreamingIsAdmittedAgainstTheStreamCap) {
  ServerConfig config;
  config.pool.maxInflight = 1;
  config.pool.streamMaxInflight = 1;
  config.apps.push_back(test::fixtureApp("feed", "stream.js", "/feed"));
  config.apps.back().streaming = true;
  start(std::move(config));
  RawClient a(port_);
  a.get("/feed/sse?n=100000&ms=50");
  ASSERT_TRUE(a.readUntil(": open", milliseconds(5000)));
  test::Response refused = test::get(port_, "/feed/hello");
  EXPECT_EQ(refused.result_int(), 503);
  EXPECT_EQ(refused["x-isolane-shed"], "stream-full");
  EXPECT_EQ(test::get(port_, "/hello").result_int(), 200);
}

// Lanes and the wait queue belong to the subprocess pool: these run in that backend only.
class PoolStreamingTest : public StreamingTest {};

TEST_P(PoolStreamingTest, StrictLanesKeepStreamsAndShortRequestsApart) {
  ServerConfig config;
  config.pool.streamingLane = 1;
  config.apps.push_back(test::fixtureApp("feed", "stream.js", "/feed"));
  config.apps.back().streaming = true;
  start(std::move(config), 2);
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());

  RawClient a(port_), b(port_);
  a.get("/feed/sse?n=100000&ms=50");
  b.get("/feed/sse?n=100000&ms=50");
  ASSERT_TRUE(a.readUntil(": open", milliseconds(5000)));
  ASSERT_TRUE(b.readUntil(": open", milliseconds(5000)));
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 3; ++i) {
    slow.push_back(std::make_unique<RawClient>(port_));
    slow.back()->get("/slow?ms=1500");
  }
  std::vector<WorkerInfo> info;
  for (int i = 0; i < 200; ++i) {
    info = pool.workers();
    if (info[0].inFlight == 3) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(info.size(), 2u);
  EXPECT_FALSE(info[0].streamingLane);
  EXPECT_TRUE(info[1].streamingLane);
  EXPECT_EQ(info[0].inFlight, 3u) << "short requests go to the short lane only";
  EXPECT_EQ(info[0].streams, 0u);
  EXPECT_EQ(info[1].streams, 2u) << "streams go to the streaming lane only";
  EXPECT_EQ(info[1].inFlight, 0u);
  for (auto& c : slow) EXPECT_TRUE(c->readUntil("slow\n", milliseconds(5000)));
}

// A request whose chunked body is sent in two parts, the second only once the app has answered
// about the first.
TEST_P(StreamingTest, ARequestBodyReachesTheAppAsItArrives) {
  start();
  RawClient c(port_);
  c.send(
      "POST /upload-echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n");
  ASSERT_TRUE(c.readUntil("got 5\n", milliseconds(5000))) << "the app saw nothing before the "
                                                             "body ended: "
                                                          << c.data;
  c.send("6\r\n world\r\n0\r\n\r\n");
  ASSERT_TRUE(c.readUntil(kLastChunk, milliseconds(5000))) << c.data;
  EXPECT_NE(c.data.find("got 6\n"), std::string::npos) << c.data;
  EXPECT_NE(c.data.find("total 11\n"), std::string::npos) << c.data;
  // A large body arrives whole, in order, through the window.
  RawClient big(port_);
  big.send("POST /upload-echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 200000\r\n\r\n" +
           std::string(200'000, 'y'));
  ASSERT_TRUE(big.readUntil(kLastChunk, milliseconds(5000))) << big.data;
  EXPECT_NE(big.data.find("total 200000\n"), std::string::npos) << big.data.substr(0, 300);
}

// A body with a Content-Length that the app reads whole is gathered by the worker as it
// arrives, through the window, and reaches the app whole and in order.
TEST_P(StreamingTest, ABodyReadWholeReachesTheAppWholeThroughTheWindow) {
  start();
  std::string body(900'000, '\0');
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    body[i] = static_cast<char>('a' + (i * 13 + i / 4099) % 26);
    sum = sum * 31 + static_cast<unsigned char>(body[i]);
  }
  RawClient c(port_);
  c.send("POST /upload-whole HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body.substr(0, 100'000));
  c.send(body.substr(100'000));
  std::string expected = "whole 900000 sum " + std::to_string(sum) + "\n";
  ASSERT_TRUE(c.readUntil(expected, milliseconds(10000))) << c.data.substr(0, 300);
}

TEST_P(StreamingTest, ABodyOverTheLimitFailsWhileItStreams) {
  ServerConfig config;
  config.maxBodyBytes = 100'000;
  start(std::move(config));
  // Chunked: the size is known only as it arrives. The app is reading (its answer has not
  // started), so the client gets 413 and the app's read fails.
  RawClient c(port_);
  c.send(
      "POST /upload-ignore?ms=2000 HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: "
      "chunked\r\n\r\n");
  std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
  c.send(chunk);
  c.send(chunk);
  EXPECT_TRUE(c.readUntil("413", milliseconds(5000))) << c.data;
  EXPECT_TRUE(c.closedWithin(milliseconds(5000)));
  // Declared too large: refused before the app is asked.
  RawClient d(port_);
  d.send("POST /upload-echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100001\r\n\r\n");
  EXPECT_TRUE(d.readUntil("413", milliseconds(5000))) << d.data;
  // The app reading a body cut by the limit sees its read fail.
  RawClient e(port_);
  e.send("POST /upload-echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n");
  e.send(chunk);
  ASSERT_TRUE(e.readUntil("got ", milliseconds(5000))) << e.data;
  e.send(chunk);
  EXPECT_TRUE(e.closedWithin(milliseconds(5000)));
  // The app learns it either way: its read fails, or (the connection being gone) its request's
  // signal aborts first.
  bool told = false;
  for (int i = 0; i < 200 && !told; ++i) {
    nlohmann::json now = stats();
    told = !now["bodyErrors"].empty() || now["aborted"] > 0;
    if (!told) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(told) << stats().dump();
  EXPECT_EQ(test::get(port_, "/hello").body(), "hello\n");
}

TEST_P(StreamingTest, AnAppThatDoesNotReadItsBodyHoldsOneWindowOfIt) {
  ServerConfig config;
  config.maxBodyBytes = 16u << 20;
  start(std::move(config));
  // 8 MiB offered to an app that answers without reading: the server reads about a window of it
  // and leaves the rest in the client's socket; the answer closes the connection.
  RawClient c(port_);
  c.send(
      "POST /upload-ignore?ms=300 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 8388608\r\n\r\n");
  std::thread writer([&] {
    std::string block(1 << 16, 'q');
    for (int i = 0; i < 128; ++i) {
      if (::send(c.fd(), block.data(), block.size(), MSG_NOSIGNAL) <= 0) break;
    }
  });
  EXPECT_TRUE(c.readUntil("ignored\n", milliseconds(5000))) << c.data;
  EXPECT_NE(c.data.find("Connection: close"), std::string::npos) << c.data;
  c.closedWithin(milliseconds(5000));
  c.close();
  writer.join();
  EXPECT_EQ(test::get(port_, "/hello").body(), "hello\n");
}

TEST_P(PoolStreamingTest, AQueuedStreamTakesTheRoomAStreamLeaves) {
  ServerConfig config;
  config.pool.streamingLane = 1;
  config.pool.maxInflight = 1;
  config.pool.workerMaxInflight = 1;
  config.pool.streamMaxInflight = 2;
  config.pool.maxQueue = 4;
  config.pool.queueTimeout = milliseconds(3000);
  config.apps.push_back(test::fixtureApp("feed", "stream.js", "/feed"));
  config.apps.back().streaming = true;
  start(std::move(config), 2);
  // The short lane is full (one slow request), and so is the stream cap (two streams).
  RawClient slow(port_);
  slow.get("/slow?ms=4000");
  RawClient a(port_), b(port_);
  a.get("/feed/sse?n=100000&ms=50");
  b.get("/feed/sse?n=100000&ms=50");
  ASSERT_TRUE(a.readUntil(": open", milliseconds(5000)));
  ASSERT_TRUE(b.readUntil(": open", milliseconds(5000)));
  RawClient third(port_);
  third.get("/feed/sse?n=2&ms=10");
  EXPECT_FALSE(third.readUntil("HTTP/1.1", milliseconds(300))) << "not queued: " << third.data;
  // A stream ends: its room goes to the queued stream at once, though the short lane is still
  // full, well before its queue timeout.
  auto closed = Clock::now();
  a.close();
  ASSERT_TRUE(third.readUntil(kLastChunk, milliseconds(2500))) << third.data;
  EXPECT_NE(third.data.find("HTTP/1.1 200"), std::string::npos) << third.data;
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - closed);
  std::printf("the queued stream was served %lld ms after a stream ended\n",
              static_cast<long long>(took.count()));
  EXPECT_LT(took, milliseconds(1000));
}

INSTANTIATE_TEST_SUITE_P(Backends, StreamingTest, ::testing::Values("subprocess", "inprocess"));
INSTANTIATE_TEST_SUITE_P(Pool, PoolStreamingTest, ::testing::Values("subprocess"));

}  // namespace
}  // namespace isolane

// The master's egress (pool/egress.h): a worker's fetch calls, checked against the master's own
// configuration and performed by the master. Nothing a worker claims is trusted.

#include "pool/egress.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "e2e/upstream.h"
#include "ipc/fetch_codec.h"
#include "util/guarded.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

// What one worker receives: the events of its fetches, decoded.
class FakeWorker {
 public:
  std::shared_ptr<const Egress::Reply> reply() {
    return std::make_shared<const Egress::Reply>([this](const std::string& bytes) {
      FrameReader reader(kDefaultMaxFrameBytes);
      reader.append(bytes.data(), bytes.size());
      const wire::Frame* frame = nullptr;
      std::string error;
      if (reader.next(&frame, &error) == FrameReader::Next::kFrame &&
          frame->message_type() == wire::Message::FetchEvent) {
        events_.lock()->push_back(decodeFetchEvent(*frame->message_as_FetchEvent(), reader.trailer()));
      }
      return true;
    });
  }
  // The next event, waiting up to 5 s; kind kError with errorKind "none" when none came.
  FetchEvent next() {
    for (int i = 0; i < 500; ++i) {
      {
        auto events = events_.lock();
        if (!events->empty()) {
          FetchEvent e = std::move(events->front());
          events->erase(events->begin());
          return e;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    return FetchEvent{0, FetchEvent::Kind::kError, 0, {}, {}, "no event", "none"};
  }
  std::size_t received() { return events_.lock()->size(); }
  // Pulls operation `op` (as worker 1) one piece at a time to its end; the body it got.
  std::string pullToEnd(Egress& egress, const std::shared_ptr<const Egress::Reply>& reply,
                        std::uint64_t op);

 private:
  Guarded<std::vector<FetchEvent>> events_;
};

FetchCall start(std::uint64_t op, const std::string& app, const std::string& url) {
  FetchCall call;
  call.op = op;
  call.app = app;
  call.method = "GET";
  call.url = url;
  return call;
}

FetchCall control(std::uint64_t op, FetchCall::Action action) {
  FetchCall call;
  call.op = op;
  call.action = action;
  return call;
}

std::string FakeWorker::pullToEnd(Egress& egress, const std::shared_ptr<const Egress::Reply>& reply,
                                  std::uint64_t op) {
  std::string body;
  for (;;) {
    egress.call(1, reply, control(op, FetchCall::Action::kPull));
    FetchEvent e = next();
    if (e.kind != FetchEvent::Kind::kChunk) {
      EXPECT_EQ(e.kind, FetchEvent::Kind::kEnd) << e.data;
      return body;
    }
    body += e.data;
  }
}

class EgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AppSpec open{"open", "/open.js", {}};
    open.fetchAllow = {"127.0.0.1"};
    AppSpec other{"other", "/other.js", {}};
    other.fetchAllow = {"127.0.0.1"};
    egress_.setApps({open, other, AppSpec{"closed", "/closed.js", {}}});
  }
  test::Upstream upstream_{0ms};
  Egress egress_{FetchClientOptions{}, kDefaultMaxFrameBytes};
};

TEST_F(EgressTest, AnAllowedFetchRunsInTheMasterPieceByPiece) {
  FakeWorker worker;
  auto reply = worker.reply();
  egress_.call(1, reply, start(7, "open", upstream_.base() + "/hello"));
  FetchEvent head = worker.next();
  ASSERT_EQ(head.kind, FetchEvent::Kind::kHead) << head.data;
  EXPECT_EQ(head.op, 7u);  // the worker's own id
  EXPECT_EQ(head.status, 200);
  // One piece per pull: nothing more comes until the worker asks.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(worker.received(), 0u);
  EXPECT_EQ(worker.pullToEnd(egress_, reply, 7), "upstream /hello");
  EXPECT_EQ(upstream_.requests(), 1);
}

TEST_F(EgressTest, PiecesAreReadAheadUpToTheWindowAndNoFurther) {
  // Pieces of 2 bytes: "upstream /late-body" is 10 of them; its body comes 300 ms after its head,
  // so every pull below is made while no piece can be read.
  Egress egress{FetchClientOptions{.chunkBytes = 2}, kDefaultMaxFrameBytes};
  AppSpec open{"open", "/open.js", {}};
  open.fetchAllow = {"127.0.0.1"};
  egress.setApps({open});
  FakeWorker worker;
  auto reply = worker.reply();
  egress.call(1, reply, start(7, "open", upstream_.base() + "/late-body"));
  // A pull before the head (never the runtime's: a worker's) is owed, and read once it came.
  egress.call(1, reply, control(7, FetchCall::Action::kPull));
  ASSERT_EQ(worker.next().kind, FetchEvent::Kind::kHead);
  // More pulls than the window: the master owes kFetchPiecesAhead pieces, no more.
  for (int i = 0; i < 10; ++i) egress.call(1, reply, control(7, FetchCall::Action::kPull));
  std::string body;
  for (std::size_t i = 0; i < kFetchPiecesAhead; ++i) {
    FetchEvent e = worker.next();
    ASSERT_EQ(e.kind, FetchEvent::Kind::kChunk) << e.data;
    body += e.data;
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(worker.received(), 0u) << "pulls past the window are not owed";
  body += worker.pullToEnd(egress, reply, 7);
  EXPECT_EQ(body, "upstream /late-body") << "every piece, in order";
}

TEST_F(EgressTest, TheMastersConfigurationDecidesNotTheWorkersClaims) {
  FakeWorker worker;
  auto reply = worker.reply();
  // An app the master does not know.
  egress_.call(1, reply, start(1, "forged", upstream_.base() + "/x"));
  FetchEvent e = worker.next();
  EXPECT_EQ(e.kind, FetchEvent::Kind::kError);
  EXPECT_EQ(e.errorKind, "policy") << e.data;
  // An app whose fetch_allow does not list the loopback address.
  egress_.call(1, reply, start(2, "closed", upstream_.base() + "/x"));
  e = worker.next();
  EXPECT_EQ(e.kind, FetchEvent::Kind::kError);
  EXPECT_EQ(e.errorKind, "policy") << e.data;
  EXPECT_EQ(upstream_.requests(), 0);
}

TEST_F(EgressTest, AWorkerCannotDriveAnotherWorkersFetchAndAGoneWorkerHearsNothing) {
  FakeWorker a, b;
  auto replyA = a.reply(), replyB = b.reply();
  egress_.call(1, replyA, start(5, "open", upstream_.base() + "/a"));
  ASSERT_EQ(a.next().kind, FetchEvent::Kind::kHead);
  // Worker 2 names worker 1's operation: ignored.
  egress_.call(2, replyB, control(5, FetchCall::Action::kPull));
  egress_.call(2, replyB, control(5, FetchCall::Action::kAbort));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(a.received(), 0u);
  EXPECT_EQ(b.received(), 0u);
  // Worker 1 dies: its operation is aborted, and nothing more is sent to it.
  egress_.forget(1);
  egress_.call(1, replyA, control(5, FetchCall::Action::kPull));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(a.received(), 0u);
}

// A compromised worker writes whatever it likes into a FetchCall: the master checks the head it
// is asked to write (method, header names and values) and writes nothing it refuses.
TEST_F(EgressTest, AForgedRequestHeadIsRefusedBeforeAnythingIsWritten) {
  FakeWorker worker;
  auto reply = worker.reply();
  std::vector<FetchCall> forged;
  FetchCall method = start(1, "open", upstream_.base() + "/m");
  method.method = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\nGET";
  forged.push_back(method);
  FetchCall value = start(2, "open", upstream_.base() + "/v");
  value.headers = {{"x-ok", "1\r\nX-Injected: yes"}};
  forged.push_back(value);
  FetchCall name = start(3, "open", upstream_.base() + "/n");
  name.headers = {{"x bad", "1"}};
  forged.push_back(name);
  FetchCall nul = start(4, "open", upstream_.base() + "/z");
  nul.headers = {{"x-nul", std::string("a\0b", 3)}};
  forged.push_back(nul);
  for (FetchCall& call : forged) {
    std::uint64_t op = call.op;
    egress_.call(1, reply, std::move(call));
    FetchEvent e = worker.next();
    EXPECT_EQ(e.op, op);
    EXPECT_EQ(e.kind, FetchEvent::Kind::kError);
    EXPECT_EQ(e.errorKind, "policy") << e.data;
    EXPECT_NE(e.data.find("request head was refused"), std::string::npos) << e.data;
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(upstream_.requests(), 0) << "a refused head reached the upstream";
}

// A worker's request bodies held by the master (until each gets its response's head) are
// bounded: against an upstream that never answers, the third body of 30 MiB is refused.
TEST_F(EgressTest, AWorkersOutboundBodiesInTheMasterAreBounded) {
  int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // listens, never accepts
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 16), 0);
  socklen_t len = sizeof addr;
  getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
  FakeWorker worker;
  auto reply = worker.reply();
  for (std::uint64_t op = 1; op <= 3; ++op) {
    FetchCall call = start(op, "open", url);
    call.method = "POST";
    call.body = std::string(30u << 20, 'x');
    call.timeoutMs = 0xFFFFFFFF;  // 49 days, asked for by a forged frame: bounded by the master
    egress_.call(1, reply, std::move(call));
  }
  FetchEvent refused = worker.next();
  EXPECT_EQ(refused.op, 3u);
  EXPECT_EQ(refused.kind, FetchEvent::Kind::kError);
  EXPECT_EQ(refused.errorKind, "too-large") << refused.data;
  // A second worker has a budget of its own.
  FakeWorker other;
  auto otherReply = other.reply();
  FetchCall call = start(1, "open", url);
  call.method = "POST";
  call.body = std::string(1u << 20, 'y');
  egress_.call(2, otherReply, std::move(call));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(other.received(), 0u) << "its fetch was refused";
  egress_.forget(1);
  egress_.forget(2);
  close(silent);
}

// An upstream that answers a request as soon as its head is in, without reading its body, and
// then reads on: the body of a POST, shaped as a request, is taken for the next request, whose
// answer ("smuggled") it writes 100 ms later on the same connection.
class DesyncUpstream {
 public:
  DesyncUpstream() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 16);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mutex_);
        clients_.push_back(c);
        connections_.emplace_back([c] { serve(c); });
      }
    });
  }
  ~DesyncUpstream() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int c : clients_) shutdown(c, SHUT_RDWR);  // the egress may pool them: end their reads
    for (auto& t : connections_) t.join();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  static void serve(int c) {
    std::string in;
    char buf[4096];
    bool first = true;
    for (;;) {
      std::size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) {
          close(c);
          return;
        }
        in.append(buf, static_cast<std::size_t>(n));
      }
      std::string path = in.substr(in.find(' ') + 1);
      path = path.substr(0, path.find(' '));
      in.erase(0, end + 4);  // the head only: a body stays, to be read as the next request
      if (!first) std::this_thread::sleep_for(100ms);
      first = false;
      std::string body = "answer to " + path;
      std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body;
      if (send(c, out.data(), out.size(), MSG_NOSIGNAL) < 0) {
        close(c);
        return;
      }
    }
  }
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<int> clients_;
  std::vector<std::thread> connections_;
};

// Reads one fetch to its end through the egress: the body, or the error.
std::string fetchBody(Egress& egress, FakeWorker& worker,
                      const std::shared_ptr<const Egress::Reply>& reply, FetchCall call) {
  std::uint64_t op = call.op;
  egress.call(1, reply, std::move(call));
  FetchEvent head = worker.next();
  if (head.kind != FetchEvent::Kind::kHead) return "error: " + head.data;
  std::string body;
  for (;;) {
    egress.call(1, reply, control(op, FetchCall::Action::kPull));
    FetchEvent e = worker.next();
    if (e.kind != FetchEvent::Kind::kChunk) break;
    body += e.data;
  }
  return body;
}

// One app leaves a keep-alive connection out of step (a POST whose body its upstream does not
// read, shaped as a request). Another app's next fetch to the same upstream must not get that
// connection, and with it the answer the first app chose.
TEST_F(EgressTest, AConnectionOneAppLeftOutOfStepIsNeverAnothersApp) {
  DesyncUpstream upstream;
  FakeWorker worker;
  auto reply = worker.reply();
  FetchCall poison = start(1, "open", upstream.base() + "/poison");
  poison.method = "POST";
  poison.body = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(fetchBody(egress_, worker, reply, std::move(poison)), "answer to /poison");
  std::this_thread::sleep_for(20ms);  // the connection is back in the pool
  EXPECT_EQ(fetchBody(egress_, worker, reply, start(2, "other", upstream.base() + "/mine")),
            "answer to /mine");
}

}  // namespace
}  // namespace isolane

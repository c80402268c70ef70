// The master's egress (pool/egress.h): a worker's fetch calls, checked against the master's own
// configuration and performed by the master. Nothing a worker claims is trusted.

#include "pool/egress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

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
        events_.lock()->push_back(decodeFetchEvent(*frame->message_as_FetchEvent()));
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

class EgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AppSpec open{"open", "/open.js", {}};
    open.fetchAllow = {"127.0.0.1"};
    egress_.setApps({open, AppSpec{"closed", "/closed.js", {}}});
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
  std::string body;
  for (;;) {
    egress_.call(1, reply, control(7, FetchCall::Action::kPull));
    FetchEvent e = worker.next();
    if (e.kind != FetchEvent::Kind::kChunk) {
      EXPECT_EQ(e.kind, FetchEvent::Kind::kEnd) << e.data;
      break;
    }
    body += e.data;
  }
  EXPECT_EQ(body, "upstream /hello");
  EXPECT_EQ(upstream_.requests(), 1);
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

}  // namespace
}  // namespace isolane

// A request body that arrives after its request, piece by piece (RequestJob::bodyStreamed), as
// the app reads it: whole (text(), json(), arrayBuffer(), bytes(), blob(): gathered by the host
// into one buffer of its Content-Length as the pieces arrive), or through `request.body`.
// Driven through the executor, as the worker's reader drives it.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "eventually.h"
#include "worker/executor.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

class NullLog final : public LogSink {
 public:
  void write(std::string_view, std::string_view, std::string_view, std::string_view) override {}
};

// The checksum body_reader.js answers with.
std::uint32_t checksum(const std::string& bytes) {
  std::uint32_t sum = 0;
  for (unsigned char c : bytes) sum = sum * 31 + c;
  return sum;
}

class RequestBodyTest : public ::testing::Test {
 protected:
  void start(std::size_t arrayBufferMb = 64) {
    ExecutorOptions o;
    o.loop.cpuLimit = 2s;
    o.loop.wallTimeout = 10s;
    o.loop.limits.heapMb = 64;
    o.loop.limits.arrayBufferMb = arrayBufferMb;
    executor_ = std::make_unique<Executor>(o, log_);
    ASSERT_TRUE(executor_->loadApp(AppSpec{"reader", kApps + "body_reader.js", {}}));
  }

  // A POST whose body follows through sendBody; `length`: its Content-Length header (none: the
  // head says chunked).
  std::future<AppResponse> post(const std::string& how, std::optional<std::size_t> length) {
    auto promise = std::make_shared<std::promise<AppResponse>>();
    auto future = promise->get_future();
    HeaderList headers = {{"Content-Type", "application/json"}};
    if (length) {
      headers.emplace_back("Content-Length", std::to_string(*length));
    } else {
      headers.emplace_back("Transfer-Encoding", "chunked");
    }
    RequestJob job{AppRequest{"reader", "r", "POST", "http://test.local/?how=" + how,
                              std::move(headers), ""},
                   [promise](AppResponse r) { promise->set_value(std::move(r)); }, ++key_};
    job.bodyStreamed = true;
    job.bodyConsumed = [consumed = consumed_](std::size_t n) { *consumed += n; };
    EXPECT_TRUE(executor_->submit(job));
    return future;
  }

  // Sends `body` in pieces of `piece` bytes, then its end.
  void sendBody(const std::string& body, std::size_t piece) {
    for (std::size_t at = 0; at < body.size(); at += piece) {
      executor_->requestBody(key_, body.substr(at, piece), false, "");
    }
    executor_->requestBody(key_, "", true, "");
  }

  static std::string answer(std::future<AppResponse>& f) {
    EXPECT_EQ(f.wait_for(20s), std::future_status::ready);
    AppResponse r = f.get();
    EXPECT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
    return r.body;
  }

  NullLog log_;
  std::unique_ptr<Executor> executor_;
  std::uint64_t key_ = 0;
  std::shared_ptr<std::atomic<std::size_t>> consumed_ = std::make_shared<std::atomic<std::size_t>>(0);
};

TEST_F(RequestBodyTest, EveryWayOfReadingItWholeGetsTheBodyInOrder) {
  start();
  std::string bytes(300'000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / 251);
  std::string sum = std::to_string(checksum(bytes));

  auto f = post("arrayBuffer", bytes.size());
  sendBody(bytes, 65'536);
  EXPECT_EQ(answer(f), "300000 sum " + sum + " used true locked true");
  EXPECT_EQ(consumed_->load(), bytes.size()) << "every byte gathered is acknowledged";

  f = post("bytes", bytes.size());
  sendBody(bytes, 1000);
  EXPECT_EQ(answer(f), "300000 sum " + sum + " exact true");

  // UTF-8 split inside a character, at every piece's edge.
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "é€𝄞";
  f = post("text", text.size());
  sendBody(text, 7);
  EXPECT_EQ(answer(f), std::to_string(text.size()) + " text 20000 é€𝄞é€𝄞");

  std::string json = R"({"a":1,"b":")" + std::string(100'000, 'x') + R"("})";
  f = post("json", json.size());
  sendBody(json, 65'536);
  EXPECT_EQ(answer(f), std::to_string(json.size()) + " keys a,b");

  f = post("blob", 5);
  sendBody("hello", 2);
  EXPECT_EQ(answer(f), "5 type application/json");

  // A body used whole cannot be read again.
  f = post("twice", 3);
  sendBody("abc", 1);
  EXPECT_EQ(answer(f), "0 second read: TypeError");
}

// Gathered, the body takes its own size of the app's array-buffer budget once: read through a
// stream, the pieces and their concatenation would take it twice (6 MiB of a 4 MiB cap).
// One after another, each takes the budget the one before gave up (collected when a body does
// not fit, as V8 collects before it refuses an allocation).
TEST_F(RequestBodyTest, ABodyReadWholeTakesItsSizeOfTheBudgetOnce) {
  start(/*arrayBufferMb=*/4);
  std::string bytes(3u << 20, 'z');
  for (int i = 0; i < 3; ++i) {
    auto f = post("arrayBuffer", bytes.size());
    sendBody(bytes, 65'536);
    EXPECT_EQ(answer(f), "3145728 sum " + std::to_string(checksum(bytes)) + " used true locked true")
        << "body " << i;
  }
}

// Past the budget, a body read whole is a RangeError, as an ArrayBuffer allocation past it is:
// at once when its head announces more than the whole budget, else when the bytes that arrived
// do not fit beside what the app holds.
TEST_F(RequestBodyTest, ABodyPastTheAppsBudgetIsARangeError) {
  start(/*arrayBufferMb=*/4);
  auto f = post("arrayBuffer", 5u << 20);
  EXPECT_EQ(answer(f),
            "error RangeError: The request body of 5242880 bytes is larger than the app's memory "
            "outside its heap");

  std::string bytes(3584u << 10, 'v');  // 3.5 MiB
  auto held = post("arrayBuffer", bytes.size());
  std::uint64_t heldKey = key_;
  executor_->requestBody(heldKey, bytes.substr(0, 1u << 20), false, "");  // holds 1 MiB
  ASSERT_TRUE(test::eventually([&] { return consumed_->load() >= (1u << 20); }));
  f = post("arrayBuffer", bytes.size());
  sendBody(bytes, 65'536);
  EXPECT_EQ(answer(f),
            "error RangeError: The request body could not be read: a body of 3670016 bytes does not "
            "fit in the app's memory outside its heap");
  executor_->requestBody(heldKey, "", false, "the client went away");
  EXPECT_EQ(answer(held),
            "error TypeError: The request body could not be read: the client went away");
}

// Fetch's Request constructor refuses a streamed body without mode same-origin or cors: the
// incoming body is one before anything read `.body`.
TEST_F(RequestBodyTest, AnIncomingBodyIsAStreamToTheRequestConstructor) {
  start();
  auto f = post("no-cors", 3);
  sendBody("abc", 3);
  EXPECT_EQ(answer(f), "0 no-cors: TypeError");
}

// The runtime tells an incoming body from bytes without walking any prototype chain an app can
// put a trap into.
TEST_F(RequestBodyTest, ATrapInTheChainOfUint8ArrayNeverRunsInTheRuntime) {
  start();
  auto f = post("proxy-proto", 5);
  sendBody("hello", 2);
  EXPECT_EQ(answer(f), "5 own hi");
}

// What a head announces is not charged before it arrives: two clients that announce 3 MiB each
// and send 1 KiB do not take the 4 MiB budget, and the one that sends all of it is read.
TEST_F(RequestBodyTest, ABodyIsChargedToTheAppAsItArrivesNotAsItIsAnnounced) {
  start(/*arrayBufferMb=*/4);
  std::string bytes(3u << 20, 'k');
  auto a = post("arrayBuffer", bytes.size());
  std::uint64_t aKey = key_;
  auto b = post("arrayBuffer", bytes.size());
  std::uint64_t bKey = key_;
  executor_->requestBody(aKey, bytes.substr(0, 1024), false, "");
  executor_->requestBody(bKey, bytes.substr(0, 1024), false, "");
  // Both are gathering (a piece is acknowledged once it is in the gathered buffer).
  ASSERT_TRUE(test::eventually([&] {
    return consumed_->load() >= 2048 || b.wait_for(0s) == std::future_status::ready;
  }));
  ASSERT_NE(b.wait_for(0s), std::future_status::ready) << "refused on its announced length";
  executor_->requestBody(bKey, "", false, "the client went away");
  EXPECT_EQ(answer(b), "error TypeError: The request body could not be read: the client went away");
  for (std::size_t at = 1024; at < bytes.size(); at += 65'536) {
    executor_->requestBody(aKey, bytes.substr(at, 65'536), false, "");
  }
  executor_->requestBody(aKey, "", true, "");
  EXPECT_EQ(answer(a), "3145728 sum " + std::to_string(checksum(bytes)) + " used true locked true");
}

TEST_F(RequestBodyTest, ABodyWithoutALengthOrReadAsAStreamArrivesPieceByPiece) {
  start();
  std::string bytes(200'000, 'q');
  std::string sum = std::to_string(checksum(bytes));
  // Chunked: no length to gather into, so arrayBuffer() reads the stream.
  auto f = post("arrayBuffer", std::nullopt);
  sendBody(bytes, 65'536);
  EXPECT_EQ(answer(f), "200000 sum " + sum + " used true locked true");

  f = post("stream", bytes.size());
  sendBody(bytes, 50'000);
  EXPECT_EQ(answer(f), "200000 sum " + sum + " pieces 4");

  // `.body` looked at first: the stream it returned is the body from then on.
  f = post("stream-then-whole", bytes.size());
  sendBody(bytes, 65'536);
  EXPECT_EQ(answer(f), "200000 sum " + sum + " same true");

  f = post("clone", bytes.size());
  sendBody(bytes, 65'536);
  EXPECT_EQ(answer(f), "200000 sum " + sum + " 200000 sum " + sum + " shared false");
}

TEST_F(RequestBodyTest, ABodyThatBreaksItsLengthOrIsCutRejectsTheRead) {
  start();
  auto f = post("arrayBuffer", 10);
  sendBody("twelve bytes", 5);
  EXPECT_EQ(answer(f),
            "error TypeError: The request body could not be read: the body is longer than its "
            "Content-Length");

  f = post("text", 10);
  sendBody("short", 5);
  EXPECT_EQ(answer(f),
            "error TypeError: The request body could not be read: the body is shorter than its "
            "Content-Length");

  f = post("json", 100);
  executor_->requestBody(key_, "{\"a\":", false, "");
  executor_->requestBody(key_, "", false, "the client went away");
  EXPECT_EQ(answer(f), "error TypeError: The request body could not be read: the client went away");

  // A piece after the body failed changes nothing, and the next request reads as usual.
  executor_->requestBody(key_, "late", true, "");
  f = post("arrayBuffer", 3);
  sendBody("abc", 3);
  EXPECT_EQ(answer(f), "3 sum " + std::to_string(checksum("abc")) + " used true locked true");
}

}  // namespace
}  // namespace isolane

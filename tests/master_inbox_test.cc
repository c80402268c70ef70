// An executor that reads its own inbox (worker/executor_inbox.h), and a worker's reading of its
// socket to the master (worker/master_inbox.h) with one executor thread, the default: the thread
// reads the socket itself; while it is inside a long turn a stand-in
// answers heartbeats and queues what comes, but leaves an app load, and what follows it, to the
// executor thread, in the order it was sent. The test holds the master's end.

#include "worker/master_inbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "eventually.h"
#include "ipc/status_page.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";
constexpr std::size_t kMax = kDefaultMaxFrameBytes;

// The master's end: sends frames, reads them back one at a time.
class MasterEnd {
 public:
  explicit MasterEnd(int fd) : fd_(fd), reader_(kMax) {}
  void send(const Result<std::string>& frame) {
    ASSERT_TRUE(frame) << frame.error();
    ASSERT_EQ(::write(fd_, frame.value().data(), frame.value().size()),
              static_cast<ssize_t>(frame.value().size()));
  }
  // The type of the next frame and, for an answer, its request id (0 otherwise); kNONE when
  // nothing comes within 20 s.
  std::pair<wire::Message, std::uint64_t> next() {
    for (;;) {
      const wire::Frame* frame = nullptr;
      std::string error;
      FrameReader::Next n = reader_.next(&frame, &error);
      if (n == FrameReader::Next::kError) return {wire::Message::NONE, 0};
      if (n == FrameReader::Next::kFrame) return {frame->message_type(), idOf(*frame)};
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20'000) <= 0) return {wire::Message::NONE, 0};
      char buffer[65536];
      ssize_t got = ::read(fd_, buffer, sizeof buffer);
      if (got <= 0) return {wire::Message::NONE, 0};
      reader_.append(buffer, static_cast<std::size_t>(got));
    }
  }

 private:
  static std::uint64_t idOf(const wire::Frame& f) {
    switch (f.message_type()) {
      case wire::Message::ResponseHead:
        return f.message_as_ResponseHead()->id();
      case wire::Message::End:
        return f.message_as_End()->id();
      default:
        return 0;
    }
  }
  int fd_;
  FrameReader reader_;
};

// An executor that reads its own inbox (worker/executor_inbox.h), as a worker's one thread reads
// its socket to the master: drain() runs on the executor thread whenever the descriptor has
// bytes, even while the thread waits for nothing else; what it hands on runs there, a load at
// once (from its own thread it does not wait for itself), then the request. Once drain() says
// false the inbox is read no more, and the executor goes on serving what is submitted.
class PipeInbox final : public ExecutorInbox {
 public:
  PipeInbox(Executor& executor, int fd) : executor_(executor), fd_(fd) {}
  int fd() const override { return fd_; }
  bool drain() override {
    ++drains;
    drainThread = std::this_thread::get_id();
    char bytes[16];
    ssize_t n = ::read(fd_, bytes, sizeof bytes);
    if (n == 0) {  // the writer is gone
      ended = true;
      return false;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == 'L') {
        loaded = executor_.loadApp(AppSpec{"hello", kApps + "hello.js", {}}).ok();
      } else {
        RequestJob job{AppRequest{"hello", "r", "GET", "http://test.local/inbox", {}, ""},
                       [this](AppResponse r) {
                         answerThread = std::this_thread::get_id();
                         answered.set_value(std::move(r));
                       }};
        EXPECT_TRUE(executor_.submit(job));
      }
    }
    return true;
  }
  std::atomic<int> drains{0};
  std::atomic<std::thread::id> drainThread{};
  std::atomic<std::thread::id> answerThread{};
  std::atomic<bool> loaded{false};
  std::atomic<bool> ended{false};
  std::promise<AppResponse> answered;

 private:
  Executor& executor_;
  const int fd_;
};

TEST(ExecutorInbox, AnExecutorReadsItsOwnInboxOnItsThread) {
  ConsoleLog log;
  auto executor = std::make_unique<Executor>(ExecutorOptions{}, log);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  PipeInbox inbox(*executor, fds[0]);
  auto answer = inbox.answered.get_future();
  executor->attachInbox(&inbox);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // parked, with the inbox
  ASSERT_EQ(::write(fds[1], "LR", 2), 2);
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  AppResponse r = answer.get();
  EXPECT_TRUE(inbox.loaded);
  EXPECT_EQ(r.body, "hello /inbox") << r.failureDetail;
  EXPECT_NE(inbox.drainThread.load(), std::this_thread::get_id());
  EXPECT_EQ(inbox.drainThread.load(), inbox.answerThread.load()) << "drained on the executor";
  // The writer goes: the inbox says so once and is not read again.
  ::close(fds[1]);
  ASSERT_TRUE(test::eventually([&] { return inbox.ended.load(); }));
  int drains = inbox.drains;
  std::promise<AppResponse> after;
  RequestJob job{AppRequest{"hello", "r", "GET", "http://test.local/after", {}, ""},
                 [&after](AppResponse r) { after.set_value(std::move(r)); }};
  ASSERT_TRUE(executor->submit(job));
  EXPECT_EQ(after.get_future().get().body, "hello /after");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(inbox.drains, drains);
  executor->stop();
  ::close(fds[0]);
}

// A worker's one executor thread reading its socket to the master (a MasterInbox), and the
// test as the master at the socket's other end. `options` gets the egress hub of the worker.
class InboxOnASocket {
 public:
  explicit InboxOnASocket(ExecutorOptions options = {})
      : fds_(socketPair()),
        out(fds_[0], [](const std::string&) {}),
        egress(out, kMax),
        executor(1, withEgress(std::move(options)), console, SystemClock::instance(), &page),
        inbox(fds_[0], {out, executor, egress, console, kMax, {}}),
        master(fds_[1]) {
    EXPECT_TRUE(executor.attachInbox(0, &inbox));
  }
  // The master goes: the inbox ends with this status, and the executor stops.
  int masterGoes() {
    ::shutdown(fds_[1], SHUT_RDWR);
    int status = inbox.waitForEnd();
    executor.stop();
    ::close(fds_[1]);
    return status;
  }

 private:
  static std::array<int, 2> socketPair() {
    std::array<int, 2> fds{-1, -1};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()), 0);
    return fds;
  }
  ExecutorOptions withEgress(ExecutorOptions options) {
    options.egress = [this](Doorbell& wake) { return egress.channel(wake); };
    return options;
  }
  std::array<int, 2> fds_;

 public:
  FrameOutbox out;
  ConsoleLog console;
  WireEgressHub egress;
  StatusPage page;
  ExecutorSet executor;
  MasterInbox inbox;
  MasterEnd master;
};

// Options under which a turn of a second or two is neither a CPU-limit failure nor a timeout.
ExecutorOptions allowingLongTurns() {
  ExecutorOptions options;
  options.loop.cpuLimit = 10s;
  options.loop.wallTimeout = 20s;
  return options;
}

TEST(MasterInbox, ALongTurnHoldsUpNoHeartbeatAndALoadWaitsForItInOrder) {
  InboxOnASocket worker(allowingLongTurns());
  StatusPage& page = worker.page;
  MasterEnd& master = worker.master;

  master.send(encodeLoadApp(AppSpec{"spin", kApps + "spin.js", {}}, kMax));
  ASSERT_EQ(master.next().first, wire::Message::AppLoaded);
  master.send(encodeRequest(1, AppRequest{"spin", "r1", "GET", "http://x/?ms=1500", {}, ""}, 0,
                            kMax));
  // Inside the turn, and past the mark that starts the stand-in.
  ASSERT_TRUE(test::eventually([&] { return page.thread[0].turnSinceNs.load() != 0; }));
  std::this_thread::sleep_for(100ms);
  master.send(encodeHeartbeat(7, kMax));
  master.send(encodeLoadApp(AppSpec{"hello", kApps + "hello.js", {}}, kMax));
  master.send(encodeRequest(2, AppRequest{"hello", "r2", "GET", "http://x/after", {}, ""}, 0,
                            kMax));

  auto [first, id] = master.next();
  EXPECT_EQ(first, wire::Message::HeartbeatAck);
  EXPECT_NE(page.thread[0].turnSinceNs.load(), 0) << "answered while the turn still ran";
  std::vector<std::string> order;
  // Each answer is whole, in one frame (its head, complete, with its body).
  for (int answers = 0; answers < 2;) {
    auto [type, of] = master.next();
    ASSERT_NE(type, wire::Message::NONE) << ::testing::PrintToString(order);
    order.push_back(std::string(wire::EnumNameMessage(type)) + (of ? std::to_string(of) : ""));
    if (type == wire::Message::ResponseHead) ++answers;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"ResponseHead1", "AppLoaded", "ResponseHead2"}));

  EXPECT_EQ(worker.masterGoes(), 0);
}

// The thread's answers wait through a pass of short turns and leave together (ExecutorInbox's
// answers), but never behind a long turn: two requests that arrive together, a quick one and then
// one that spins for 1.5 s, and the quick one's answer reaches the master while the spin runs.
TEST(MasterInbox, AnAnswerDoesNotWaitForALongTurnAfterIt) {
  InboxOnASocket worker(allowingLongTurns());
  MasterEnd& master = worker.master;
  master.send(encodeLoadApp(AppSpec{"spin", kApps + "spin.js", {}}, kMax));
  ASSERT_EQ(master.next().first, wire::Message::AppLoaded);
  master.send(encodeLoadApp(AppSpec{"hello", kApps + "hello.js", {}}, kMax));
  ASSERT_EQ(master.next().first, wire::Message::AppLoaded);
  std::string both =
      encodeRequest(1, AppRequest{"hello", "r1", "GET", "http://x/quick", {}, ""}, 0, kMax)
          .value() +
      encodeRequest(2, AppRequest{"spin", "r2", "GET", "http://x/?ms=1500", {}, ""}, 0, kMax)
          .value();
  auto sent = std::chrono::steady_clock::now();
  master.send(both);  // one write: one drain reads both, and one pass starts both
  EXPECT_EQ(master.next(), std::make_pair(wire::Message::ResponseHead, std::uint64_t{1}));
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 1s) << "the quick answer waited for the spin";
  EXPECT_EQ(master.next(), std::make_pair(wire::Message::ResponseHead, std::uint64_t{2}));
  EXPECT_EQ(worker.masterGoes(), 0);
}

// A request's wait counts from when the master sent it (the Request frame's stamp), its time in
// the socket included: requests stamped 300 ms ago make a standing delay of at least that; a
// stamp in the future (a clock the worker cannot trust to be behind) counts as now.
TEST(MasterInbox, ARequestsWaitCountsFromWhenTheMasterSentIt) {
  using Ms = std::chrono::milliseconds;
  for (auto [ago, atLeast, below] : {std::tuple<Ms, Ms, Ms>{300ms, 300ms, 10s},
                                     std::tuple<Ms, Ms, Ms>{-5s, 0ms, 100ms}}) {
    InboxOnASocket worker;
    StatusPage& page = worker.page;
    MasterEnd& master = worker.master;
    master.send(encodeLoadApp(AppSpec{"hello", kApps + "hello.js", {}}, kMax));
    ASSERT_EQ(master.next().first, wire::Message::AppLoaded);
    // One every 10 ms for longer than an interval: the interval's least wait is published.
    for (std::uint64_t id = 1; id <= 15; ++id) {
      auto sent = std::chrono::steady_clock::now() - ago;
      auto sentNs = std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch());
      master.send(encodeRequest(id, AppRequest{"hello", "r", "GET", "http://x/", {}, ""}, 0, kMax,
                                static_cast<std::uint64_t>(sentNs.count())));
      ASSERT_EQ(master.next().first, wire::Message::ResponseHead);
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_NE(page.thread[0].standingDelayAtNs.load(), 0);
    std::chrono::nanoseconds standing(page.thread[0].standingDelayNs.load());
    EXPECT_GE(standing, atLeast);
    EXPECT_LT(standing, below);
    EXPECT_EQ(worker.masterGoes(), 0);
  }
}

}  // namespace
}  // namespace isolane

// The master's writing end of a worker's socket (ipc/socket_writer.h), on a reactor of the
// test's: frames from many threads arrive whole and in each sender's order, what one pass of the
// reactor sends leaves in one gathered write, written by the flush itself, a sender never blocks on a peer that does not read,
// and a peer that closes or stops reading breaks the writer once.

#include "ipc/socket_writer.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "eventually.h"
#include "ipc/frame_codec.h"
#include "ipc/reactor.h"
#include "read_all.h"

namespace isolane {
namespace {

using test::eventually;
using test::readAll;

namespace asio = boost::asio;
using namespace std::chrono_literals;

// One socketpair: the writer's end on the reactor, the peer's a plain descriptor.
struct Link {
  Link(Reactor& reactor, std::size_t maxQueued = SocketWriter::kMaxQueuedBytes)
      : Link(reactor.io(), maxQueued) {}
  Link(asio::io_context& io, std::size_t maxQueued = SocketWriter::kMaxQueuedBytes)
      : strand(asio::make_strand(io)),
        socket(strand),
        writer(strand, socket, [this](const std::string& why) { broken(why); }, maxQueued) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    socket.assign(asio::local::stream_protocol(), fds[0]);
    peer = fds[1];
  }
  ~Link() {
    if (peer >= 0) ::close(peer);
  }
  void broken(const std::string& why) {
    reasons.push_back(why);
    ++breaks;
  }

  asio::strand<asio::io_context::executor_type> strand;
  asio::local::stream_protocol::socket socket;
  SocketWriter writer;
  int peer = -1;
  std::vector<std::string> reasons;
  std::atomic<int> breaks{0};
};

// Runs `f` on the link's strand and waits for it.
template <typename F>
void onStrand(Link& link, F f) {
  std::promise<void> done;
  asio::post(link.strand, [&] {
    f();
    done.set_value();
  });
  done.get_future().wait();
}

TEST(SocketWriter, FramesFromManyThreadsArriveWholeAndInEachSendersOrder) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  constexpr int kThreads = 4, kFrames = 2000;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kFrames; ++i) {
        // "t:i;" padded to 16 bytes: a frame of the test's own.
        std::string frame = std::to_string(t) + ":" + std::to_string(i) + ";";
        frame.resize(16, '.');
        ASSERT_TRUE(link->writer.send(std::move(frame), link));
      }
    });
  }
  std::string got = readAll(link->peer, std::size_t{16} * kThreads * kFrames);
  for (auto& s : senders) s.join();
  ASSERT_EQ(got.size(), std::size_t{16} * kThreads * kFrames);
  std::map<int, int> next;
  for (std::size_t at = 0; at < got.size(); at += 16) {
    std::string frame = got.substr(at, 16);
    int t = std::stoi(frame);
    int i = std::stoi(frame.substr(frame.find(':') + 1));
    EXPECT_EQ(i, next[t]++) << "sender " << t;
  }
  EXPECT_TRUE(eventually([&] { return link->writer.queuedBytes() == 0; }));
  EXPECT_EQ(link->breaks, 0);
}

TEST(SocketWriter, WhatOnePassOfTheReactorSendsLeavesInOneWrite) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  onStrand(*link, [&] {
    for (int i = 0; i < 50; ++i) link->writer.send("frame " + std::to_string(i) + "\n", link);
  });
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "frame " + std::to_string(i) + "\n";
  EXPECT_EQ(readAll(link->peer, expected.size()), expected);
  EXPECT_EQ(link->writer.writes(), 1u);
}

// The flush writes the socket itself: no completion handler is left to run behind whatever else
// the reactor has ready (on a busy front, hundreds of connections' reads), holding the batch as
// "being written" and the frames queued meanwhile with it.
TEST(SocketWriter, AFlushWritesAtOnceNotThroughAHandlerBehindTheOthers) {
  asio::io_context io;
  auto link = std::make_shared<Link>(io);
  ASSERT_TRUE(link->writer.send(std::string("first\n"), link));  // posts the flush
  int others = 0;
  for (int i = 0; i < 100; ++i) asio::post(io, [&] { ++others; });
  ASSERT_EQ(io.run_one(), 1u);  // the flush, and nothing else
  EXPECT_EQ(others, 0);
  EXPECT_EQ(link->writer.queuedBytes(), 0u);  // done with: nothing waits for a handler
  EXPECT_EQ(readAll(link->peer, 6), "first\n");
  // The next frame starts a flush of its own at once.
  ASSERT_TRUE(link->writer.send(std::string("second\n"), link));
  io.run();
  EXPECT_EQ(others, 100);
  EXPECT_EQ(readAll(link->peer, 7), "second\n");
  EXPECT_EQ(link->writer.writes(), 2u);
  EXPECT_EQ(link->writer.queuedBytes(), 0u);
}

// Frames of a known pattern: byte k of the stream is 'a' + (k / 1000) % 26.
std::string patterned(std::size_t from, std::size_t n) {
  std::string out(n, '\0');
  for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<char>('a' + ((from + k) / 1000) % 26);
  return out;
}

// One link on a bare io_context whose socket takes little at a time: a batch of `frames` frames of
// `bytes` each is queued, and the flush (one handler) writes what fits and leaves the rest to
// the reactor.
struct SmallSocket {
  explicit SmallSocket(std::size_t frames, std::size_t bytes) : link(std::make_shared<Link>(io)) {
    int small = 4096;
    EXPECT_EQ(::setsockopt(link->socket.native_handle(), SOL_SOCKET, SO_SNDBUF, &small,
                           sizeof small),
              0);
    for (std::size_t i = 0; i < frames; ++i) {
      std::string frame = patterned(expected.size(), bytes);
      expected += frame;
      EXPECT_TRUE(link->writer.send(std::move(frame), link));
    }
  }
  asio::io_context io;
  std::shared_ptr<Link> link;
  std::string expected;
};

// A socket that takes part of a batch: the rest is written as the peer reads, in order, and the
// batch counts as queued until its last byte is written.
TEST(SocketWriter, APartlyWrittenBatchGoesOnWhenThePeerReads) {
  SmallSocket s(16, 64 * 1024);
  ASSERT_EQ(s.io.run_one(), 1u);  // the flush: what fits, then a wait for room
  EXPECT_EQ(s.link->writer.queuedBytes(), s.expected.size());
  std::string got;
  std::thread reader([&] { got = readAll(s.link->peer, s.expected.size()); });
  s.io.run();  // until the rest is written
  reader.join();
  EXPECT_TRUE(got == s.expected) << "the bytes differ from the frames sent, in order";
  EXPECT_EQ(s.link->writer.queuedBytes(), 0u);
  EXPECT_EQ(s.link->writer.writes(), 1u);
  EXPECT_EQ(s.link->breaks, 0);
}

TEST(SocketWriter, APeerThatClosesDuringAPartWrittenBatchBreaksItOnce) {
  SmallSocket s(16, 64 * 1024);
  ASSERT_EQ(s.io.run_one(), 1u);
  ::close(s.link->peer);
  s.link->peer = -1;
  s.io.run();
  EXPECT_EQ(s.link->breaks, 1);
  ASSERT_EQ(s.link->reasons.size(), 1u);
  EXPECT_NE(s.link->reasons[0].find("closed its socket"), std::string::npos) << s.link->reasons[0];
  EXPECT_FALSE(s.link->writer.send("after", s.link));
}

// A head and its trailer (a body moved in, written from there) arrive as the whole frame, with
// its padding, in order with the frames around it and in the same gathered write.
TEST(SocketWriter, AHeadAndItsTrailerArriveAsTheWholeFrame) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  std::string expected;
  onStrand(*link, [&] {
    for (int i = 0; i < 9; ++i) {
      std::string body(1000 + i, 'b');
      expected += encodeRequestBody(i, body, false, "", kDefaultMaxFrameBytes).value();
      auto head = encodeRequestBodyHead(i, body.size(), false, "", kDefaultMaxFrameBytes);
      ASSERT_TRUE(link->writer.send(std::move(head.value()), std::move(body), link));
      std::string end = encodeEnd(i, kDefaultMaxFrameBytes).value();
      expected += end;
      link->writer.send(std::move(end), link);
    }
  });
  EXPECT_EQ(readAll(link->peer, expected.size()), expected);
  EXPECT_EQ(link->writer.writes(), 1u);
  EXPECT_TRUE(eventually([&] { return link->writer.queuedBytes() == 0; }));
}

TEST(SocketWriter, ASenderNeverBlocksOnAPeerThatDoesNotRead) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  // Far more than a socket buffer holds, with nobody reading: every call returns at once.
  std::string expected;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) {
    std::string frame(64 * 1024, static_cast<char>('a' + i % 26));
    expected += frame;
    link->writer.send(std::move(frame), link);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(readAll(link->peer, expected.size()), expected);
  EXPECT_EQ(link->breaks, 0);
}

TEST(SocketWriter, APeerThatStopsReadingPastTheBoundBreaksItOnce) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor, std::size_t{4} << 20);
  bool accepted = true;
  for (int i = 0; i < 64 && accepted; ++i) {
    accepted = link->writer.send(std::string(256 * 1024, 'x'), link);
  }
  EXPECT_FALSE(accepted);
  EXPECT_EQ(link->breaks, 1);
  EXPECT_FALSE(link->writer.send("after", link));  // dropped, no second report
  EXPECT_EQ(link->breaks, 1);
  EXPECT_EQ(link->writer.queuedBytes(), 0u);
  ASSERT_EQ(link->reasons.size(), 1u);
  EXPECT_NE(link->reasons[0].find("stopped reading"), std::string::npos) << link->reasons[0];
}

TEST(SocketWriter, APeerThatClosesBreaksItOnceOnTheReactor) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  ::close(link->peer);
  link->peer = -1;
  link->writer.send("x", link);
  ASSERT_TRUE(eventually([&] { return link->breaks > 0; }));
  EXPECT_FALSE(link->writer.send("after", link));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(link->breaks, 1);
}

TEST(SocketWriter, ASilencedWriterDropsFramesAndReportsNothing) {
  Reactor reactor(1, "test-io");
  auto link = std::make_shared<Link>(reactor);
  link->writer.silence();
  EXPECT_FALSE(link->writer.send("x", link));
  ::close(link->peer);
  link->peer = -1;
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(link->breaks, 0);
}

TEST(SocketWriter, AFlushKeepsItsOwnerAlive) {
  std::weak_ptr<Link> weak;
  int peer = -1;
  {
    Reactor reactor(1, "test-io");
    auto link = std::make_shared<Link>(reactor);
    weak = link;
    peer = ::dup(link->peer);
    // Held by the flush the send posted, until it has run: the test's reference goes first.
    onStrand(*link, [&] {
      link->writer.send("last words", link);
      link.reset();
      EXPECT_FALSE(weak.expired());
    });
    EXPECT_EQ(readAll(peer, 10), "last words");
    EXPECT_TRUE(eventually([&] { return weak.expired(); }));
  }
  ::close(peer);
}

}  // namespace
}  // namespace isolane

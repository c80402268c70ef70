// The pieces that carry a streamed body and the frames of the master <-> worker socket: BodyPipe
// (credit, abandonment, failure) and FrameOutbox (a sender never blocks, order is kept, a peer
// that stops reading is given up on).

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ipc/body_pipe.h"
#include "ipc/frame_codec.h"
#include "ipc/frame_outbox.h"
#include "read_all.h"

namespace isolane {
namespace {

using test::readAll;

TEST(BodyPipe, CreditComesBackAsTheConsumerAcknowledges) {
  std::size_t credited = 0;
  BodyPipe pipe([&](std::size_t n) { credited += n; });
  int ready = 0;
  pipe.setReady([&] { ++ready; });
  ASSERT_TRUE(pipe.push(std::string(1000, 'a')));
  ASSERT_TRUE(pipe.push(std::string(500, 'b')));
  EXPECT_EQ(ready, 1) << "one wake until the consumer takes";
  std::string piece;
  ASSERT_EQ(pipe.take(&piece), BodyPipe::Take::kPiece);
  EXPECT_EQ(piece, std::string(1000, 'a'));
  pipe.acknowledge(1000);
  EXPECT_EQ(credited, 1000u);
  ASSERT_EQ(pipe.take(&piece), BodyPipe::Take::kPiece);
  EXPECT_EQ(pipe.take(&piece), BodyPipe::Take::kEmpty);
  pipe.end();
  EXPECT_EQ(ready, 2);
  EXPECT_EQ(pipe.take(&piece), BodyPipe::Take::kEnd);
}

TEST(BodyPipe, AProducerPastItsWindowIsRefused) {
  BodyPipe pipe([](std::size_t) {});
  std::string piece(kStreamPieceBytes, 'x');
  std::size_t pushed = 0;
  while (pipe.push(piece)) pushed += piece.size();
  // One window, plus the one piece that may overshoot it.
  EXPECT_EQ(pushed, kStreamWindowBytes + kStreamPieceBytes);
  EXPECT_TRUE(pipe.producerBlocked());
  EXPECT_FALSE(pipe.push(std::string(kStreamPieceBytes + 1, 'y'))) << "pieces are at most 64 KiB";
  EXPECT_EQ(pipe.bufferedBytes(), pushed);
}

TEST(BodyPipe, AnAbandonedPipeDropsWhatItHoldsAndCreditsItBack) {
  std::size_t credited = 0;
  BodyPipe pipe([&](std::size_t n) { credited += n; });
  pipe.push(std::string(3000, 'a'));
  pipe.abandon();
  EXPECT_EQ(credited, 3000u);
  EXPECT_EQ(pipe.bufferedBytes(), 0u);
  EXPECT_TRUE(pipe.push(std::string(100, 'b')));  // dropped, and credited at once
  EXPECT_EQ(credited, 3100u);
}

TEST(BodyPipe, AFailureComesAfterWhatWasPushedBeforeIt) {
  BodyPipe pipe([](std::size_t) {});
  pipe.push("abc");
  pipe.fail("the worker died");
  std::string piece;
  EXPECT_EQ(pipe.take(&piece), BodyPipe::Take::kPiece);
  EXPECT_EQ(piece, "abc");
  EXPECT_EQ(pipe.take(&piece), BodyPipe::Take::kFailed);
  EXPECT_EQ(piece, "the worker died");
  EXPECT_FALSE(pipe.push("more"));
}

class Socketpair {
 public:
  Socketpair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~Socketpair() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  int fds[2] = {-1, -1};
};

TEST(FrameOutbox, ASenderNeverBlocksAndOrderIsKept) {
  Socketpair sp;
  FrameOutbox out(sp.fds[0], [](const std::string&) {});
  // Far more than a socket buffer holds, with nobody reading: every call returns at once.
  std::string expected;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) {
    std::string frame(64 * 1024, static_cast<char>('a' + i % 26));
    expected += frame;
    out.sendBytes(frame);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(readAll(sp.fds[1], expected.size()), expected);
}

// A frame whose trailer is written from where it is: the same bytes as the whole frame, padded,
// and in order with the frames around it, whether the socket took it at once, in part, or not at
// all (then the rest is copied: the caller's bytes may go away as soon as sendFrame returns).
TEST(FrameOutbox, AHeadAndTrailerSentApartArriveAsTheWholeFrameInOrder) {
  Socketpair sp;
  FrameOutbox out(sp.fds[0], [](const std::string&) {});
  std::string expected;
  for (int i = 0; i < 40; ++i) {
    std::string body(64 * 1024 + i, static_cast<char>('a' + i % 26));  // paddings of 0 to 7
    expected += encodeBodyChunk(i, body, kDefaultMaxFrameBytes).value();
    out.sendFrame(encodeBodyChunkHead(i, body.size(), kDefaultMaxFrameBytes).value(), body);
    body.assign(body.size(), '!');  // the caller's bytes are its own again
    std::string end = encodeEnd(i, kDefaultMaxFrameBytes).value();
    expected += end;
    out.sendBytes(end);
  }
  EXPECT_EQ(readAll(sp.fds[1], expected.size()), expected);
}

TEST(FrameOutbox, APeerThatClosesBreaksTheOutbox) {
  Socketpair sp;
  std::atomic<int> broken{0};
  FrameOutbox out(sp.fds[0], [&](const std::string&) { ++broken; });
  ::close(sp.fds[1]);
  sp.fds[1] = -1;
  out.sendBytes("x");
  for (int i = 0; i < 100 && broken == 0; ++i) {
    out.sendBytes(std::string(1 << 20, 'y'));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(broken, 1);
  out.sendBytes("after");  // dropped, no second report
  EXPECT_EQ(broken, 1);
}

// Whether the socket has bytes to read now.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// Held frames wait, unwritten, until released, and then leave in the order they were sent, small
// trailers copied behind their heads (the caller's bytes are its own again at once).
TEST(FrameOutbox, HeldFramesWaitForTheReleaseAndLeaveInOrder) {
  Socketpair sp;
  FrameOutbox out(sp.fds[0], [](const std::string&) {});
  out.hold();
  std::string expected = "first";
  out.sendBytes("first");
  std::string body(100, 'b');
  expected += encodeBodyChunk(1, body, kDefaultMaxFrameBytes).value();
  out.sendFrame(encodeBodyChunkHead(1, body.size(), kDefaultMaxFrameBytes).value(), body);
  body.assign(body.size(), '!');
  expected += "last";
  out.sendBytes("last");
  EXPECT_FALSE(readable(sp.fds[1]));
  out.flushHeldSince(std::chrono::steady_clock::now() - std::chrono::hours(1));
  EXPECT_FALSE(readable(sp.fds[1])) << "held for less than that";
  out.release();
  EXPECT_EQ(readAll(sp.fds[1], expected.size()), expected);
  out.sendBytes("after");  // released: written at once
  EXPECT_EQ(readAll(sp.fds[1], 5), "after");
}

// What is held leaves early: when asked (flushHeld, flushHeldSince), at its bounds, before a
// frame too large to hold, and before another thread's frame (whose own is never held).
TEST(FrameOutbox, HeldFramesLeaveBeforeOthersAndAtTheirBounds) {
  Socketpair sp;
  FrameOutbox out(sp.fds[0], [](const std::string&) {});
  out.hold();
  out.sendBytes("a");
  out.flushHeld();
  EXPECT_EQ(readAll(sp.fds[1], 1), "a");
  out.sendBytes("b");
  out.flushHeldSince(std::chrono::steady_clock::now());
  EXPECT_EQ(readAll(sp.fds[1], 1), "b");

  out.sendBytes("c");
  std::thread([&] { out.sendBytes("D"); }).join();
  EXPECT_EQ(readAll(sp.fds[1], 2), "cD");

  out.sendBytes("e");
  std::string large(FrameOutbox::kMaxHeldTrailer + 1, 'L');
  std::string frame = encodeBodyChunk(2, large, kDefaultMaxFrameBytes).value();
  out.sendFrame(encodeBodyChunkHead(2, large.size(), kDefaultMaxFrameBytes).value(), large);
  EXPECT_EQ(readAll(sp.fds[1], 1 + frame.size()), "e" + frame);

  std::string many;
  for (std::size_t i = 0; i < FrameOutbox::kMaxHeldFrames; ++i) {
    many += static_cast<char>('0' + i % 10);
    out.sendBytes(std::string(1, many.back()));
  }
  EXPECT_EQ(readAll(sp.fds[1], many.size()), many) << "the last one reached the bound";
  EXPECT_FALSE(readable(sp.fds[1]));
  out.sendBytes(std::string(FrameOutbox::kMaxHeldBytes, 'B'));
  EXPECT_EQ(readAll(sp.fds[1], FrameOutbox::kMaxHeldBytes).size(), FrameOutbox::kMaxHeldBytes);
  out.release();
}

// Held frames the socket cannot take at the release wait in the queue, in order, behind nothing:
// a peer that reads late still gets every byte.
TEST(FrameOutbox, HeldFramesTheSocketCannotTakeAreQueuedInOrder) {
  Socketpair sp;
  FrameOutbox out(sp.fds[0], [](const std::string&) {});
  out.hold();
  std::string expected;
  for (int i = 0; i < 40; ++i) {  // far more than the socket's buffer, held in bounded batches
    std::string frame(16 * 1024, static_cast<char>('a' + i % 26));
    expected += frame;
    out.sendBytes(frame);
  }
  out.release();
  EXPECT_EQ(readAll(sp.fds[1], expected.size()), expected);
}

TEST(Frames, AWholeResponseIsOneCompleteHeadWithItsBody) {
  AppResponse r;
  r.status = 201;
  r.headers = {{"content-type", "text/plain"}};
  r.body = "all of it";
  auto bytes = encodeWholeResponse(9, r, kDefaultMaxFrameBytes);
  ASSERT_TRUE(bytes) << bytes.error();
  FrameReader reader(kDefaultMaxFrameBytes);
  reader.append(bytes.value().data(), bytes.value().size());
  const wire::Frame* f = nullptr;
  std::string error;
  ASSERT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame);
  const wire::ResponseHead* head = f->message_as_ResponseHead();
  ASSERT_NE(head, nullptr);
  EXPECT_TRUE(head->complete());
  EXPECT_FALSE(head->streamed());
  EXPECT_EQ(head->status(), 201);
  EXPECT_EQ(reader.trailer(), "all of it");
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kNeedMore);

  r.streamed = true;  // a streamed body, or one over a chunk, is not whole
  EXPECT_FALSE(encodeWholeResponse(9, r, kDefaultMaxFrameBytes));
  r.streamed = false;
  r.body.assign(kBodyChunkBytes + 1, 'x');
  EXPECT_FALSE(encodeWholeResponse(9, r, kDefaultMaxFrameBytes));
}

TEST(Frames, CreditAndStreamedHeadRoundTrip) {
  AppResponse head;
  head.status = 200;
  head.streamed = true;
  auto bytes = encodeResponseHead(7, head, kDefaultMaxFrameBytes);
  ASSERT_TRUE(bytes);
  FrameReader reader(kDefaultMaxFrameBytes);
  reader.append(bytes.value().data(), bytes.value().size());
  auto credit = encodeCredit(7, 65536, kDefaultMaxFrameBytes);
  ASSERT_TRUE(credit);
  reader.append(credit.value().data(), credit.value().size());
  const wire::Frame* f = nullptr;
  std::string error;
  ASSERT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame);
  EXPECT_TRUE(f->message_as_ResponseHead()->streamed());
  ASSERT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame);
  EXPECT_EQ(f->message_as_Credit()->id(), 7u);
  EXPECT_EQ(f->message_as_Credit()->bytes(), 65536u);
}

}  // namespace
}  // namespace isolane

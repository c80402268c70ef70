// Stream blocks (ipc/stream_blocks.h): the memory a worker's streamed pieces cross in. The
// region's two sides in one process (the master's file and the worker's mapping of the same
// descriptor), the pieces lent from it and given back, what a worker may not do to it, and the
// pool reading fake workers that use it well and badly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <set>
#include <string>

#include "eventually.h"
#include "ipc/body_pipe.h"
#include "ipc/shared_memory.h"
#include "ipc/stream_blocks.h"
#include "obs/metrics.h"
#include "pool_helpers.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

struct Region {
  std::shared_ptr<StreamBlocksFile> master = StreamBlocksFile::create().value();
  std::unique_ptr<StreamBlocks> worker = std::move(StreamBlocks::map(dup(master->fd())).value());
};

TEST(StreamBlocks, APieceLentIsWhatTheWorkerWroteAndGoesBackWhenDestroyed) {
  Region r;
  std::uint32_t block = r.worker->claim().value();
  std::memcpy(r.worker->data(block), "hello blocks", 12);
  {
    BodyPiece piece = std::move(r.master->lend(block, 12).value());
    EXPECT_TRUE(piece.lent());
    EXPECT_EQ(piece.bytes(), "hello blocks");
    EXPECT_EQ(r.master->lentBlocks(), 1u);
    BodyPiece moved = std::move(piece);  // one lender of the block, whoever holds it
    EXPECT_EQ(moved.bytes(), "hello blocks");
    EXPECT_EQ(r.master->lentBlocks(), 1u);
  }
  EXPECT_EQ(r.master->lentBlocks(), 0u);
  // Free again: the worker gets it back among the blocks it can claim.
  std::set<std::uint32_t> claimed;
  while (auto b = r.worker->claim()) claimed.insert(*b);
  EXPECT_EQ(claimed.size(), kStreamBlockCount);
  EXPECT_EQ(claimed.count(block), 1u);
}

TEST(StreamBlocks, ABlockIsNotClaimedTwiceAndNoneIsLeftWhenAllAreOut) {
  Region r;
  std::set<std::uint32_t> claimed;
  for (std::uint32_t i = 0; i < kStreamBlockCount; ++i) {
    auto b = r.worker->claim();
    ASSERT_TRUE(b);
    EXPECT_TRUE(claimed.insert(*b).second) << "block " << *b << " claimed twice";
  }
  EXPECT_FALSE(r.worker->claim());  // the sink then sends the piece through the socket
  // The master writes one out and gives it back: exactly that one is free.
  { BodyPiece piece = std::move(r.master->lend(7, 1).value()); }
  EXPECT_EQ(r.worker->claim(), 7u);
  r.worker->unclaim(9);
  EXPECT_EQ(r.worker->claim(), 9u);
}

TEST(StreamBlocks, ABlockOrSizeOutOfRangeIsAnErrorAndNothingIsLent) {
  Region r;
  auto past = r.master->lend(kStreamBlockCount, 1);
  ASSERT_FALSE(past);
  std::string named = "stream block " + std::to_string(kStreamBlockCount) + " of " +
                      std::to_string(kStreamBlockCount);
  EXPECT_NE(past.error().find(named), std::string::npos) << past.error();
  EXPECT_FALSE(r.master->lend(0xffffffffu, 1));
  EXPECT_FALSE(r.master->lend(0, 0));
  EXPECT_FALSE(r.master->lend(0, kStreamBlockBytes + 1));
  EXPECT_EQ(r.master->lentBlocks(), 0u);
  // The last byte of the last block is the region's last.
  std::uint32_t last = kStreamBlockCount - 1;
  std::memset(r.worker->data(last), 'z', kStreamBlockBytes);
  BodyPiece whole = std::move(r.master->lend(last, kStreamBlockBytes).value());
  EXPECT_EQ(whole.size(), kStreamBlockBytes);
  EXPECT_EQ(whole.bytes().back(), 'z');
}

// A worker that shrank the region would make the master fault on its next read of a block.
TEST(StreamBlocks, TheWorkerCanNeitherShrinkNorGrowTheRegion) {
  Region r;
  int fd = dup(r.master->fd());
  EXPECT_NE(ftruncate(fd, 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(fd, static_cast<off_t>(kStreamBlocksRegionBytes) * 2), 0);
  EXPECT_EQ(errno, EPERM);
  close(fd);
}

// A hole punched in the memfd (which the seals allow) reads as zeros, and a page that cannot be
// read is copied as zeros by the kernel instead of faulting the caller.
TEST(StreamBlocks, PunchedOrUnreadableMemoryIsCopiedAsZeros) {
  Region r;
  std::uint32_t block = r.worker->claim().value();
  std::memset(r.worker->data(block), 'x', 8192);
  BodyPiece piece = std::move(r.master->lend(block, 8192).value());
  ASSERT_EQ(fallocate(r.master->fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(kStreamBlocksOffset + block * kStreamBlockBytes), 4096),
            0);
  std::string copy = sharedMemoryCopy(piece.bytes());
  EXPECT_EQ(copy, std::string(4096, '\0') + std::string(4096, 'x'));
  // Punched state words: the block is given back through the hole.
  ASSERT_EQ(fallocate(r.master->fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
  piece = BodyPiece();
  EXPECT_EQ(r.master->lentBlocks(), 0u);

  void* page = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  std::memset(page, 'y', 8192);
  ASSERT_EQ(munmap(static_cast<char*>(page) + 4096, 4096), 0);  // the second page is gone
  std::string unreadable = sharedMemoryCopy(std::string_view(static_cast<char*>(page), 8192));
  EXPECT_EQ(unreadable, std::string(4096, 'y') + std::string(4096, '\0'));
  munmap(page, 4096);
}

TEST(StreamBlocks, ADescriptorOfTheWrongSizeIsRefused) {
  int fd = memfd_create("not-blocks", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  auto mapped = StreamBlocks::map(fd);
  ASSERT_FALSE(mapped);
  EXPECT_NE(mapped.error().find("4096 bytes"), std::string::npos) << mapped.error();
}

// The master keeps the memory while a piece of it is on its way, even once its worker is gone.
TEST(StreamBlocks, APieceOutlivesTheRegionsOtherHolders) {
  std::unique_ptr<StreamBlocks> worker;
  BodyPiece piece;
  {
    Region r;
    std::uint32_t block = r.worker->claim().value();
    std::memcpy(r.worker->data(block), "still here", 10);
    piece = std::move(r.master->lend(block, 10).value());
  }
  EXPECT_EQ(piece.bytes(), "still here");
}

TEST(StreamBlocks, APipeGivesBackTheBlocksItDropsOrCopiesOut) {
  Region r;
  std::size_t credited = 0;
  BodyPipe pipe([&](std::size_t n) { credited += n; });
  for (std::uint32_t i = 0; i < 3; ++i) {
    std::uint32_t b = r.worker->claim().value();
    std::memcpy(r.worker->data(b), "abc", 3);
    ASSERT_TRUE(pipe.push(std::move(r.master->lend(b, 3).value())));
  }
  EXPECT_EQ(r.master->lentBlocks(), 3u);
  std::string copied;  // a consumer off the hot path copies it out
  ASSERT_EQ(pipe.take(&copied), BodyPipe::Take::kPiece);
  EXPECT_EQ(copied, "abc");
  EXPECT_EQ(r.master->lentBlocks(), 2u);
  BodyPiece held;  // the front holds it until written
  ASSERT_EQ(pipe.take(&held), BodyPipe::Take::kPiece);
  EXPECT_EQ(r.master->lentBlocks(), 2u);
  pipe.abandon();  // the client went: the one still queued goes back
  EXPECT_EQ(r.master->lentBlocks(), 1u);
  held = BodyPiece();
  EXPECT_EQ(r.master->lentBlocks(), 0u);
  // Later pieces are dropped, and their blocks given back, at once.
  std::uint32_t b = r.worker->claim().value();
  EXPECT_TRUE(pipe.push(std::move(r.master->lend(b, 1).value())));
  EXPECT_EQ(r.master->lentBlocks(), 0u);
}

// Request blocks: pieces of request bodies, written by the master, read once by the worker.
std::string pieceOf(char letter, std::size_t size = kSharedRequestPieceMinBytes) {
  return std::string(size, letter);
}

TEST(RequestBlocks, APieceTheMasterPutsIsWhatTheWorkerReadsAndItsBlockServesAgain) {
  Region r;
  // More pieces than blocks, each read before the next: the block just read is written again
  // (its pages stay warm, the rest of the region is never made resident), none runs out.
  for (std::uint32_t i = 0; i < kRequestBlockCount * 2; ++i) {
    std::string piece = pieceOf(static_cast<char>('a' + i % 26), kStreamBlockBytes - i);
    std::optional<std::uint32_t> block = r.master->putRequestPiece(piece);
    ASSERT_TRUE(block) << "piece " << i;
    EXPECT_EQ(*block, 0u) << "piece " << i;
    Result<std::string> read = r.worker->readRequestPiece(*block, piece.size());
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(read.value(), piece) << "piece " << i;
  }
  EXPECT_EQ(r.master->lentBlocks(), 0u);  // the stream blocks are another part of the region
}

TEST(RequestBlocks, WhileTheWorkerReadsNoneEveryBlockGoesOutOnceAndThenNoneIsLeft) {
  Region r;
  std::set<std::uint32_t> out;
  for (std::uint32_t i = 0; i < kRequestBlockCount; ++i) {
    std::optional<std::uint32_t> block = r.master->putRequestPiece(pieceOf('x'));
    ASSERT_TRUE(block);
    EXPECT_TRUE(out.insert(*block).second) << "block " << *block << " put twice";
  }
  EXPECT_EQ(r.master->requestBlocksOut(), kRequestBlockCount);
  EXPECT_FALSE(r.master->putRequestPiece(pieceOf('y')));  // the piece goes through the socket
  // The worker reads one: exactly that one is free again.
  ASSERT_TRUE(r.worker->readRequestPiece(41, kSharedRequestPieceMinBytes));
  EXPECT_EQ(r.master->putRequestPiece(pieceOf('z')), 41u);
  EXPECT_EQ(r.worker->readRequestPiece(41, kSharedRequestPieceMinBytes).value(), pieceOf('z'));
}

TEST(RequestBlocks, ABlockTakenBackIsFreeAtOnceAndItsWordStillMatches) {
  Region r;
  std::uint32_t block = r.master->putRequestPiece(pieceOf('a')).value();
  r.master->takeBackRequestPiece(block);  // its frame could not be sent
  EXPECT_EQ(r.master->requestBlocksOut(), 0u);
  EXPECT_EQ(r.master->putRequestPiece(pieceOf('b')), block);
  // The worker reads it once, and the master sees it free again.
  EXPECT_EQ(r.worker->readRequestPiece(block, kSharedRequestPieceMinBytes).value(), pieceOf('b'));
  EXPECT_EQ(r.master->putRequestPiece(pieceOf('c')), block);
  EXPECT_EQ(r.master->requestBlocksOut(), 1u);
  r.master->takeBackRequestPiece(block + 1);  // not out: nothing happens
  r.master->takeBackRequestPiece(kRequestBlockCount);
  EXPECT_EQ(r.master->requestBlocksOut(), 1u);
}

TEST(RequestBlocks, APieceTooSmallOrTooLargeIsNotPutAndABlockOutOfRangeIsNotRead) {
  Region r;
  EXPECT_FALSE(r.master->putRequestPiece(""));
  EXPECT_FALSE(r.master->putRequestPiece(pieceOf('s', kSharedRequestPieceMinBytes - 1)));
  EXPECT_FALSE(r.master->putRequestPiece(pieceOf('l', kStreamBlockBytes + 1)));
  EXPECT_EQ(r.master->requestBlocksOut(), 0u);
  EXPECT_FALSE(r.worker->readRequestPiece(kRequestBlockCount, 1));
  EXPECT_FALSE(r.worker->readRequestPiece(0, 0));
  EXPECT_FALSE(r.worker->readRequestPiece(0, kStreamBlockBytes + 1));
}

// The words are the worker's to write, and nothing the master decides rests on them but when a
// block it put is free again: a worker that scribbles over them, or over the blocks, gets back
// pieces it spoiled itself, and the master never puts one block twice at once by its own count.
TEST(RequestBlocks, AWorkerThatScribblesOverTheWordsAndBlocksSpoilsOnlyItsOwnPieces) {
  Region r;
  auto* words = reinterpret_cast<std::uint32_t*>(
      const_cast<char*>(r.worker->data(0)) - kStreamBlocksOffset + kRequestWordsOffset);
  for (std::uint32_t i = 0; i < kRequestBlockCount; ++i) words[i] = 0xdeadbeef;
  std::set<std::uint32_t> out;
  for (std::uint32_t i = 0; i < kRequestBlockCount; ++i) {
    std::optional<std::uint32_t> block = r.master->putRequestPiece(pieceOf('w'));
    ASSERT_TRUE(block);
    EXPECT_TRUE(out.insert(*block).second);
  }
  // Words that claim every block was read: the master takes them back and writes them again.
  for (std::uint32_t i = 0; i < kRequestBlockCount; ++i) words[i] = 1;
  std::optional<std::uint32_t> again = r.master->putRequestPiece(pieceOf('v'));
  ASSERT_TRUE(again);
  std::memset(r.worker->data(0) - kStreamBlocksOffset + kRequestBlocksOffset +
                  std::size_t{*again} * kStreamBlockBytes,
              'q', 4);
  std::string read = r.worker->readRequestPiece(*again, kSharedRequestPieceMinBytes).value();
  EXPECT_EQ(read.substr(0, 5), "qqqqv");
}

// The pool and fake workers (tests/fake_worker.cc), through the real spawn: the region is made
// per process and passed as descriptor 5.
class StreamBlocksPool : public ::testing::Test {
 protected:
  MetricsRegistry metrics_;
};

// Reads a streamed answer to its end.
std::string readStream(BodyPipe& pipe) {
  std::string body;
  bool done = false;
  EXPECT_TRUE(test::eventually(
      [&] {
        std::string piece;
        for (;;) {
          BodyPipe::Take t = pipe.take(&piece);
          if (t == BodyPipe::Take::kPiece) {
            body += piece;
            pipe.acknowledge(piece.size());
            continue;
          }
          done = t == BodyPipe::Take::kEnd;
          EXPECT_NE(t, BodyPipe::Take::kFailed) << piece;
          return done || t == BodyPipe::Take::kFailed;
        }
      },
      10s));
  return body;
}

TEST_F(StreamBlocksPool, AStreamedBodyCrossesInSharedBlocks) {
  SubprocessBackend pool(test::poolOptions(test::fakeWorker("shared-stream"), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  for (int i = 0; i < 3; ++i) {
    AppResponse r = test::call(pool, "x", "/").get();
    ASSERT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
    ASSERT_TRUE(r.stream);
    EXPECT_EQ(readStream(*r.stream), "onetwothree");
  }
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_stream_pieces_total{path=\"shared\"} 9"), std::string::npos)
      << text;
  EXPECT_NE(text.find("isolane_stream_pieces_total{path=\"socket\"} 0"), std::string::npos)
      << text;
}

TEST_F(StreamBlocksPool, AWorkerCannotResizeItsBlocksAndTheMasterReadsThemOn) {
  SubprocessBackend pool(test::poolOptions(test::fakeWorker("shared-resize"), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  AppResponse r = test::call(pool, "x", "/").get();
  ASSERT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
  ASSERT_TRUE(r.stream);
  EXPECT_EQ(readStream(*r.stream), "shrink:EPERM grow:EPERM");
}

// The seals cannot stop a hole punched in the memfd: the master reads zeros there, gives the
// block back through the hole in the state words, and serves on.
TEST_F(StreamBlocksPool, AWorkerThatPunchesOutItsBlocksGetsZerosAndTheMasterGoesOn) {
  SubprocessBackend pool(test::poolOptions(test::fakeWorker("shared-punch"), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t pid = test::pidOf(pool, 0);
  for (int i = 0; i < 2; ++i) {
    AppResponse r = test::call(pool, "x", "/").get();
    ASSERT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
    ASSERT_TRUE(r.stream);
    EXPECT_EQ(readStream(*r.stream), std::string(7, '\0'));
  }
  EXPECT_EQ(test::pidOf(pool, 0), pid);
}

// A real worker streams an app's body through its blocks.
TEST_F(StreamBlocksPool, ARealWorkerStreamsThroughItsBlocks) {
  SubprocessBackend pool(test::poolOptions(test::realWorker(), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"s", ISOLANE_TEST_FIXTURES "/apps/stream.js", {}}}));
  AppResponse r = test::call(pool, "s", "/big?n=3").get();
  ASSERT_EQ(r.failure, FailureKind::kNone) << r.failureDetail;
  ASSERT_TRUE(r.stream);
  std::string body = readStream(*r.stream);
  ASSERT_EQ(body.size(), 3u * 100 * 1024);
  EXPECT_EQ(body.front(), 'a');
  EXPECT_EQ(body.back(), 'c');
  std::string text = metrics_.render();
  EXPECT_EQ(text.find("isolane_stream_pieces_total{path=\"shared\"} 0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("isolane_stream_pieces_total{path=\"socket\"} 0"), std::string::npos)
      << text;
}

// The checksum tests/fixtures/apps/body_reader.js answers with.
std::uint32_t checksum(const std::string& bytes) {
  std::uint32_t sum = 0;
  for (unsigned char c : bytes) sum = sum * 31 + c;
  return sum;
}

// A real worker reads an upload whose large pieces crossed in its request blocks and whose small
// ones crossed through its socket, in the order they were sent, both ways an app reads a body.
TEST_F(StreamBlocksPool, ARealWorkerReadsAnUploadThatCrossedInItsRequestBlocks) {
  SubprocessBackend pool(test::poolOptions(test::realWorker(), 1), metrics_);
  ASSERT_TRUE(pool.start({AppSpec{"reader", ISOLANE_TEST_FIXTURES "/apps/body_reader.js", {}}}));
  const std::size_t sizes[] = {65536, 100, 65536, 20000, 5, 16384, 65536, 16383, 40000};
  std::string body;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    for (std::size_t j = 0; j < sizes[i]; ++j) body += static_cast<char>(i * 13 + j * 7 + j / 251);
  }
  const std::string sum = std::to_string(checksum(body));
  for (const std::string how : {"arrayBuffer", "stream"}) {
    auto pipe = std::make_shared<BodyPipe>([](std::size_t) {}, /*enforceWindow=*/false);
    AppRequest request{"reader", "t", "POST", "http://test/?how=" + how,
                       {{"Content-Length", std::to_string(body.size())}}, ""};
    request.bodyStream = pipe;
    auto promise = std::make_shared<std::promise<AppResponse>>();
    auto answer = promise->get_future();
    pool.submit(std::move(request), [promise](AppResponse r) { promise->set_value(std::move(r)); });
    std::size_t at = 0;
    for (std::size_t size : sizes) {
      ASSERT_TRUE(pipe->push(body.substr(at, size)));
      at += size;
    }
    pipe->end();
    ASSERT_EQ(answer.wait_for(20s), std::future_status::ready) << how;
    AppResponse r = answer.get();
    ASSERT_EQ(r.failure, FailureKind::kNone) << how << ": " << r.failureDetail;
    EXPECT_EQ(r.body.substr(0, r.body.find(' ')), std::to_string(body.size())) << r.body;
    EXPECT_NE(r.body.find("sum " + sum), std::string::npos) << how << ": " << r.body;
  }
  // Six pieces of 16 KiB or more each time; the three smaller ones went through the socket.
  std::string text = metrics_.render();
  EXPECT_NE(text.find("isolane_request_body_pieces_total{path=\"shared\"} 12"), std::string::npos)
      << text;
  EXPECT_NE(text.find("isolane_request_body_pieces_total{path=\"socket\"} 6"), std::string::npos)
      << text;
}

void expectViolation(MetricsRegistry& metrics, const std::string& mode, const std::string& what) {
  SubprocessBackend pool(test::poolOptions(test::fakeWorker(mode), 1), metrics);
  ASSERT_TRUE(pool.start({AppSpec{"x", "/x.js", {}}}));
  pid_t first = test::pidOf(pool, 0);
  AppResponse r = test::call(pool, "x", "/").get();
  EXPECT_EQ(r.failure, FailureKind::kWorkerCrashed) << mode;
  EXPECT_NE(r.failureDetail.find(what), std::string::npos) << mode << ": " << r.failureDetail;
  EXPECT_TRUE(test::eventually(
      [&] { return test::pidOf(pool, 0) != 0 && test::pidOf(pool, 0) != first; }))
      << "the slot is refilled after " << mode;
}

TEST_F(StreamBlocksPool, ABlockPastTheLastEndsTheWorker) {
  expectViolation(metrics_, "shared-out-of-range",
                  "stream block " + std::to_string(kStreamBlockCount) + " of ");
}

TEST_F(StreamBlocksPool, ASharedPieceWithBytesBehindItEndsTheWorker) {
  expectViolation(metrics_, "shared-with-trailer", "a shared body chunk with a trailer");
}

// The master's own code never reads a block: only a streamed body, written to the client by the
// kernel, crosses in them.
TEST_F(StreamBlocksPool, ASharedPieceInAnAnswerThatIsNotStreamedEndsTheWorker) {
  expectViolation(metrics_, "shared-whole", "a shared body chunk for an answer that is not streamed");
}

}  // namespace
}  // namespace isolane

#pragma once
// StreamBlocks: memory a worker process shares with the master, in blocks of one streamed piece
// (64 KiB), through which the pieces of streamed response bodies cross instead of through the
// worker's socket. The worker copies a piece into a free block and sends a small frame that names
// the block (a BodyChunk with `block`); the master writes the block's bytes to the client from
// where they are and then gives the block back. Each byte is copied once in user space (V8's
// buffer into the block) and once by the kernel (into the client's socket), instead of through a
// socket's two kernel copies and a copy in the master: a 1 MiB stream took as much CPU in the
// worker's `sendmsg` as in the master's send to the client.
//
// The region: a state word per block (0: free, the worker may claim it; 1: claimed by the worker
// and, once named in a frame, lent to the master, which sets it to 0 when it is done), then the
// blocks. The master makes one per spawn, a memfd sealed so that the worker can neither shrink nor
// grow it (a shrunk mapping would fault the master), and maps it read-only; the worker maps it
// from the descriptor it inherits.
//
// Nothing in it is trusted by the master: it reads no state word, checks every block number and
// size a frame names, and never reads outside its own mapping. A worker that reuses a block it
// lent, or rewrites one while the master sends it, changes only the bytes of its own answers,
// which it writes anyway. The master touches the memory only through the kernel: the client's
// socket is written from its mapping, a copy is made with a system call (sharedMemoryCopy) and a
// block is given back with pwrite. A worker may punch a hole in the memfd (the seals cannot stop
// that): where memory is committed strictly, faulting such a page in again can fail, and a failed
// fault in the master's own code would be a SIGBUS; in a system call it is an error. When every
// block is out, the worker sends pieces through the socket.
//
// The same region carries the other direction too: the pieces of streamed request bodies (an
// upload) cross from the master to the worker in request blocks, after the stream blocks. The
// master picks a free one from its own list, writes the piece into it with pwrite (a kernel copy,
// as a socket's send would make, without the socket's buffers) and sends a RequestBody that names
// it; the worker copies the piece out and bumps the block's word (a count of the pieces it read
// from it), which is how the master learns (reading the words with pread before each write) that
// the block is free again. The master's list, not the words,
// says what it lent: a worker that bumps a word early, or never, spoils only its own requests'
// bodies, or sends its pieces through the socket once it holds every block.
//
// Thread rule: StreamBlocksFile's members are safe from any thread (giveBack is one atomic
// store, the request blocks' list has a lock of its own); StreamBlocks::claim() and
// readRequestPiece() are safe from any thread of the worker (executor threads share them).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/body_piece.h"
#include "util/result.h"

namespace isolane {

// 32 MiB of address space per worker, resident only as far as blocks are used at once: about a
// hundred streams' credit windows (256 KiB each, which the master would otherwise hold on its own
// heap) before pieces fall back to the socket.
inline constexpr std::uint32_t kStreamBlockCount = 512;
inline constexpr std::size_t kStreamBlockBytes = std::size_t{64} << 10;  // kStreamPieceBytes
// The state words, then the blocks from the next page on.
inline constexpr std::size_t kStreamBlocksOffset = 4096;
inline constexpr std::size_t kStreamBlocksRegionBytes =
    kStreamBlocksOffset + kStreamBlockCount * kStreamBlockBytes;
static_assert(kStreamBlockCount * sizeof(std::atomic<std::uint32_t>) <= kStreamBlocksOffset);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// Request blocks: a window (256 KiB and a piece) for each of 25 uploads at once before pieces go
// through the socket. Their words (a count of the pieces the worker has read from each block)
// fill the page after the stream blocks, and the blocks the pages after that.
inline constexpr std::uint32_t kRequestBlockCount = 128;
inline constexpr std::size_t kRequestWordsOffset = kStreamBlocksRegionBytes;
inline constexpr std::size_t kRequestBlocksOffset = kRequestWordsOffset + 4096;
// A smaller piece goes as its frame's trailer: one system call either way, and no block held.
inline constexpr std::size_t kSharedRequestPieceMinBytes = std::size_t{16} << 10;
// The whole region: what the master makes and the worker maps.
inline constexpr std::size_t kSharedBlocksBytes =
    kRequestBlocksOffset + kRequestBlockCount * kStreamBlockBytes;
static_assert(kRequestBlockCount * sizeof(std::atomic<std::uint32_t>) <= 4096);

// The master's side: the region of one worker process.
class StreamBlocksFile final : public BlockLender,
                               public std::enable_shared_from_this<StreamBlocksFile> {
 public:
  static Result<std::shared_ptr<StreamBlocksFile>> create();
  ~StreamBlocksFile() override;
  StreamBlocksFile(const StreamBlocksFile&) = delete;
  StreamBlocksFile& operator=(const StreamBlocksFile&) = delete;

  // The descriptor to hand to the child. The master keeps it open (close-on-exec): blocks are
  // given back through it.
  int fd() const { return fd_; }

  // The piece a worker's frame names: `size` bytes at the start of `block`, lent until the piece
  // is destroyed. An error for a block or size out of range (nothing is lent then).
  Result<BodyPiece> lend(std::uint32_t block, std::size_t size);
  // The block is free again for the worker.
  void giveBack(std::uint32_t block) override;
  // Blocks lent and not given back yet (for tests and the status of a worker).
  std::size_t lentBlocks() const { return lent_.load(std::memory_order_relaxed); }

  // Writes a piece of a request body (kSharedRequestPieceMinBytes to kStreamBlockBytes bytes)
  // into a free request block, now the worker's until it has read it; none for a piece of
  // another size, when every block is out, or when the write failed: the piece then goes through
  // the socket.
  std::optional<std::uint32_t> putRequestPiece(std::string_view bytes);
  // A block putRequestPiece gave whose frame could not be sent after all: free again (the worker
  // was never told of it).
  void takeBackRequestPiece(std::uint32_t block);
  // Request blocks written and not read by the worker yet, as far as the master last looked.
  std::size_t requestBlocksOut() const;

 private:
  StreamBlocksFile(int fd, const char* base);
  // Reads the worker's words: blocks it has read since they were written are free again.
  void collectReadRequestBlocksLocked();

  const int fd_;
  const char* const base_;
  std::atomic<std::size_t> lent_{0};

  mutable std::mutex requestMu_;
  std::vector<std::uint32_t> freeRequestBlocks_;  // guarded by requestMu_
  struct RequestBlock {
    bool out = false;        // written, and the worker had not read it when last looked
    std::uint32_t puts = 0;  // pieces written into it: its word once the worker has read them all
  };
  std::vector<RequestBlock> requestBlocks_;  // guarded by requestMu_
};

// The worker's side.
class StreamBlocks {
 public:
  // Maps the region the master passed on `fd` (then closes it). Error when `fd` is not a region
  // of the right size.
  static Result<std::unique_ptr<StreamBlocks>> map(int fd);
  ~StreamBlocks();
  StreamBlocks(const StreamBlocks&) = delete;
  StreamBlocks& operator=(const StreamBlocks&) = delete;

  // A free block, now the caller's until the master gives it back; none when every block is out.
  std::optional<std::uint32_t> claim();
  // Its memory: kStreamBlockBytes, the caller's until it names the block in a frame.
  char* data(std::uint32_t block) const;
  // A claimed block that was not sent after all.
  void unclaim(std::uint32_t block);

  // The piece of a request body the master wrote into request block `block` (`size` bytes),
  // copied out; the block is the master's again. An error for a block or size out of range.
  Result<std::string> readRequestPiece(std::uint32_t block, std::size_t size);

 private:
  explicit StreamBlocks(char* base) : base_(base) {}
  std::atomic<std::uint32_t>* state(std::uint32_t block) const;

  char* const base_;
};

}  // namespace isolane

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
// Thread rule: StreamBlocksFile's members are safe from any thread (giveBack is one atomic
// store); StreamBlocks::claim() is safe from any thread of the worker (executor threads share it).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

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

 private:
  StreamBlocksFile(int fd, const char* base) : fd_(fd), base_(base) {}

  const int fd_;
  const char* const base_;
  std::atomic<std::size_t> lent_{0};
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

 private:
  explicit StreamBlocks(char* base) : base_(base) {}
  std::atomic<std::uint32_t>* state(std::uint32_t block) const;

  char* const base_;
};

}  // namespace isolane

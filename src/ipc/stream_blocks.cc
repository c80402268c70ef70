#include "ipc/stream_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "ipc/shared_memory.h"

namespace isolane {

Result<std::shared_ptr<StreamBlocksFile>> StreamBlocksFile::create() {
  Result<int> fd = makeSealedMemory("isolane-blocks", kSharedBlocksBytes);
  if (!fd) return Error{fd.error()};
  // Zeroed by the kernel: every block starts free. Pages are made as the worker first writes
  // them: a worker that streams little costs little. Read-only here, and only the stream blocks:
  // the master's own code never touches the memory (see the header); it writes request blocks
  // and reads their words with system calls.
  Result<void*> at = mapSharedMemory(fd.value(), kStreamBlocksRegionBytes, PROT_READ);
  if (!at) {
    close(fd.value());
    return Error{"mapping the stream blocks: " + at.error()};
  }
  return std::shared_ptr<StreamBlocksFile>(
      new StreamBlocksFile(fd.value(), static_cast<const char*>(at.value())));
}

StreamBlocksFile::StreamBlocksFile(int fd, const char* base)
    : fd_(fd), base_(base), requestBlocks_(kRequestBlockCount) {
  // Taken from the back: block 0 first, so that a worker with one upload at a time keeps using
  // the same few pages.
  for (std::uint32_t block = kRequestBlockCount; block > 0; --block) {
    freeRequestBlocks_.push_back(block - 1);
  }
}

StreamBlocksFile::~StreamBlocksFile() {
  close(fd_);
  munmap(const_cast<char*>(base_), kStreamBlocksRegionBytes);
}

Result<BodyPiece> StreamBlocksFile::lend(std::uint32_t block, std::size_t size) {
  if (block >= kStreamBlockCount) {
    return Error{"stream block " + std::to_string(block) + " of " +
                 std::to_string(kStreamBlockCount)};
  }
  if (size == 0 || size > kStreamBlockBytes) {
    return Error{"a stream block of " + std::to_string(size) + " bytes"};
  }
  lent_.fetch_add(1, std::memory_order_relaxed);
  const char* bytes = base_ + kStreamBlocksOffset + std::size_t{block} * kStreamBlockBytes;
  return BodyPiece(shared_from_this(), block, std::string_view(bytes, size));
}

void StreamBlocksFile::giveBack(std::uint32_t block) {
  lent_.fetch_sub(1, std::memory_order_relaxed);
  // A system call, not a store: it fails instead of faulting if the worker punched the page out
  // (then the block stays claimed, which costs only that worker). The client's send that read
  // the block returned before this.
  const std::uint32_t free = 0;
  ssize_t ignored = pwrite(fd_, &free, sizeof free,
                           static_cast<off_t>(block * sizeof(std::atomic<std::uint32_t>)));
  (void)ignored;
}

std::optional<std::uint32_t> StreamBlocksFile::putRequestPiece(std::string_view bytes) {
  if (bytes.size() < kSharedRequestPieceMinBytes || bytes.size() > kStreamBlockBytes) {
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(requestMu_);
  // Every time (a read of 512 bytes beside a write of up to 64 KiB): a block the worker has just
  // read goes on top of the list and is written again next, so the pages in use stay few and warm
  // instead of every block being made resident before the first is reused.
  collectReadRequestBlocksLocked();
  if (freeRequestBlocks_.empty()) return std::nullopt;
  const std::uint32_t block = freeRequestBlocks_.back();
  const off_t at = static_cast<off_t>(kRequestBlocksOffset + block * kStreamBlockBytes);
  std::size_t done = 0;
  while (done < bytes.size()) {
    // Fails (ENOSPC, ENOMEM) rather than faulting where the worker punched a page out and it
    // cannot be made again; the block stays free and the piece goes through the socket.
    ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done,
                       at + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  freeRequestBlocks_.pop_back();
  RequestBlock& out = requestBlocks_[block];
  out.out = true;
  ++out.puts;
  return block;
}

void StreamBlocksFile::collectReadRequestBlocksLocked() {
  std::uint32_t words[kRequestBlockCount];
  if (pread(fd_, words, sizeof words, static_cast<off_t>(kRequestWordsOffset)) !=
      static_cast<ssize_t>(sizeof words)) {
    return;
  }
  for (std::uint32_t block = 0; block < kRequestBlockCount; ++block) {
    RequestBlock& put = requestBlocks_[block];
    if (put.out && words[block] == put.puts) {
      put.out = false;
      freeRequestBlocks_.push_back(block);
    }
  }
}

void StreamBlocksFile::takeBackRequestPiece(std::uint32_t block) {
  std::lock_guard<std::mutex> lock(requestMu_);
  if (block >= kRequestBlockCount || !requestBlocks_[block].out) return;
  RequestBlock& out = requestBlocks_[block];
  out.out = false;
  --out.puts;
  freeRequestBlocks_.push_back(block);
}

std::size_t StreamBlocksFile::requestBlocksOut() const {
  std::lock_guard<std::mutex> lock(requestMu_);
  return kRequestBlockCount - freeRequestBlocks_.size();
}

Result<std::unique_ptr<StreamBlocks>> StreamBlocks::map(int fd) {
  Result<void*> at = mapInheritedMemory(fd, kSharedBlocksBytes, "stream blocks");
  if (!at) return Error{at.error()};
  return std::unique_ptr<StreamBlocks>(new StreamBlocks(static_cast<char*>(at.value())));
}

StreamBlocks::~StreamBlocks() { munmap(base_, kSharedBlocksBytes); }

std::atomic<std::uint32_t>* StreamBlocks::state(std::uint32_t block) const {
  return reinterpret_cast<std::atomic<std::uint32_t>*>(base_) + block;
}

std::optional<std::uint32_t> StreamBlocks::claim() {
  // The lowest free block: the blocks in use stay few and warm, and a worker that never has many
  // pieces out at once never touches (makes resident) the rest of the region.
  for (std::uint32_t block = 0; block < kStreamBlockCount; ++block) {
    std::atomic<std::uint32_t>& s = *state(block);
    std::uint32_t free = 0;
    // Acquire: the master's reads of the block (its last write to a client) are done.
    if (s.load(std::memory_order_relaxed) == 0 &&
        s.compare_exchange_strong(free, 1, std::memory_order_acquire)) {
      return block;
    }
  }
  return std::nullopt;
}

char* StreamBlocks::data(std::uint32_t block) const {
  return base_ + kStreamBlocksOffset + std::size_t{block} * kStreamBlockBytes;
}

void StreamBlocks::unclaim(std::uint32_t block) {
  state(block)->store(0, std::memory_order_release);
}

Result<std::string> StreamBlocks::readRequestPiece(std::uint32_t block, std::size_t size) {
  if (block >= kRequestBlockCount || size == 0 || size > kStreamBlockBytes) {
    return Error{"request block " + std::to_string(block) + " with " + std::to_string(size) +
                 " bytes"};
  }
  const char* bytes = base_ + kRequestBlocksOffset + std::size_t{block} * kStreamBlockBytes;
  std::string piece(bytes, size);
  // Release: the copy is made before the master may write the block again.
  reinterpret_cast<std::atomic<std::uint32_t>*>(base_ + kRequestWordsOffset)[block].fetch_add(
      1, std::memory_order_release);
  return piece;
}

}  // namespace isolane

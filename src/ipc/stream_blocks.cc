#include "ipc/stream_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "ipc/shared_memory.h"

namespace isolane {

Result<std::shared_ptr<StreamBlocksFile>> StreamBlocksFile::create() {
  Result<int> fd = makeSealedMemory("isolane-blocks", kStreamBlocksRegionBytes);
  if (!fd) return Error{fd.error()};
  // Zeroed by the kernel: every block starts free. Pages are made as the worker first writes
  // them: a worker that streams little costs little. Read-only here: the master's own code never
  // touches the memory (see the header).
  Result<void*> at = mapSharedMemory(fd.value(), kStreamBlocksRegionBytes, PROT_READ);
  if (!at) {
    close(fd.value());
    return Error{"mapping the stream blocks: " + at.error()};
  }
  return std::shared_ptr<StreamBlocksFile>(
      new StreamBlocksFile(fd.value(), static_cast<const char*>(at.value())));
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

Result<std::unique_ptr<StreamBlocks>> StreamBlocks::map(int fd) {
  Result<void*> at = mapInheritedMemory(fd, kStreamBlocksRegionBytes, "stream blocks");
  if (!at) return Error{at.error()};
  return std::unique_ptr<StreamBlocks>(new StreamBlocks(static_cast<char*>(at.value())));
}

StreamBlocks::~StreamBlocks() { munmap(base_, kStreamBlocksRegionBytes); }

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

}  // namespace isolane

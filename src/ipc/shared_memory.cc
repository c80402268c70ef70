#include "ipc/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace isolane {

namespace {

std::string why(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<int> makeSealedMemory(const char* name, std::size_t bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Error{why("memfd_create")};
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::string e = why("ftruncate");
    close(fd);
    return Error{e};
  }
  // Fixed size from here on: the worker can write the memory, never resize it under our mapping.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    std::string e = why(std::string("sealing ") + name);
    close(fd);
    return Error{e};
  }
  return fd;
}

Result<void*> mapSharedMemory(int fd, std::size_t bytes, int prot) {
  void* at = mmap(nullptr, bytes, prot, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) return Error{why("mmap")};
  return at;
}

Result<void*> mapInheritedMemory(int fd, std::size_t bytes, const char* what) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    std::string e = why(std::string("the ") + what + " descriptor");
    close(fd);
    return Error{e};
  }
  if (static_cast<std::size_t>(st.st_size) != bytes) {
    close(fd);
    return Error{std::string("the ") + what + " descriptor has " + std::to_string(st.st_size) +
                 " bytes, not " + std::to_string(bytes)};
  }
  Result<void*> at = mapSharedMemory(fd, bytes, PROT_READ | PROT_WRITE);
  int saved = errno;
  close(fd);
  if (!at) {
    errno = saved;
    return Error{std::string("mapping the ") + what + ": " + at.error()};
  }
  return at;
}

std::string sharedMemoryCopy(std::string_view bytes) {
  std::string copy(bytes.size(), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    iovec to{copy.data() + done, copy.size() - done};
    iovec from{const_cast<char*>(bytes.data()) + done, bytes.size() - done};
    ssize_t n = process_vm_readv(getpid(), &to, 1, &from, 1, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // A page that cannot be read: zeros for it, and on with the next page.
    std::size_t page = 4096 - (reinterpret_cast<std::uintptr_t>(bytes.data() + done) % 4096);
    done += std::min(page, bytes.size() - done);
  }
  return copy;
}

}  // namespace isolane

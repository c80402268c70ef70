#include "ipc/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  if (fstat(fd, &st) != 0) return Error{why(std::string("the ") + what + " descriptor")};
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

}  // namespace isolane

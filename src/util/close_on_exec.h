#pragma once
// Close-on-exec for descriptors opened by libraries that do not ask for it (Asio opens and
// accepts sockets without SOCK_CLOEXEC). A worker is spawned with only its own descriptors (the
// spawn closes every other: pool/worker_process.cc); this keeps any other program the process
// may ever start from inheriting a listener or a client's connection as well.
//
// Safe from any thread.

#include <fcntl.h>

namespace isolane {

inline void setCloseOnExec(int fd) {
  if (fd < 0) return;
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace isolane

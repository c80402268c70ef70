#include "cli/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "obs/log.h"

namespace isolane {

bool ServiceNotifier::notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  std::size_t length = std::strlen(path);
  sockaddr_un address{};
  if ((path[0] != '/' && path[0] != '@') || length >= sizeof(address.sun_path)) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path, length);
  if (path[0] == '@') address.sun_path[0] = '\0';  // the abstract namespace
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                          reinterpret_cast<const sockaddr*>(&address), size);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

ServiceNotifier::ServiceNotifier(std::function<bool()> ready) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  watcher_ = std::thread([this, ready = std::move(ready)] {
    while (!done_) {
      if (ready()) {
        bool sent = notify("READY=1\nMAINPID=" + std::to_string(::getpid()) + "\nSTATUS=serving\n");
        logEvent(sent ? Level::kInfo : Level::kWarn,
                 sent ? "service manager told: ready" : "NOTIFY_SOCKET did not take READY=1");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

ServiceNotifier::~ServiceNotifier() {
  done_ = true;
  if (watcher_.joinable()) watcher_.join();
}

void ServiceNotifier::stopping() {
  done_ = true;
  notify("STOPPING=1\nSTATUS=draining\n");
}

}  // namespace isolane

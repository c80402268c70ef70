#include "cli/stop_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace isolane {
namespace {

int gPipe[2] = {-1, -1};

void onSignal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  // Non-blocking: a flood of signals fills the pipe and the rest are dropped; one is enough.
  [[maybe_unused]] ssize_t n = ::write(gPipe[1], &byte, 1);
  errno = saved;
}

struct sigaction gPrevious[2];

}  // namespace

StopSignals::StopSignals() {
  if (gPipe[0] < 0 && ::pipe2(gPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("isolane: cannot create the signal pipe");
    std::abort();
  }
  // A signal that came before (an earlier instance's) is not this one's.
  unsigned char stale[64];
  while (::read(gPipe[0], stale, sizeof stale) > 0) {
  }
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &gPrevious[0]);
  sigaction(SIGTERM, &action, &gPrevious[1]);
  signal(SIGPIPE, SIG_IGN);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &gPrevious[0], nullptr);
  sigaction(SIGTERM, &gPrevious[1], nullptr);
}

int StopSignals::wait() {
  unsigned char byte = 0;
  for (;;) {
    ssize_t n = ::read(gPipe[0], &byte, 1);
    if (n == 1) return byte;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      fd_set readable;
      FD_ZERO(&readable);
      FD_SET(gPipe[0], &readable);
      ::select(gPipe[0] + 1, &readable, nullptr, nullptr, nullptr);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return SIGTERM;  // the pipe is gone: nothing can wake us any more, so stop
  }
}

}  // namespace isolane

#pragma once
// A capacity-one wake-up: any number of ring() calls before the sleeper looks coalesce into one
// wake. It carries no data; what to do is in bounded queues the sleeper drains after waking
// (executor-reactor rule: a wake is a doorbell, data stays in bounded queues).
//
// It is an eventfd, so that its sleeper may wait for it and for one descriptor of its own
// together (a worker's executor thread that reads its socket to the master itself:
// worker/executor_inbox.h). A ring while the sleeper is awake is an atomic exchange, no system
// call; only a ring that finds it parked writes to the eventfd.
//
// Thread rule: ring() from any thread; the waits from the one sleeping (owning) thread.

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <system_error>

namespace isolane {

class Doorbell {
 public:
  Doorbell() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~Doorbell() { ::close(fd_); }
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // Safe from any thread.
  void ring() {
    if (rung_.exchange(true)) return;  // rung already: the sleeper has yet to look
    if (parked_.load()) {
      std::uint64_t one = 1;
      ssize_t ignored = ::write(fd_, &one, sizeof one);  // only fails when the count is full
      (void)ignored;
    }
  }

  // Consumes a ring that came before now; returns whether there was one. For the owner about to
  // look at every queue it drains anyway: a later ring wakes it again, an earlier one need not.
  bool take() { return rung_.exchange(false); }

  // Waits until rung or until `deadline`; consumes the ring. Returns true if it was rung.
  template <typename Clock, typename Duration>
  bool waitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    for (;;) {
      auto left = deadline - Clock::now();
      if (left <= Duration::zero()) return take();
      if (park(std::chrono::duration_cast<std::chrono::nanoseconds>(left), -1).rung) return true;
    }
  }

  void wait() {
    while (!park(std::nullopt, -1).rung) {
    }
  }

  // Waits until rung, `fd` is readable (or hung up), or `timeout` has passed (nullopt: no
  // timeout), whichever comes first; consumes the ring. May also return for none of them (a
  // signal): the caller looks at its queues and waits again.
  struct Woken {
    bool rung = false;
    bool readable = false;
  };
  Woken park(std::optional<std::chrono::nanoseconds> timeout, int fd) {
    // Parked before looking: a ring() after this either is seen here or writes to the eventfd.
    parked_.store(true);
    if (rung_.exchange(false)) {
      parked_.store(false);
      return {true, false};
    }
    pollfd fds[2] = {{fd_, POLLIN, 0}, {fd, POLLIN, 0}};
    timespec ts{};
    if (timeout) {
      auto ns = timeout->count() < 0 ? 0 : timeout->count();
      ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    int n = ::ppoll(fds, fd >= 0 ? 2 : 1, timeout ? &ts : nullptr, nullptr);
    parked_.store(false);
    Woken woken;
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      std::uint64_t count;
      ssize_t ignored = ::read(fd_, &count, sizeof count);  // a late write is read next time
      (void)ignored;
    }
    woken.rung = rung_.exchange(false);
    woken.readable = n > 0 && fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    return woken;
  }

 private:
  const int fd_;
  std::atomic<bool> rung_{false};
  std::atomic<bool> parked_{false};
};

}  // namespace isolane

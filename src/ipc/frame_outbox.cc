#include "ipc/frame_outbox.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <chrono>

#include "ipc/frame_codec.h"
#include "obs/log.h"

namespace isolane {

FrameOutbox::FrameOutbox(int fd, std::function<void(const std::string& why)> onBroken)
    : fd_(fd), onBroken_(std::move(onBroken)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "isolane-out");
    flushLoop();
  });
}

FrameOutbox::~FrameOutbox() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void FrameOutbox::send(const Result<std::string>& frame) {
  if (!frame) {
    logEvent(Level::kError, "cannot encode a frame", {{"error", frame.error()}});
    return;
  }
  sendBytes(frame.value());
}

void FrameOutbox::breakLocked(std::unique_lock<std::mutex>& lock, const std::string& why) {
  if (broken_) return;
  broken_ = true;
  queue_.clear();
  queued_ = 0;
  frontSent_ = 0;
  lock.unlock();
  if (onBroken_) onBroken_(why);
  lock.lock();
}

std::optional<std::size_t> FrameOutbox::writeNowLocked(std::span<const iovec> parts,
                                                       std::unique_lock<std::mutex>& lock) {
  if (!queue_.empty() || flushing_) return 0;  // behind what waits: order is kept
  // The common case: the socket has room, and the frame leaves now, from this thread.
  iovec iov[4];
  std::size_t count = std::min(parts.size(), std::size(iov));
  std::copy_n(parts.begin(), count, iov);
  std::size_t sent = 0, first = 0;
  auto skipEmpty = [&] {
    while (first < count && iov[first].iov_len == 0) ++first;
  };
  skipEmpty();
  while (first < count) {
    msghdr message{};
    message.msg_iov = iov + first;
    message.msg_iovlen = count - first;
    ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      breakLocked(lock, "the other end closed the socket");
      return std::nullopt;
    }
    sent += static_cast<std::size_t>(n);
    for (auto left = static_cast<std::size_t>(n); left > 0;) {  // past what was written
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
    skipEmpty();
  }
  return sent;
}

void FrameOutbox::enqueueLocked(std::string bytes, std::shared_ptr<const void> hold,
                                std::unique_lock<std::mutex>& lock) {
  queued_ += bytes.size();
  if (queued_ > kMaxQueuedBytes) {
    return breakLocked(lock, "the other end stopped reading (" + std::to_string(queued_ >> 20) +
                                 " MiB of frames waiting)");
  }
  queue_.push_back(Entry{std::move(bytes), std::move(hold)});
  lock.unlock();
  wake_.notify_one();
}

void FrameOutbox::sendBytes(std::string bytes, std::shared_ptr<const void> hold) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return;
  iovec part{bytes.data(), bytes.size()};
  std::optional<std::size_t> sent = writeNowLocked({&part, 1}, lock);
  if (!sent || *sent == bytes.size()) return;
  if (*sent > 0) bytes.erase(0, *sent);
  enqueueLocked(std::move(bytes), std::move(hold), lock);
}

void FrameOutbox::sendFrame(std::string head, std::string_view trailer) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return;
  std::size_t pad = framePadding(trailer.size());
  iovec parts[] = {{head.data(), head.size()},
                   {const_cast<char*>(trailer.data()), trailer.size()},
                   {const_cast<char*>(kFramePad), pad}};
  std::optional<std::size_t> sent = writeNowLocked(parts, lock);
  std::size_t total = head.size() + trailer.size() + pad;
  if (!sent || *sent == total) return;
  // What the socket did not take waits in the queue: the one copy of these bytes.
  std::string rest;
  rest.reserve(total - *sent);
  std::size_t skip = *sent;
  for (const iovec& part : parts) {
    std::size_t n = part.iov_len;
    if (skip >= n) {
      skip -= n;
      continue;
    }
    rest.append(static_cast<const char*>(part.iov_base) + skip, n - skip);
    skip = 0;
  }
  enqueueLocked(std::move(rest), {}, lock);
}

void FrameOutbox::flushLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto stopBy = std::chrono::steady_clock::time_point::max();
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || (!queue_.empty() && !broken_); });
    if (queue_.empty() || broken_) return;  // stopping, with nothing left to write
    if (stopping_ && stopBy == std::chrono::steady_clock::time_point::max()) {
      stopBy = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    if (std::chrono::steady_clock::now() > stopBy) return;
    // Write the head of the queue without the lock, taken out of the queue (which a break may
    // clear meanwhile); senders append behind it, and none writes directly while it is out.
    Entry current = std::move(queue_.front());
    queue_.pop_front();
    std::size_t offset = frontSent_;
    frontSent_ = 0;
    flushing_ = true;
    const char* data = current.bytes.data() + offset;
    std::size_t left = current.bytes.size() - offset;
    lock.unlock();
    pollfd pfd{fd_, POLLOUT, 0};
    int ready = ::poll(&pfd, 1, 100);
    ssize_t n = 0;
    if (ready > 0) n = ::send(fd_, data, left, MSG_NOSIGNAL | MSG_DONTWAIT);
    int error = errno;
    lock.lock();
    flushing_ = false;
    if (broken_) continue;
    if ((ready < 0 && error != EINTR) ||
        (ready > 0 && n < 0 && error != EAGAIN && error != EWOULDBLOCK && error != EINTR) ||
        (ready > 0 && (pfd.revents & (POLLERR | POLLHUP)) && n <= 0)) {
      breakLocked(lock, "the other end closed the socket");
      continue;
    }
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
      queued_ -= static_cast<std::size_t>(n);
    }
    if (offset < current.bytes.size()) {  // the rest goes first next time
      queue_.push_front(std::move(current));
      frontSent_ = offset;
    }
  }
}

}  // namespace isolane

#include "ipc/frame_outbox.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <iterator>
#include <vector>

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
    std::unique_lock<std::mutex> lock(mutex_);
    holding_ = false;
    flushHeldLocked(lock);
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
  held_.clear();
  heldBytes_ = 0;
  lock.unlock();
  if (onBroken_) onBroken_(why);
  lock.lock();
}

std::optional<std::size_t> FrameOutbox::writeNowLocked(std::span<iovec> parts,
                                                       std::unique_lock<std::mutex>& lock) {
  if (!queue_.empty() || flushing_) return 0;  // behind what waits: order is kept
  // The common case: the socket has room, and the frames leave now, from this thread.
  iovec* iov = parts.data();
  std::size_t count = std::min<std::size_t>(parts.size(), IOV_MAX);
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
        iov[first].iov_len = 0;
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

bool FrameOutbox::queueLocked(Entry entry, std::unique_lock<std::mutex>& lock) {
  queued_ += entry.bytes.size();
  if (queued_ > kMaxQueuedBytes) {
    breakLocked(lock, "the other end stopped reading (" + std::to_string(queued_ >> 20) +
                          " MiB of frames waiting)");
    return false;
  }
  queue_.push_back(std::move(entry));
  return true;
}

void FrameOutbox::enqueueLocked(std::string bytes, std::shared_ptr<const void> hold,
                                std::unique_lock<std::mutex>& lock) {
  if (!queueLocked(Entry{std::move(bytes), std::move(hold)}, lock)) return;
  lock.unlock();
  wake_.notify_one();
}

void FrameOutbox::sendBytes(std::string bytes, std::shared_ptr<const void> hold) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return;
  if (holdsLocked(bytes.size())) return addHeldLocked(Entry{std::move(bytes), std::move(hold)}, lock);
  flushHeldLocked(lock);  // what is held goes first
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
  if (trailer.size() <= kMaxHeldTrailer && holdsLocked(head.size() + trailer.size() + pad)) {
    head.append(trailer).append(kFramePad, pad);  // a small copy, to be held
    return addHeldLocked(Entry{std::move(head), {}}, lock);
  }
  flushHeldLocked(lock);
  if (broken_) return;
  iovec parts[] = {{head.data(), head.size()},
                   {const_cast<char*>(trailer.data()), trailer.size()},
                   {const_cast<char*>(kFramePad), pad}};
  std::size_t total = head.size() + trailer.size() + pad;
  std::optional<std::size_t> sent = writeNowLocked(parts, lock);
  if (!sent || *sent == total) return;
  // What the socket did not take waits in the queue: the one copy of these bytes. (writeNowLocked
  // advanced `parts` past what it wrote.)
  std::string rest;
  rest.reserve(total - *sent);
  for (const iovec& part : parts) rest.append(static_cast<const char*>(part.iov_base), part.iov_len);
  enqueueLocked(std::move(rest), {}, lock);
}

bool FrameOutbox::holdsLocked(std::size_t bytes) const {
  return holding_ && bytes <= kMaxHeldBytes && holder_ == std::this_thread::get_id();
}

void FrameOutbox::addHeldLocked(Entry entry, std::unique_lock<std::mutex>& lock) {
  if (held_.empty()) heldSince_ = std::chrono::steady_clock::now();
  heldBytes_ += entry.bytes.size();
  held_.push_back(std::move(entry));
  if (held_.size() >= kMaxHeldFrames || heldBytes_ >= kMaxHeldBytes) flushHeldLocked(lock);
}

void FrameOutbox::flushHeldLocked(std::unique_lock<std::mutex>& lock) {
  if (held_.empty()) return;
  std::size_t count = held_.size();
  iovec iov[kMaxHeldFrames];
  for (std::size_t i = 0; i < count; ++i) iov[i] = {held_[i].bytes.data(), held_[i].bytes.size()};
  std::optional<std::size_t> sent = writeNowLocked({iov, count}, lock);
  heldBytes_ = 0;
  if (!sent) {  // broken: nothing more is written
    held_.clear();
    return;
  }
  // The frames written whole are let go of; the rest wait in the queue, in order, the first of
  // them without what of it was written.
  std::size_t done = *sent, first = 0;
  while (first < count && done >= held_[first].bytes.size()) done -= held_[first++].bytes.size();
  if (first == count) {
    held_.clear();
    return;
  }
  held_[first].bytes.erase(0, done);
  std::vector<Entry> rest(std::make_move_iterator(held_.begin() + static_cast<std::ptrdiff_t>(first)),
                          std::make_move_iterator(held_.end()));
  held_.clear();
  for (Entry& entry : rest) {
    if (!queueLocked(std::move(entry), lock)) return;  // broken: nothing more is written
  }
  wake_.notify_one();
}

void FrameOutbox::hold() {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = true;
  holder_ = std::this_thread::get_id();
}

void FrameOutbox::release() {
  std::unique_lock<std::mutex> lock(mutex_);
  holding_ = false;
  flushHeldLocked(lock);
}

void FrameOutbox::flushHeld() {
  std::unique_lock<std::mutex> lock(mutex_);
  flushHeldLocked(lock);
}

bool FrameOutbox::flushHeldSince(std::chrono::steady_clock::time_point since) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_.empty() || heldSince_ > since) return false;
  flushHeldLocked(lock);
  return true;
}

void FrameOutbox::flushLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto stopBy = std::chrono::steady_clock::time_point::max();
  std::vector<Entry> batch;
  for (;;) {
    batch.clear();  // what the last write took (their holds let go)
    wake_.wait(lock, [this] { return stopping_ || (!queue_.empty() && !broken_); });
    if (queue_.empty() || broken_) return;  // stopping, with nothing left to write
    if (stopping_ && stopBy == std::chrono::steady_clock::time_point::max()) {
      stopBy = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    if (std::chrono::steady_clock::now() > stopBy) return;
    // Write the head of the queue without the lock, taken out of the queue (which a break may
    // clear meanwhile); senders append behind it, and none writes directly while it is out. Up to
    // kFlushBatch frames leave in one gathered write (one sendmsg per wake-up).
    std::size_t offset = frontSent_;
    frontSent_ = 0;
    while (!queue_.empty() && batch.size() < kFlushBatch) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    flushing_ = true;
    lock.unlock();
    iovec iov[kFlushBatch];
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::size_t skip = i == 0 ? offset : 0;
      iov[i] = {batch[i].bytes.data() + skip, batch[i].bytes.size() - skip};
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = batch.size();
    pollfd pfd{fd_, POLLOUT, 0};
    int ready = ::poll(&pfd, 1, 100);
    ssize_t n = 0;
    if (ready > 0) n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
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
    std::size_t written = n > 0 ? static_cast<std::size_t>(n) : 0;
    queued_ -= written;
    // The frames written whole stay in `batch` (let go of above); the rest go back to the front
    // of the queue, in order, the first of them with how much of it is written.
    std::size_t taken = 0, done = offset + written;
    while (taken < batch.size() && done >= batch[taken].bytes.size()) {
      done -= batch[taken].bytes.size();
      ++taken;
    }
    for (std::size_t k = batch.size(); k > taken; --k) queue_.push_front(std::move(batch[k - 1]));
    if (taken < batch.size()) frontSent_ = done;
    batch.resize(taken);
  }
}

}  // namespace isolane

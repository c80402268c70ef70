#include "ipc/body_pipe.h"

#include <algorithm>
#include <utility>

#include "ipc/shared_memory.h"

namespace isolane {

void BodyPipe::notify(std::unique_lock<std::mutex>& lock) {
  if (!ready_ || readyPending_) return;
  readyPending_ = true;
  std::function<void()> ready = ready_;
  lock.unlock();
  ready();
}

bool BodyPipe::push(BodyPiece piece) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_ || failed_) return false;
  std::size_t n = piece.size();
  if (n == 0) return true;  // nothing: kept nowhere (a peer could send empty pieces forever)
  if (enforceWindow_ &&
      (n > kStreamPieceBytes || unacknowledged_ + n > kStreamWindowBytes + kStreamPieceBytes)) {
    return false;
  }
  if (abandoned_) {
    lock.unlock();
    if (n) credit_(n);
    return true;
  }
  unacknowledged_ += n;
  buffered_ += n;
  pieces_.push_back(std::move(piece));
  notify(lock);
  return true;
}

void BodyPipe::end() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_ || failed_) return;
  ended_ = true;
  notify(lock);
}

void BodyPipe::fail(std::string detail) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_ || failed_) return;
  failed_ = true;
  failure_ = std::move(detail);
  notify(lock);
}

void BodyPipe::setReady(std::function<void()> ready) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_ = std::move(ready);
  readyPending_ = false;
  if (!pieces_.empty() || ended_ || failed_) notify(lock);
}

BodyPipe::Take BodyPipe::take(std::string* piece) {
  BodyPiece taken;
  Take t = take(&taken);
  if (t != Take::kPiece && t != Take::kFailed) return t;
  // A lent piece lies in a worker's memory: copied by the kernel (ipc/shared_memory.h).
  *piece = taken.lent() ? sharedMemoryCopy(taken.bytes()) : std::move(taken).take();
  return t;
}

BodyPipe::Take BodyPipe::take(BodyPiece* piece) {
  std::lock_guard<std::mutex> lock(mutex_);
  // What was produced before a failure still goes out; then the response is cut.
  if (!pieces_.empty()) {
    *piece = std::move(pieces_.front());
    pieces_.pop_front();
    buffered_ -= piece->size();
    return Take::kPiece;
  }
  if (failed_) {
    *piece = BodyPiece(failure_);
    return Take::kFailed;
  }
  if (ended_) return Take::kEnd;
  // Only an empty pipe re-arms `ready`: until the consumer has drained it, it is still at work
  // (on some thread), and a second call would run two consumers at once.
  readyPending_ = false;
  return Take::kEmpty;
}

void BodyPipe::acknowledge(std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bytes = std::min(bytes, unacknowledged_);
    unacknowledged_ -= bytes;
  }
  if (bytes) credit_(bytes);
}

void BodyPipe::abandon() {
  std::size_t dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abandoned_) return;
    abandoned_ = true;
    pieces_.clear();
    buffered_ = 0;
    dropped = unacknowledged_;
    unacknowledged_ = 0;
    ready_ = nullptr;
  }
  if (dropped) credit_(dropped);
}

bool BodyPipe::producerBlocked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !ended_ && !failed_ && unacknowledged_ >= kStreamWindowBytes;
}

std::size_t BodyPipe::unacknowledgedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unacknowledged_;
}

std::size_t BodyPipe::bufferedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffered_;
}

bool BodyPipe::abandoned() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abandoned_;
}

}  // namespace isolane

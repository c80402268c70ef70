#include "ipc/socket_writer.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "ipc/frame_codec.h"

namespace isolane {

namespace asio = boost::asio;

SocketWriter::SocketWriter(Strand strand, Socket& socket, OnBroken onBroken,
                           std::size_t maxQueuedBytes)
    : strand_(std::move(strand)),
      socket_(socket),
      onBroken_(std::move(onBroken)),
      maxQueued_(maxQueuedBytes) {}

bool SocketWriter::send(std::string bytes, const std::shared_ptr<const void>& owner) {
  return queue(&bytes, 1, owner);
}

bool SocketWriter::send(std::string head, std::string trailer,
                        const std::shared_ptr<const void>& owner) {
  std::size_t pad = framePadding(trailer.size());
  std::string parts[] = {std::move(head), std::move(trailer), std::string(kFramePad, pad)};
  return queue(parts, parts[2].empty() ? 2 : 3, owner);
}

bool SocketWriter::queue(std::string* parts, std::size_t count,
                         const std::shared_ptr<const void>& owner) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < count; ++i) bytes += parts[i].size();
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return false;
  queued_ += bytes;
  if (queued_ > maxQueued_) {
    std::size_t mib = queued_ >> 20;
    if (breakLocked()) {
      lock.unlock();
      if (onBroken_) {
        onBroken_("the worker stopped reading (" + std::to_string(mib) + " MiB of frames waiting)");
      }
    }
    return false;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!parts[i].empty()) queue_.push_back(std::move(parts[i]));
  }
  if (flushing_) return true;  // the flush under way takes it
  flushing_ = true;
  lock.unlock();
  asio::post(strand_, [this, owner] { flush(owner); });
  return true;
}

void SocketWriter::flush(std::shared_ptr<const void> owner) {
  // The socket is written from here, not through a completion handler: that handler would wait
  // behind every handler the reactor had ready (on a busy front, hundreds of connections' reads),
  // and the frames queued meanwhile with it. Only a full socket waits for the reactor.
  boost::system::error_code notNonBlocking;
  if (!socket_.non_blocking()) socket_.non_blocking(true, notNonBlocking);
  for (int batch = 0;; ++batch) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (broken_ || queue_.empty()) {
        flushing_ = false;
        return;
      }
      if (batch == kBatchesPerFlush) {
        // Frames keep coming from other threads: the rest goes in a flush of its own, after the
        // handlers the reactor has ready, so that one socket never holds the reactor's thread.
        lock.unlock();
        asio::post(strand_, [this, owner = std::move(owner)]() mutable { flush(std::move(owner)); });
        return;
      }
      writing_.swap(queue_);  // queue_ takes writing_'s emptied storage
      ++writes_;
    }
    buffers_.clear();
    for (const std::string& frame : writing_) buffers_.emplace_back(asio::buffer(frame));
    boost::system::error_code ec = asio::error::would_block;
    std::size_t wrote = 0;
    // A socket that could not be made non-blocking is written only when the reactor says it
    // has room: a blocking write would stop the reactor on a worker that does not read.
    if (!notNonBlocking) wrote = asio::write(socket_, buffers_, ec);
    if (ec == asio::error::would_block) {  // (EAGAIN: the same value on Linux)
      // The rest when the worker has read enough; the writer stays flushing until then.
      // (wrote < the batch's size here: a frame is never empty, so `first` stays in range.)
      std::size_t skip = wrote;
      std::size_t first = 0;
      while (skip >= buffers_[first].size()) skip -= buffers_[first++].size();
      buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(first));
      buffers_.front() += skip;
      asio::async_write(socket_, buffers_,
                        asio::bind_executor(strand_, [this, wrote, owner = std::move(owner)](
                                                         const boost::system::error_code& ec,
                                                         std::size_t rest) mutable {
                          if (written(ec, wrote + rest)) flush(std::move(owner));
                        }));
      return;
    }
    if (!written(ec, wrote)) return;
  }
}

bool SocketWriter::written(const boost::system::error_code& ec, std::size_t bytes) {
  writing_.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!broken_) queued_ -= bytes;
  if (ec) {
    if (breakLocked()) {
      lock.unlock();
      if (onBroken_) onBroken_("the worker closed its socket (" + ec.message() + ")");
    }
    return false;
  }
  return true;  // what was sent meanwhile goes in the next gathered write
}

void SocketWriter::silence() {
  std::lock_guard<std::mutex> lock(mutex_);
  breakLocked();
}

bool SocketWriter::breakLocked() {
  if (broken_) return false;
  broken_ = true;
  queue_.clear();
  queued_ = 0;
  return true;
}

std::size_t SocketWriter::writes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return writes_;
}

std::size_t SocketWriter::queuedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

}  // namespace isolane

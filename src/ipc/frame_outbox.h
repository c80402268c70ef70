#pragma once
// FrameOutbox: a worker's writing end of its socket to the master. Whoever sends never blocks on
// the socket: a frame is written at once when the socket takes it, and otherwise queued for the
// outbox's own thread, which writes it when the socket is writable. Order is kept across threads.
// A worker's executors (answers, streamed pieces) and its reader (heartbeat answers) send through
// it. (The master's end, on its reactor, is ipc/socket_writer.h.)
//
// The queue is bounded: streamed bodies are bounded by credit, whole bodies by their limits, so a
// queue past kMaxQueuedBytes means the other side stopped reading altogether. The socket is then
// given up on, as on a write error: `onBroken` says why (the worker exits), and later sends are
// dropped.
//
// Thread rule: send(), sendBytes() and sendFrame() are safe from any thread.

#include <sys/uio.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "util/result.h"

namespace isolane {

class FrameOutbox {
 public:
  static constexpr std::size_t kMaxQueuedBytes = std::size_t{512} << 20;
  // The most queued frames the flusher writes in one gathered write.
  static constexpr std::size_t kFlushBatch = 16;

  FrameOutbox(int fd, std::function<void(const std::string& why)> onBroken);
  ~FrameOutbox();  // flushes what is queued (for up to a second), then stops the thread
  FrameOutbox(const FrameOutbox&) = delete;
  FrameOutbox& operator=(const FrameOutbox&) = delete;

  // An encoded frame, or an encoding error (logged; nothing is sent).
  void send(const Result<std::string>& frame);
  // Frames already encoded (several may be batched into one write). `hold`, if given, is let go
  // of once the bytes are written (or the socket is given up on): what keeps them charged to
  // whoever made them (runtime/memory_budget.h).
  void sendBytes(std::string bytes, std::shared_ptr<const void> hold = {});
  // A frame's head and its trailer (frame_codec.h) apart: the trailer is written from where it
  // is, and copied only when the socket cannot take it now. The padding is added here.
  void sendFrame(std::string head, std::string_view trailer);

 private:
  void flushLoop();
  // Writes `parts` (at most 4) now when nothing waits before them and the socket takes them: the bytes
  // written (all, some or none), or nothing when the socket broke.
  std::optional<std::size_t> writeNowLocked(std::span<const iovec> parts,
                                            std::unique_lock<std::mutex>& lock);
  // Queues `bytes` for the flusher (or breaks the socket when the queue is past its bound);
  // unlocks.
  void enqueueLocked(std::string bytes, std::shared_ptr<const void> hold,
                     std::unique_lock<std::mutex>& lock);
  void breakLocked(std::unique_lock<std::mutex>& lock, const std::string& why);

  const int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  struct Entry {
    std::string bytes;
    std::shared_ptr<const void> hold;
  };
  std::deque<Entry> queue_;  // waiting for the socket, in order
  std::size_t queued_ = 0;
  std::size_t frontSent_ = 0;  // bytes of queue_.front() already written
  bool stopping_ = false;
  bool broken_ = false;
  bool flushing_ = false;  // the flusher holds the head of the queue (up to kFlushBatch frames)
  const std::function<void(const std::string& why)> onBroken_;
  std::thread thread_;
};

}  // namespace isolane

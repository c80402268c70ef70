#pragma once
// FrameOutbox: a worker's writing end of its socket to the master. Whoever sends never blocks on
// the socket: a frame is written at once when the socket takes it, and otherwise queued for the
// outbox's own thread, which writes it when the socket is writable. Order is kept across threads.
// A worker's executors (answers, streamed pieces) and its reader (heartbeat answers) send through
// it. (The master's end, on its reactor, is ipc/socket_writer.h.)
//
// The thread that reads the socket may hold what it sends while it runs a pass of short turns
// (hold()): its frames then wait, unwritten and uncopied, and leave together in one gathered write
// when it releases them, when they reach kMaxHeldFrames or kMaxHeldBytes, when anyone asks
// (flushHeld(), e.g. the watchdog in a long turn), or when another thread sends (they go first:
// order is kept). Under load a pass answers several requests, and one sendmsg (and one wake-up of
// the master's reactor) serves them all instead of one each.
//
// The queue is bounded: streamed bodies are bounded by credit, whole bodies by their limits, so a
// queue past kMaxQueuedBytes means the other side stopped reading altogether. The socket is then
// given up on, as on a write error: `onBroken` says why (the worker exits), and later sends are
// dropped.
//
// Thread rule: send(), sendBytes(), sendFrame(), flushHeld() and flushHeldSince() are safe
// from any thread; hold() and release() are called by the thread whose frames are held.

#include <sys/uio.h>

#include <chrono>
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
#include <vector>

#include "util/result.h"

namespace isolane {

class FrameOutbox {
 public:
  static constexpr std::size_t kMaxQueuedBytes = std::size_t{512} << 20;
  // The most queued frames the flusher writes in one gathered write.
  static constexpr std::size_t kFlushBatch = 16;
  // The most frames, and bytes, held before they are written anyway.
  static constexpr std::size_t kMaxHeldFrames = 64;
  static constexpr std::size_t kMaxHeldBytes = std::size_t{64} * 1024;
  // A trailer up to this size is copied behind its head to be held; a larger one is written from
  // where it is, at once (after what is held).
  static constexpr std::size_t kMaxHeldTrailer = std::size_t{4} * 1024;

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

  // From now on, until release(), the calling thread's frames are held (see above).
  void hold();
  // Writes what is held, and stops holding.
  void release();
  // Writes what is held now; holding goes on.
  void flushHeld();
  // The same, when the first frame held came at `since` or before (true: it wrote them).
  bool flushHeldSince(std::chrono::steady_clock::time_point since);

 private:
  void flushLoop();
  struct Entry {
    std::string bytes;
    std::shared_ptr<const void> hold;
  };
  // Writes `parts` (which it advances past what it wrote) now when nothing waits before them and
  // the socket takes them: the bytes written (all, some or none), or nothing when the socket broke.
  std::optional<std::size_t> writeNowLocked(std::span<iovec> parts,
                                            std::unique_lock<std::mutex>& lock);
  // Appends `entry` to the queue, or breaks the socket when the queue is past its bound (false).
  bool queueLocked(Entry entry, std::unique_lock<std::mutex>& lock);
  // Queues `bytes` for the flusher (queueLocked) and wakes it; unlocks.
  void enqueueLocked(std::string bytes, std::shared_ptr<const void> hold,
                     std::unique_lock<std::mutex>& lock);
  // Whether the calling thread's frame of `bytes` bytes is to be held.
  bool holdsLocked(std::size_t bytes) const;
  // Adds a frame to what is held, and writes them all when they reach a bound.
  void addHeldLocked(Entry entry, std::unique_lock<std::mutex>& lock);
  // Writes what is held (and queues what the socket does not take); may unlock and lock again.
  void flushHeldLocked(std::unique_lock<std::mutex>& lock);
  void breakLocked(std::unique_lock<std::mutex>& lock, const std::string& why);

  const int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> queue_;  // waiting for the socket, in order
  std::size_t queued_ = 0;
  std::size_t frontSent_ = 0;  // bytes of queue_.front() already written
  bool stopping_ = false;
  bool broken_ = false;
  bool flushing_ = false;  // the flusher holds the head of the queue (up to kFlushBatch frames)
  // Holding: whose frames, and the frames held (not yet written, nor queued), in order.
  bool holding_ = false;
  std::thread::id holder_;
  std::vector<Entry> held_;
  std::size_t heldBytes_ = 0;
  std::chrono::steady_clock::time_point heldSince_;  // when the first of held_ came
  const std::function<void(const std::string& why)> onBroken_;
  std::thread thread_;
};

}  // namespace isolane

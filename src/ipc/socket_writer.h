#pragma once
// SocketWriter: the master's writing end of a worker's socket, on the master's reactor
// (ipc/reactor.h). send() never blocks and never writes from the caller's thread: the frame joins
// a queue, and the first send of a batch posts one flush to the socket's strand, which writes
// everything queued by then in one gathered write (an iovec per frame, or per part of a frame
// sent as head and trailer). The flush writes the (non-blocking) socket itself; only what a full
// socket did not take waits for the reactor. So the frames one pass of
// the reactor makes (the requests, body pieces, credit and cancels of many connections) leave in
// one system call, and no thread of the writer's own wakes for them. Order is kept across threads.
//
// The queue is bounded: streamed bodies are bounded by credit, whole bodies by their limits, so a
// queue past kMaxQueuedBytes means the worker stopped reading altogether. The socket is then
// given up on, as on a write error: `onBroken` says why, once (the master kills the worker, whose
// death answers its requests), and later sends are dropped.
//
// Thread rule: send() and silence() are safe from any thread. Writes and `onBroken` after a write
// error run on the strand; `onBroken` for an overflow runs on the sender's thread. The socket and
// the writer must outlive every handler: send() takes their owner, which a posted flush holds.

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ipc/frame_outbox.h"

namespace isolane {

class SocketWriter {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using OnBroken = std::function<void(const std::string& why)>;
  // The same bound as the worker's end of the socket.
  static constexpr std::size_t kMaxQueuedBytes = FrameOutbox::kMaxQueuedBytes;
  // Gathered writes one flush makes while frames keep coming before it yields the reactor.
  static constexpr int kBatchesPerFlush = 4;

  // `socket` runs on `strand`; both outlive the writer's handlers (see send()).
  SocketWriter(Strand strand, Socket& socket, OnBroken onBroken,
               std::size_t maxQueuedBytes = kMaxQueuedBytes);
  SocketWriter(const SocketWriter&) = delete;
  SocketWriter& operator=(const SocketWriter&) = delete;

  // Queues `bytes` (one or more encoded frames). `owner` keeps this writer and its socket alive
  // until the flush it may post has run; false once the socket was given up on (dropped).
  bool send(std::string bytes, const std::shared_ptr<const void>& owner);
  // A frame's head and its trailer (a body, written from this string: no copy), and the
  // trailer's padding (frame_codec.h).
  bool send(std::string head, std::string trailer, const std::shared_ptr<const void>& owner);
  // Drops what is queued and every later send, with no `onBroken` call (the owner is going).
  void silence();
  // Bytes queued or being written.
  std::size_t queuedBytes() const;
  // Gathered writes begun so far (each takes every frame queued when it began).
  std::size_t writes() const;

 private:
  // Queues `parts` (one frame, or several) in order.
  bool queue(std::string* parts, std::size_t count, const std::shared_ptr<const void>& owner);
  // On the strand: writes what is queued, gathered, until nothing is (or the socket is full:
  // then the rest is written when it has room).
  void flush(std::shared_ptr<const void> owner);
  // `bytes`: what the write took (all of the batch, unless `ec`: then the writer breaks, and
  // false is returned).
  bool written(const boost::system::error_code& ec, std::size_t bytes);
  // Marks the socket given up on; true when this call did (then `onBroken` is due).
  bool breakLocked();

  Strand strand_;
  Socket& socket_;
  const OnBroken onBroken_;
  const std::size_t maxQueued_;

  mutable std::mutex mutex_;  // guards the five below
  std::vector<std::string> queue_;  // sent, not yet in a write, in order
  std::size_t queued_ = 0;          // bytes in queue_ and in writing_
  bool flushing_ = false;           // a flush is posted or a write is under way
  bool broken_ = false;             // given up on, or silenced
  std::size_t writes_ = 0;

  // On the strand only: the batch being written, and its buffers.
  std::vector<std::string> writing_;
  std::vector<boost::asio::const_buffer> buffers_;
};

}  // namespace isolane

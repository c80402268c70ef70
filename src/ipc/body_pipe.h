#pragma once
// BodyPipe: a streamed response body on its way from a backend (the producer: frames from a
// worker, or an executor thread of this process) to the HTTP front (the consumer, which writes
// it to the client).
//
// Flow control is by credit. The producer may have at most kStreamWindowBytes (plus one piece)
// pushed and not yet acknowledged; the consumer acknowledges bytes once they are written to the
// client's socket, which hands the producer that much credit back. A client that reads slowly
// therefore stops the app's stream after one window, and nothing on the way holds more.
//
// Thread rule: every method is safe from any thread. The ready and credit callbacks run on the
// calling thread without the pipe's lock held; each must only post or queue (never block).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "ipc/body_piece.h"

namespace isolane {

// Bytes the producer may send before it hears back: about a quarter second of a fast client.
inline constexpr std::size_t kStreamWindowBytes = 256u << 10;
// The largest piece one chunk of a streamed body crosses in (the runtime splits bigger ones).
inline constexpr std::size_t kStreamPieceBytes = 64u << 10;

class BodyPipe {
 public:
  // Called with the number of bytes the consumer acknowledged: the producer may send that many
  // more. Called on the consumer's thread.
  using CreditFn = std::function<void(std::size_t bytes)>;

  // `enforceWindow`: a producer that pushes past its window is refused (for producers the
  // consumer does not trust: a worker). The front's own request-body pipe bounds itself.
  explicit BodyPipe(CreditFn credit, bool enforceWindow = true)
      : credit_(std::move(credit)), enforceWindow_(enforceWindow) {}
  BodyPipe(const BodyPipe&) = delete;
  BodyPipe& operator=(const BodyPipe&) = delete;

  // Producer. False when the piece goes over the window the producer was given (a producer that
  // ignores its credit: a protocol violation; nothing is kept). A piece pushed after the consumer
  // went away is dropped and acknowledged at once, so that the producer runs to its end.
  bool push(BodyPiece piece);
  void end();
  // The body cannot be completed (the app failed mid-stream, its worker died, a stream limit):
  // the consumer writes what was pushed before, then ends the response abruptly so that the
  // client sees it incomplete.
  void fail(std::string detail);

  // Consumer. `ready` is called when something new can be taken (possibly at once), and not
  // again until a take() has returned kEmpty: one consumer runs at a time.
  void setReady(std::function<void()> ready);
  enum class Take { kPiece, kEmpty, kEnd, kFailed };
  // kPiece: *piece is the next piece (a lent one goes back when the consumer destroys it, once
  // written). kFailed: *piece is the reason, for the log.
  Take take(BodyPiece* piece);
  // The same, the piece's bytes copied out (for consumers off the hot path).
  Take take(std::string* piece);
  // `bytes` of what was taken reached the client: the producer gets that much credit.
  void acknowledge(std::size_t bytes);
  // The consumer is gone: what is buffered is dropped, and later pieces too.
  void abandon();

  // True when the producer has no credit left (it waits for the client, not the other way round).
  bool producerBlocked() const;
  // Bytes pushed and not acknowledged yet.
  std::size_t unacknowledgedBytes() const;
  // Bytes held here (pushed, not yet taken).
  std::size_t bufferedBytes() const;
  // The consumer is gone (abandon() was called): a producer that outlives its consumer stops.
  bool abandoned() const;

 private:
  void notify(std::unique_lock<std::mutex>& lock);

  const CreditFn credit_;
  const bool enforceWindow_;
  mutable std::mutex mutex_;
  std::deque<BodyPiece> pieces_;
  std::size_t buffered_ = 0;
  std::size_t unacknowledged_ = 0;  // pushed and not acknowledged
  bool ended_ = false;
  bool failed_ = false;
  bool abandoned_ = false;
  std::string failure_;
  std::function<void()> ready_;
  bool readyPending_ = false;  // `ready` was called and nothing was taken since
};

}  // namespace isolane

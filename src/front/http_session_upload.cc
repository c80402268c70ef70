// HttpSession: streaming a request body to the backend as it arrives (see http_session.h).
//
// The request goes to the backend at its head, with a BodyPipe for its body. Each parse hands
// the bytes it read to the pipe, in pieces of at most 64 KiB. The backend acknowledges bytes as
// the app reads them; while it holds about a window unread, the connection is not read (the
// client's sends wait in TCP), and the body's clocks stop: a slow app is not a slow client.
#include "front/http_session_impl.h"
#include "obs/log.h"

namespace isolane {

void HttpSession::startBodyStream() {
  bodyPaused_ = false;
  // A strong reference: while reading is paused and the app has not answered, nothing else
  // keeps the connection alive. The backend drops the pipe when the request ends.
  bodyOut_ = std::make_shared<BodyPipe>(
      [self = shared_from_this()](std::size_t) {
        asio::post(self->socket_.get_executor(),
                   [self] { self->guarded("body credit", [&] { self->onBodyCredit(); }); });
      },
      /*enforceWindow=*/false);
  if (!submitRequest(bodyOut_)) bodyOut_.reset();  // answered here (no route): not read
}

bool HttpSession::forwardBody() {
  auto push = [this](std::string piece) {
    if (bodyOut_->push(std::move(piece))) return true;
    // Only after the body ended or failed: a bug, not the client.
    failBody("internal: a request body piece after its end");
    onUnexpected("body stream", "request body piece after its end");
    return false;
  };
  std::string bytes = reader_.takeBodySoFar();
  // What one read took is mostly one piece: moved on, not copied.
  if (bytes.size() <= kStreamPieceBytes) return bytes.empty() || push(std::move(bytes));
  for (std::size_t at = 0; at < bytes.size(); at += kStreamPieceBytes) {
    if (!push(bytes.substr(at, kStreamPieceBytes))) return false;
  }
  return true;
}

bool HttpSession::bodyWindowFull() const {
  // Reads stop once a window is unread; one read and what the buffer held may pass it (the
  // server then holds at most a window, a read, and a head's worth).
  return bodyOut_->unacknowledgedBytes() >= kStreamWindowBytes;
}

void HttpSession::pauseBody() {
  bodyPaused_ = true;
  bodyPausedAt_ = Clock::now();
}

void HttpSession::onBodyCredit() {
  account();
  if (!bodyPaused_ || !bodyOut_ || closed_ || bodyWindowFull()) return;
  bodyPaused_ = false;
  // The time the app made the client wait does not count against the client.
  bodyDeadline_ += Clock::now() - bodyPausedAt_;
  readMore();
}

void HttpSession::failBody(const std::string& why) {
  if (!bodyOut_) return;
  bodyOut_->fail(why);
  bodyOut_.reset();
  account();
  bodyPaused_ = false;
  if (cancelHandle_ && !writing_) context_.backend.cancel(cancelHandle_);
}

}  // namespace isolane

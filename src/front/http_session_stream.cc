// HttpSession: writing a streamed response body (see http_session.h).
#include <charconv>

#include "front/http_session_impl.h"
#include "obs/log.h"

namespace isolane {

namespace {

// Pieces gathered into one write when the backend got ahead of the socket.
constexpr std::size_t kMaxPiecesPerWrite = 16;

// An SSE response: a client reconnects after its clean end, so a stop may end it early.
bool isEventStream(const HeaderList& headers) {
  constexpr std::string_view kType = "text/event-stream";
  for (const auto& [name, value] : headers) {
    if (!beast::iequals(beast::string_view(name.data(), name.size()), "content-type")) continue;
    std::string_view v = value;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    return v.size() >= kType.size() &&
           beast::iequals(beast::string_view(v.data(), kType.size()),
                          beast::string_view(kType.data(), kType.size())) &&
           (v.size() == kType.size() || v[kType.size()] == ';' || v[kType.size()] == ' ');
  }
  return false;
}

std::string chunkSize(std::size_t n) {
  char digits[20];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n, 16);
  return std::string(digits, end) + "\r\n";
}

}  // namespace

void HttpSession::startStream(AppResponse r) {
  if (r.status < 200 || r.status == 204 || r.status == 304) {
    // A status that has no body (only a worker that breaks the protocol sends one streamed): no
    // body framing may follow its head, or a client would read the body as its next response.
    r.stream->abandon();
    if (cancelHandle_) context_.backend.cancel(cancelHandle_);
    r.stream.reset();
    r.failure = FailureKind::kHandlerError;
    r.failureDetail = "a streamed body for status " + std::to_string(r.status);
    logEvent(Level::kError, "response head refused",
             {{"app", app_}, {"request", requestId()}, {"error", r.failureDetail}});
    return respond(std::move(r));
  }
  streamPipe_ = std::move(r.stream);
  streamSent_ = 0;
  streamLength_ = declaredContentLength(r.headers);
  http::response<http::empty_body> head;
  setAnswerHead(head, r);
  streamKeep_ = keepAlive_ && !context_.stopping && !bodyOut_;
  streamIsEvents_ = isEventStream(r.headers);
  finishAfterWrite_ = false;
  streamChunked_ = false;
  if (streamLength_) {
    head.content_length(*streamLength_);
  } else if (version_ >= 11) {
    streamChunked_ = true;
    head.set(http::field::transfer_encoding, "chunked");
  } else {
    streamKeep_ = false;  // HTTP/1.0: the body ends when the connection does
  }
  head.keep_alive(streamKeep_);
  unmarkIdle();
  writing_ = true;
  if (auto* m = context_.options.metrics) m->streamsOpen.add(1);
  bool headOnly = isHead_;
  auto text = std::make_shared<std::string>();
  appendResponseHead(head, *text);
  armWriteTimer(Clock::now() + context_.options.sendTimeout);
  streamWriting_ = true;  // one write at a time: a stop's clean end waits for the head
  asio::async_write(
      socket_, asio::buffer(*text),
      [self = shared_from_this(), text, headOnly](beast::error_code ec, std::size_t) {
        self->disarmWriteTimer();
        self->guarded("stream head", [&] {
          self->streamWriting_ = false;
          if (ec) return self->cutStream("client", "the head could not be written");
          if (!self->streamPipe_) return;  // cut while the head was being written
          if (!headOnly && self->finishAfterWrite_ && self->finishEventStream()) return;
          if (headOnly) {
            // HEAD: the head of what GET gets. The app's stream is not read.
            if (self->cancelHandle_) self->context_.backend.cancel(self->cancelHandle_);
            self->streamPipe_->abandon();
            self->streamChunked_ = false;
            self->streamLength_.reset();
            return self->endStream();
          }
          // A strong reference: while the app produces nothing and the client sends nothing,
          // nothing else keeps the connection alive. endStream/cutStream break the cycle.
          self->streamPipe_->setReady([s = self] {
            asio::post(s->socket_.get_executor(),
                       [s] { s->guarded("stream", [&] { s->pumpStream(); }); });
          });
        });
      });
}

void HttpSession::pumpStream() {
  if (closed_ || streamWriting_ || !streamPipe_) return;
  std::vector<BodyPiece> pieces;
  std::size_t bytes = 0;
  BodyPiece piece;
  for (;;) {
    BodyPipe::Take t = streamPipe_->take(&piece);
    if (t == BodyPipe::Take::kPiece) {
      if (piece.empty()) continue;
      bytes += piece.size();
      pieces.push_back(std::move(piece));
      if (pieces.size() < kMaxPiecesPerWrite) continue;
      return writeStreamPieces(std::move(pieces), bytes, false);
    }
    if (t == BodyPipe::Take::kFailed) {
      // What came before the failure goes out first; the next pump sees the failure again.
      if (!pieces.empty()) return writeStreamPieces(std::move(pieces), bytes, false);
      // The backend stopped under an event stream at the end of a drain: a clean end.
      if (context_.refusing && finishEventStream()) return;
      return cutStream("failed", std::string(piece.bytes()));
    }
    if (t == BodyPipe::Take::kEnd) {
      // A body shorter than its Content-Length: what came still goes out before the cut (the end
      // stays in the pipe for the next pump).
      bool shortBody = streamLength_ && streamSent_ + bytes != *streamLength_;
      return writeStreamPieces(std::move(pieces), bytes, !(shortBody && bytes > 0));
    }
    // kEmpty: the pipe calls back when there is more.
    if (!pieces.empty()) writeStreamPieces(std::move(pieces), bytes, false);
    return;
  }
}

void HttpSession::writeStreamPieces(std::vector<BodyPiece> pieces, std::size_t bytes, bool last) {
  if (streamLength_ && streamSent_ + bytes > *streamLength_) {
    return cutStream("failed", "the body is longer than its Content-Length");
  }
  if (last && streamLength_ && streamSent_ + bytes != *streamLength_) {
    return cutStream("failed", "the body is shorter than its Content-Length");
  }
  // The pieces live until the write is done: a lent one goes back to its worker then.
  struct Batch {
    std::vector<BodyPiece> pieces;
    std::string chunkSize;
  };
  auto owned = std::make_shared<Batch>(Batch{std::move(pieces), {}});
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(owned->pieces.size() + 3);
  bool framed = streamChunked_ && bytes > 0;
  if (framed) {
    owned->chunkSize = chunkSize(bytes);
    buffers.push_back(asio::buffer(owned->chunkSize));
  }
  for (const BodyPiece& p : owned->pieces) {
    buffers.push_back(asio::buffer(p.bytes().data(), p.size()));
  }
  static const std::string kCrlf = "\r\n", kLastChunk = "0\r\n\r\n";
  if (framed) buffers.push_back(asio::buffer(kCrlf));
  if (streamChunked_ && last) buffers.push_back(asio::buffer(kLastChunk));
  if (buffers.empty()) return last ? endStream() : void();
  streamWriting_ = true;
  answerBytes_ = bytes;
  account();
  // A client that takes none of this for send_timeout loses the connection (and the app's
  // stream is cancelled); one that reads slowly holds one window of the server's memory.
  armWriteTimer(Clock::now() + context_.options.sendTimeout);
  asio::async_write(
      socket_, buffers,
      [self = shared_from_this(), owned, bytes, last](beast::error_code ec, std::size_t) {
        self->disarmWriteTimer();
        self->guarded("stream write", [&] {
          self->streamWriting_ = false;
          self->answerBytes_ = 0;
          self->account();
          if (ec) return self->cutStream("client", "the client stopped reading");
          self->streamSent_ += bytes;
          if (auto* m = self->context_.options.metrics) {
            m->streamBytes.inc(static_cast<double>(bytes));
          }
          if (self->streamPipe_) self->streamPipe_->acknowledge(bytes);
          if (last) return self->endStream();
          if (self->finishAfterWrite_ && self->finishEventStream()) return;
          self->pumpStream();
        });
      });
}

void HttpSession::endStream() {
  // The last write may complete after the stream was cut (the client went away meanwhile).
  if (!streamPipe_) return;
  if (auto* m = context_.options.metrics) m->streamsOpen.add(-1);
  streamPipe_->setReady(nullptr);
  streamPipe_.reset();
  afterWrite(streamKeep_);
}

void HttpSession::endEventStream() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->guarded("end event stream", [&] { self->finishEventStream(); });
  });
}

bool HttpSession::finishEventStream() {
  if (!streamPipe_ || !streamIsEvents_ || closed_ || (!streamChunked_ && streamLength_)) {
    return false;
  }
  if (streamWriting_) {
    finishAfterWrite_ = true;  // after this write, instead of the next
    return true;
  }
  finishAfterWrite_ = false;
  streamPipe_->abandon();
  if (cancelHandle_) context_.backend.cancel(cancelHandle_);
  cancelHandle_ = 0;
  streamKeep_ = false;
  // The last chunk (chunked), or nothing (HTTP/1.0: the body ends with the connection).
  writeStreamPieces({}, 0, true);
  return true;
}

void HttpSession::cutStream(const char* reason, const std::string& detail) {
  if (!streamPipe_) return closeNow();
  if (auto* m = context_.options.metrics) {
    m->streamsOpen.add(-1);
    m->streamsCut.with({reason}).inc();
  }
  logEvent(std::string_view(reason) == "client" ? Level::kDebug : Level::kWarn,
           "response stream cut",
           {{"app", app_}, {"request", requestId()}, {"reason", reason}, {"error", detail}});
  streamPipe_->abandon();
  streamPipe_.reset();
  if (cancelHandle_) context_.backend.cancel(cancelHandle_);
  cancelHandle_ = 0;
  busy_ = false;
  closeNow();  // no last chunk: the client sees the body incomplete
}

}  // namespace isolane

// HttpSession's answers (see http_session.h): an app's answer checked and charged to the client
// budget, the front's own (refusals, 404, 500, 503), and the write of either, bounded by
// send_timeout and an average rate; then the connection's next request, or its end.

#include <algorithm>
#include <array>
#include <string_view>

#include "front/http_session_impl.h"
#include "ipc/response_check.h"
#include "obs/log.h"

namespace isolane {

namespace {

// The slowest average rate at which a client may read an answer (after a first send_timeout).
constexpr std::size_t kMinSendBytesPerSecond = 16 * 1024;

}  // namespace

void HttpSession::refuseForBuffers(const char* what) {
  if (auto* m = context_.options.metrics) m->buffersFull.with({what}).inc();
  logEvent(Level::kWarn, "request refused: the bytes held for clients are at client_buffer_mb",
           {{"request", requestId()}, {"app", app_}, {"what", what}});
  if (bodyOut_) failBody("the server holds too much for its clients to read this body");
  if (writing_) return closeNow();
  busy_ = true;
  keepAlive_ = false;
  auto res = simpleResponse(503, "the server holds too much for its clients now; retry later\n",
                            requestId(), version_ ? version_ : 11);
  res->set(http::field::retry_after, "1");
  res->set("x-isolane-shed", "client-buffers-full");
  write(std::move(res));
}

void HttpSession::respond(AppResponse r) {
  // Already answered (a 500 after a failure of ours) or gone: the app's answer has nowhere to go.
  // A streamed one is told so, or its app would stream on into a pipe nobody reads.
  if (closed_ || writing_) {
    if (r.stream) {
      r.stream->abandon();
      if (cancelHandle_) context_.backend.cancel(cancelHandle_);
    }
    return;
  }
  if (r.failure == FailureKind::kClientGone) {
    // Dropped unrun because its client left: nobody to write to. Counted (status 499), closed.
    record(failureStatus(r.failure));
    return closeNow();
  }
  // The app failed after its client left: its signal was aborted, and with it what it awaited.
  // That failure is the client's leaving, not the app's: counted as 499. It is still written,
  // for a client that only closed its sending side (a write to one that is gone just fails).
  bool failedByLeaving = clientLeft_ && r.failure == FailureKind::kHandlerError;
  if (r.failure == FailureKind::kNone) {
    // The master does not trust a worker: what goes on the wire is checked here too, for every
    // backend, before Beast (which would throw on a status past 999) ever sees it.
    if (auto bad = checkResponseHead(r)) {
      logEvent(Level::kError, "response head refused",
               {{"app", app_}, {"request", requestId()}, {"error", *bad}});
      r = AppResponse::failed(FailureKind::kHandlerError, "response head refused: " + *bad);
    }
  }
  if (r.failure == FailureKind::kNone && !r.stream && !isHead_) {
    // The whole answer is held until the client has read it: charged to the client budget (by
    // the backend already, as it arrived from a worker: that charge comes with it).
    if (r.clientCharge && r.clientCharge->bytes() == r.body.size()) {
      answerCharge_ = std::move(*r.clientCharge);
    } else {
      answerCharge_ = ByteCharge::take(context_.options.clientBuffers, r.body.size());
    }
    if (!answerCharge_) {
      if (auto* m = context_.options.metrics) m->buffersFull.with({"answer"}).inc();
      logEvent(Level::kWarn, "answer dropped: the bytes held for clients are at client_buffer_mb",
               {{"request", requestId()}, {"app", app_}, {"bytes", r.body.size()}});
      r = AppResponse::shed("client-buffers-full",
                            "the answer does not fit in what the server may hold for clients");
    }
  }
  if (r.stream && r.failure == FailureKind::kNone) {
    // A stream holds at most its window (and a piece) here: charged from its start to its end.
    streamCharge_ =
        ByteCharge::take(context_.options.clientBuffers, kStreamWindowBytes + kStreamPieceBytes);
    if (!streamCharge_) {
      if (auto* m = context_.options.metrics) m->buffersFull.with({"stream"}).inc();
      r.stream->abandon();
      if (cancelHandle_) context_.backend.cancel(cancelHandle_);
      r.stream.reset();
      r = AppResponse::shed("client-buffers-full",
                            "the stream does not fit in what the server may hold for clients");
    }
  }
  record(failedByLeaving ? failureStatus(FailureKind::kClientGone) : r.status);
  if (r.stream && r.failure == FailureKind::kNone) return startStream(std::move(r));
  if (r.stream) {  // refused above: its body goes nowhere, and its app stops producing it
    r.stream->abandon();
    if (cancelHandle_) context_.backend.cancel(cancelHandle_);
  }
  if (r.failure != FailureKind::kNone) {
    auto res = failureResponse(r, requestId(), version_);
    if (r.failure == FailureKind::kOverloaded || r.failure == FailureKind::kShuttingDown ||
        r.failure == FailureKind::kIsolateRecycled) {
      res->set(http::field::retry_after, "1");
    }
    if (!r.shedReason.empty()) res->set("x-isolane-shed", r.shedReason);
    return write(std::move(res));
  }
  auto res = std::make_shared<StringResponse>();
  setAnswerHead(*res, r);
  bool noBody = r.status == 204 || r.status == 304;
  if (noBody) {
    // nothing: no Content-Length either
  } else if (isHead_) {
    res->content_length(r.body.size());
  } else {
    res->body() = std::move(r.body);
    res->prepare_payload();
  }
  write(std::move(res));
}

void HttpSession::record(int status) {
  if (!figures_ || app_.empty()) return;  // no metrics, or not routed
  figures_->record(status, std::chrono::duration<double>(Clock::now() - started_).count());
}

void HttpSession::refuse(const RequestError& error) {
  if (auto* m = context_.options.metrics) m->badRequests.with({error.code}).inc();
  if (bodyOut_) {
    // A streamed body went bad (too large, malformed chunks): the app's body stream errors, and
    // the client gets the error unless the app's answer has started.
    failBody(error.message);
    if (writing_) return closeNow();
  }
  logEvent(Level::kDebug, "request refused",
           {{"request", requestId()},
            {"status", static_cast<int>(error.status)},
            {"reason", error.code},
            {"error", error.message}});
  busy_ = true;
  sendSimple(error.status, error.message + "\n", true);
}

void HttpSession::sendSimple(unsigned status, std::string body, bool close) {
  if (close) keepAlive_ = false;
  write(simpleResponse(status, std::move(body), requestId(), version_ ? version_ : 11));
}

void HttpSession::write(std::shared_ptr<StringResponse> res) {
  unmarkIdle();
  // HEAD: the head of what GET would get, never a body (Content-Length is already set).
  if (isHead_) res->body().clear();
  // Answered before its body was all read: the rest is not read, so the connection ends.
  bool keep = keepAlive_ && !context_.stopping && !bodyOut_;
  res->keep_alive(keep);
  writing_ = true;
  // The whole answer must go out at kMinSendBytesPerSecond on average (after a first
  // send_timeout): a client that reads a trickle cannot hold a connection and its answer's
  // memory for hours.
  sendDeadline_ = Clock::now() + context_.options.sendTimeout +
                  std::chrono::seconds(res->body().size() / kMinSendBytesPerSecond);
  answerBytes_ = res->body().size();
  account();
  // The head, and a small body behind it, in one buffer: most answers leave in one piece. A
  // larger body is written from where it is.
  wire_.clear();
  appendResponseHead(res->base(), wire_);
  if (res->body().size() <= kAnswerInlineBytes) {
    wire_.append(res->body());
  } else {
    answer_ = std::move(res);
  }
  wireSent_ = 0;
  writeSome(keep);
}

void HttpSession::writeSome(bool keep) {
  // A client that reads nothing for send_timeout loses the connection; one that reads slowly
  // but steadily does not, up to the answer's deadline.
  armWriteTimer(std::min(Clock::now() + context_.options.sendTimeout, sendDeadline_));
  std::string_view body = answer_ ? std::string_view(answer_->body()) : std::string_view();
  std::size_t headLeft = wireSent_ < wire_.size() ? wire_.size() - wireSent_ : 0;
  std::size_t bodyFrom = wireSent_ - (wire_.size() - headLeft);
  std::array<asio::const_buffer, 2> parts{
      asio::const_buffer(wire_.data() + wire_.size() - headLeft, headLeft),
      asio::const_buffer(body.data() + bodyFrom, body.size() - bodyFrom)};
  socket_.async_write_some(parts, [self = shared_from_this(), keep](beast::error_code ec,
                                                                    std::size_t n) {
    self->disarmWriteTimer();
    self->guarded("write", [&] {
      if (ec) {
        self->busy_ = false;
        return self->closeNow();
      }
      self->wireSent_ += n;
      std::size_t total =
          self->wire_.size() + (self->answer_ ? self->answer_->body().size() : 0);
      if (self->wireSent_ < total) return self->writeSome(keep);
      self->afterWrite(keep);
    });
  });
}

void HttpSession::afterWrite(bool keep) {
  if (bodyOut_) {
    // Answered before its body was all read: the rest is not read, the connection ends.
    failBody("the response was sent before the request body was read");
    keep = false;
  }
  busy_ = false;
  writing_ = false;
  answer_.reset();
  // A buffer past kKeptWireBytes (a head with many fields) is not kept for the next answer: an
  // idle connection holds only a small one.
  if (wire_.capacity() > kKeptWireBytes) std::string().swap(wire_);
  answerBytes_ = 0;
  answerCharge_.reset();
  streamCharge_.reset();
  account();
  cancelHandle_ = 0;
  // An answer that went out saying keep-alive (the stop began while it was written) keeps its
  // word: the client may already be sending on this connection. It is then idle, and the drain
  // closes it after drain_idle_ms (or serves its next request with Connection: close).
  if (!keep) {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    closed_ = true;
    clock_.stop();
    socket_.close(ignored);
    return;
  }
  readRequest(/*first=*/false);
}

}  // namespace isolane

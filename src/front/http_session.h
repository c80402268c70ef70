#pragma once
// HttpSession: one client connection. Reads requests with a RequestReader (strict parsing, every
// held byte bounded), hands each to the Backend, writes its answer, and keeps the connection's
// clocks: a head must arrive within header_timeout, a body may not stall longer than
// body_read_timeout between bytes nor take longer than body_timeout in all, an answer the client
// does not read for send_timeout ends the connection. Requests are answered one at a time: a
// pipelined request is read only once the previous answer is written, so unread requests wait in
// the kernel's socket buffer and TCP flow control, not in server memory.
//
// Thread rule: everything runs on the connection's strand, except reclaim() and close(), which
// post to it. No exception leaves a handler: a failure answers the request with a 500 (or
// closes the connection) and is logged.

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
// clang-format on
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "front/connection_clock.h"
#include "front/http_server.h"
#include "front/idle_connections.h"
#include "front/request_reader.h"
#include "front/responses.h"
#include "front/session_socket.h"
#include "ipc/body_pipe.h"

namespace isolane {

// What the sessions of one listener share.
struct FrontContext {
  FrontContext(HttpServerOptions o, const Router& r, Backend& b)
      : options(std::move(o)), router(r), backend(b) {}
  const HttpServerOptions options;
  const Router& router;
  Backend& backend;
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> requestsInFlight{0};
  std::atomic<bool> stopping{false};  // draining: nothing accepted, nothing kept alive
  std::atomic<bool> refusing{false};  // the drain is over: new requests are answered 503
  IdleConnections idle;
};

class HttpSession final : public IdleConnection, public std::enable_shared_from_this<HttpSession> {
 public:
  // A request body up to this, all of it read with the head, goes inline with the request
  // (one stream piece's worth: it would have gone as one piece anyway).
  static constexpr std::size_t kInlineBodyBytes = kStreamPieceBytes;

  // `contextOwner` keeps `context` alive for as long as the session is (its handlers may still
  // be queued on a reactor its server does not own, after the server is gone).
  HttpSession(SessionSocket socket, FrontContext& context,
              std::shared_ptr<const void> contextOwner = {});
  ~HttpSession() override;

  void start();
  // Safe from any thread. Closes the connection on its strand unless a request is being
  // answered; such a connection closes itself once its answer is written (the server is
  // stopping, so it is not kept alive).
  void close();
  // Safe from any thread (IdleConnection).
  void reclaim() override;
  // Safe from any thread. At the end of a stop's drain: an event stream (text/event-stream) still
  // being written gets its last chunk, so its client sees a clean end and reconnects elsewhere;
  // the app's side of it is cancelled. Other connections are left alone.
  void endEventStream();

 private:
  using Clock = std::chrono::steady_clock;

  void readRequest(bool first);
  void parseBuffered();
  void readMore();
  void armReadTimer(Clock::time_point deadline);
  // The write about to start must end by `deadline`; its completion disarms it.
  void armWriteTimer(Clock::time_point deadline) {
    clock_.set(ConnectionClock::Deadline::kWrite, deadline);
  }
  void disarmWriteTimer() { clock_.clear(ConnectionClock::Deadline::kWrite); }
  // A deadline of clock_ has passed, with its read or write still pending.
  void onDeadline(ConnectionClock::Deadline which);
  void onRead(boost::beast::error_code ec, std::size_t n);
  void onHead();
  void dispatch();
  // Routes the current request and hands it to the backend; with `bodyStream`, its body follows
  // through that pipe as it arrives (http_session_upload.cc). False when it was answered here.
  bool submitRequest(std::shared_ptr<BodyPipe> bodyStream);
  // A request body streamed to the backend (http_session_upload.cc): started at the head, fed as
  // bytes are parsed, paused while the backend holds a window of it unread.
  void startBodyStream();
  bool forwardBody();  // false when the request was failed instead
  bool bodyWindowFull() const;
  void pauseBody();
  void onBodyCredit();
  void failBody(const std::string& why);
  void probe();
  void onProbe(boost::beast::error_code ec, std::size_t n);
  // Answers (http_session_answer.cc): the app's, checked and charged to the client budget, or the
  // front's own; each written under send_timeout, then the next request is read.
  void respond(AppResponse r);
  void refuse(const RequestError& error);
  void sendSimple(unsigned status, std::string body, bool close);
  void write(std::shared_ptr<StringResponse> res);
  void writeSome(bool keep);
  void afterWrite(bool keep);
  void record(int status);
  // A streamed body (http_session_stream.cc): the head at once, then each piece as the backend
  // produces it (chunked on HTTP/1.1, the app's Content-Length when it gave one, else until the
  // connection closes), acknowledged to the backend as the socket takes it.
  void startStream(AppResponse r);
  void pumpStream();
  void writeStreamPieces(std::vector<BodyPiece> pieces, std::size_t bytes, bool last);
  void endStream();
  // endEventStream on the strand; false when this is not an event stream being written.
  bool finishEventStream();
  // The stream ends before its end: the client went away, or its producer failed.
  void cutStream(const char* reason, const std::string& detail);
  void markIdle();
  void unmarkIdle();
  void closeNow();
  // Brings isolane_http_buffered_bytes up to date with what this connection holds now, and
  // charges what it holds of the client's input to the client budget (options.clientBuffers).
  // False when the budget has not got room for that input: the caller refuses the request.
  bool account();
  // The client budget is full: 503 + Retry-After (x-isolane-shed: client-buffers-full) for the
  // current request, counted by what did not fit.
  void refuseForBuffers(const char* what);
  const std::string& requestId();
  // isolane's own headers on an app's answer, each only where the app set none: the app's win.
  // Today one: x-request-id.
  template <typename Message>
  void addOwnHeaders(Message& message) {
    if (message.find("x-request-id") == message.end()) message.set("x-request-id", requestId());
  }
  // The head of an app's answer (whole or streamed): its status, its headers but the hop-by-hop
  // ones (the connection's own), and isolane's.
  template <typename Message>
  void setAnswerHead(Message& message, const AppResponse& r) {
    message.version(version_);
    message.result(static_cast<unsigned>(r.status));
    if (!r.statusText.empty()) message.reason(r.statusText);
    for (const auto& [name, value] : r.headers) {
      if (!isHopByHopHeader(name)) message.insert(name, value);
    }
    addOwnHeaders(message);
  }
  // The client's address for the app, in X-Forwarded-For and X-Real-IP: a trusted proxy's are
  // passed as it sent them (it saw the client); from any other peer, the peer's address replaces
  // whatever it sent.
  void setClientAddress(HeaderList& headers) const;
  // Takes the request's X-Request-Id as its id when the peer is a trusted proxy.
  void adoptRequestId(const RequestHead& head);

  // Runs `f`; an exception it throws answers the current request with a 500 when nothing was
  // written for it yet, else closes the connection, and is logged.
  template <typename F>
  void guarded(const char* where, F&& f) noexcept;
  void onUnexpected(const char* where, const char* what) noexcept;

  SessionSocket socket_;
  // The deadlines of the read and the write under way (onDeadline). A read that misses its
  // deadline is cancelled, and a body that stalls is answered 408 before the connection ends; a
  // write that misses its deadline closes the socket.
  ConnectionClock clock_;
  bool readTimedOut_ = false;
  bool firstRequest_ = true;          // the connection's first request (see readRequest)
  const std::shared_ptr<const void> contextOwner_;
  FrontContext& context_;
  boost::beast::flat_buffer buffer_;
  RequestReader reader_;
  bool keepAlive_ = false;
  bool busy_ = false;              // from dispatch until the answer is written
  bool writing_ = false;           // an answer to the current request is being written
  bool probing_ = false;       // the probe's read is pending (see probe())
  bool probeAdopted_ = false;  // ... and is the next request's read now (the answer is out)
  std::array<char, 1024> probeBytes_{};  // what the probe read, until it joins buffer_
  bool closed_ = false;
  bool clientLeft_ = false;  // the probe saw the client go while the app worked on its request
  bool peerTrusted_ = false;  // the peer is one of options.trustedProxies
  std::string peerAddress_;   // the peer's address (IPv4-mapped ones as IPv4); "" if unknown
  std::uint64_t cancelHandle_ = 0;
  std::uint64_t idleKey_ = 0;  // in context_.idle while nonzero
  bool isHead_ = false;
  unsigned version_ = 11;
  std::string requestId_;  // made when the request (or the answer to a bad one) starts
  std::string app_;        // the app answering the current request ("" before routing)
  // The figures of the app this connection last routed to: found again only when a request
  // goes to another app.
  AppFigures* figures_ = nullptr;
  Clock::time_point started_;
  Clock::time_point headDeadline_;
  Clock::time_point bodyDeadline_;
  Clock::time_point sendDeadline_;
  std::size_t answerBytes_ = 0;  // the answer being written
  // What write() writes: the answer's head (appendResponseHead) and, up to kAnswerInlineBytes, its
  // body, in one buffer; a larger body from the answer itself; and how much of the two is out.
  static constexpr std::size_t kAnswerInlineBytes = 1024;
  static constexpr std::size_t kKeptWireBytes = 2048;
  std::string wire_;
  std::shared_ptr<StringResponse> answer_;
  std::size_t wireSent_ = 0;
  // The streamed body being written (null otherwise).
  std::shared_ptr<BodyPipe> streamPipe_;
  bool streamChunked_ = false;
  bool streamKeep_ = false;
  bool streamWriting_ = false;
  bool streamIsEvents_ = false;                // Content-Type text/event-stream
  bool finishAfterWrite_ = false;              // endEventStream arrived during a write
  std::optional<std::uint64_t> streamLength_;  // the app's Content-Length, when it gave one
  std::uint64_t streamSent_ = 0;
  // The request body being streamed to the backend (null otherwise), and whether reading it is
  // paused because the backend has a window of it unread.
  std::shared_ptr<BodyPipe> bodyOut_;
  bool bodyPaused_ = false;
  Clock::time_point bodyPausedAt_;
  std::size_t heldBytes_ = 0;  // last reported to the gauge
  // What this connection has charged to the client budget: its input (unparsed bytes, request
  // body not yet read by the app), the whole answer being written, a streamed answer's window.
  ByteCharge inputCharge_;
  ByteCharge answerCharge_;
  ByteCharge streamCharge_;
};

template <typename F>
void HttpSession::guarded(const char* where, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    onUnexpected(where, e.what());
  } catch (...) {
    onUnexpected(where, "unknown exception");
  }
}

}  // namespace isolane

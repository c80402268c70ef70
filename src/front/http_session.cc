#include "front/http_session_impl.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "front/request_id.h"
#include "obs/log.h"

namespace isolane {

namespace {

constexpr std::size_t kReadBytes = 64 * 1024;

}  // namespace

namespace {

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d, how a dual-stack listener sees an IPv4 peer) as
// the IPv4 address it maps, so that either form in trusted_proxies matches either form of peer.
boost::asio::ip::address withoutV4Mapping(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  }
  return a;
}

}  // namespace

HttpSession::HttpSession(SessionSocket socket, FrontContext& context,
                         std::shared_ptr<const void> contextOwner)
    : socket_(std::move(socket)),
      clock_(socket_.get_executor(), [this](ConnectionClock::Deadline which) { onDeadline(which); }),
      contextOwner_(std::move(contextOwner)),
      context_(context),
      reader_(RequestLimits{context.options.maxHeaderBytes, context.options.maxBodyBytes}),
      inputCharge_(ByteCharge::take(context.options.clientBuffers, 0)) {
  ++context_.connections;
  if (auto* m = context_.options.metrics) m->connections.add(1);
  boost::system::error_code ec;
  auto peer = withoutV4Mapping(socket_.remote_endpoint(ec).address());
  if (!ec) {
    peerAddress_ = peer.to_string();
    for (const auto& trusted : context_.options.trustedProxies) {
      if (withoutV4Mapping(trusted) == peer) peerTrusted_ = true;
    }
  }
}

HttpSession::~HttpSession() {
  if (idleKey_) context_.idle.remove(idleKey_);
  --context_.connections;
  if (auto* m = context_.options.metrics) {
    m->connections.add(-1);
    m->bufferedBytes.add(-static_cast<double>(heldBytes_));
  }
}

bool HttpSession::account() {
  // A streamed request body counts until the app has read it (it is then the app's memory).
  std::size_t input =
      buffer_.size() + reader_.bodyBytes() + (bodyOut_ ? bodyOut_->unacknowledgedBytes() : 0);
  bool fits = inputCharge_.resize(input);
  std::size_t now = input + answerBytes_;
  auto* m = context_.options.metrics;
  if (m && now != heldBytes_) {
    m->bufferedBytes.add(static_cast<double>(now) - static_cast<double>(heldBytes_));
    heldBytes_ = now;
  }
  return fits;
}

void HttpSession::onUnexpected(const char* where, const char* what) noexcept {
  try {
    logEvent(Level::kError, "unexpected failure on a connection",
             {{"where", where}, {"error", what}, {"request", requestId_}, {"app", app_}});
    if (auto* m = context_.options.metrics) m->internalErrors.inc();
    if (closed_ || writing_ || !socket_.is_open()) return closeNow();
    // Nothing of an answer went out yet: this request gets a 500 and the connection ends. If the
    // backend is still working on it, its answer will find the request already answered.
    if (cancelHandle_ != 0) context_.backend.cancel(cancelHandle_);
    busy_ = true;
    sendSimple(500, "internal server error (request id " + requestId() + ")\n", true);
  } catch (...) {
    closeNow();
  }
}

void HttpSession::start() {
  clock_.setOwner(weak_from_this());
  guarded("start", [&] { readRequest(/*first=*/true); });
}

void HttpSession::close() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (!self->busy_) self->closeNow();
  });
}

void HttpSession::reclaim() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    // Still waiting for its next request, with nothing of it read: make room for a new client.
    if (!self->busy_ && self->idleKey_ && self->buffer_.size() == 0) {
      self->idleKey_ = 0;  // already taken off the list by the acceptor
      if (auto* m = self->context_.options.metrics) m->idleClosed.inc();
      self->closeNow();
    }
  });
}

void HttpSession::closeNow() {
  if (bodyOut_) failBody("the connection closed before the request body was complete");
  if (streamPipe_) return cutStream("client", "the connection closed");
  if (closed_) return;
  closed_ = true;
  answerCharge_.reset();
  streamCharge_.reset();
  unmarkIdle();
  clock_.stop();
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void HttpSession::markIdle() {
  if (idleKey_ == 0) idleKey_ = context_.idle.add(weak_from_this());
}

void HttpSession::unmarkIdle() {
  if (idleKey_ != 0) {
    context_.idle.remove(idleKey_);
    idleKey_ = 0;
  }
}

void HttpSession::adoptRequestId(const RequestHead& head) {
  if (!peerTrusted_ || !requestId_.empty()) return;
  const std::string* found = nullptr;
  for (const auto& [name, value] : head.headers) {
    if (!beast::iequals(name, "x-request-id")) continue;
    if (found) return;  // two ids: neither is the proxy's for sure
    found = &value;
  }
  if (found && isWellFormedRequestId(*found)) requestId_ = *found;
}

void HttpSession::setClientAddress(HeaderList& headers) const {
  auto named = [](const auto& h, std::string_view name) {
    return beast::iequals(beast::string_view(h.first.data(), h.first.size()),
                          beast::string_view(name.data(), name.size()));
  };
  bool hasForwarded = false, hasRealIp = false;
  if (peerTrusted_) {
    for (const auto& h : headers) {
      hasForwarded = hasForwarded || named(h, "x-forwarded-for");
      hasRealIp = hasRealIp || named(h, "x-real-ip");
    }
  } else {
    // A client's own forwarding headers would let it pass for any address (or host, or scheme):
    // only a trusted proxy may say what it forwarded.
    std::erase_if(headers, [&](const auto& h) {
      return named(h, "x-forwarded-for") || named(h, "x-real-ip") || named(h, "forwarded") ||
             named(h, "x-forwarded-host") || named(h, "x-forwarded-proto") ||
             named(h, "x-forwarded-prefix");
    });
  }
  if (peerAddress_.empty()) return;
  if (!hasForwarded) headers.emplace_back("x-forwarded-for", peerAddress_);
  if (!hasRealIp) headers.emplace_back("x-real-ip", peerAddress_);
}

const std::string& HttpSession::requestId() {
  if (requestId_.empty()) requestId_ = newRequestId();
  return requestId_;
}

void HttpSession::readRequest(bool first) {
  reader_.reset();
  requestId_.clear();
  app_.clear();
  isHead_ = false;
  writing_ = false;
  clientLeft_ = false;
  // A fresh connection's head must be complete within header_timeout of its accept
  // (slow-client defence); a keep-alive connection may sit idle for idle_timeout before its next
  // request starts, whose head then gets header_timeout from its first byte.
  firstRequest_ = first;
  headDeadline_ = Clock::now() + (first || buffer_.size() > 0 ? context_.options.headerTimeout
                                                              : context_.options.idleTimeout);
  parseBuffered();
}

void HttpSession::parseBuffered() {
  RequestReader::Event event = reader_.parse(buffer_);
  if (bodyOut_ && event == RequestReader::Event::kNeedMore && !forwardBody()) return;
  if (!account()) return refuseForBuffers("input");
  switch (event) {
    case RequestReader::Event::kNeedMore:
      if (bodyOut_ && bodyWindowFull()) return pauseBody();
      return readMore();
    case RequestReader::Event::kHead:
      return onHead();
    case RequestReader::Event::kComplete:
      return dispatch();
    case RequestReader::Event::kError:
      return refuse(reader_.error());
  }
}

void HttpSession::readMore() {
  if (reader_.atRequestStart() && buffer_.size() == 0) {
    markIdle();
  } else {
    unmarkIdle();
  }
  std::size_t limit = reader_.bufferLimit();
  std::size_t room = limit > buffer_.size() ? limit - buffer_.size() : 0;
  if (room == 0) {  // parse() refuses a buffer this full; never read past the bound
    return refuse(RequestError{431, "request header fields too large", "header-too-large"});
  }
  auto now = Clock::now();
  if (reader_.readingBody()) {
    // A body may stall between bytes for body_read_timeout at most, and take body_timeout in all.
    armReadTimer(std::min(bodyDeadline_, now + context_.options.bodyReadTimeout));
  } else {
    armReadTimer(headDeadline_);
  }
  if (probing_) {  // the probe's read is still pending: it is this one (see probe())
    probeAdopted_ = true;
    return;
  }
  socket_.async_read_some(buffer_.prepare(std::min(room, kReadBytes)),
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            self->guarded("read", [&] { self->onRead(ec, n); });
                          });
}

void HttpSession::armReadTimer(Clock::time_point deadline) {
  readTimedOut_ = false;
  clock_.set(ConnectionClock::Deadline::kRead, deadline);
}

void HttpSession::onDeadline(ConnectionClock::Deadline which) {
  if (closed_) return;
  beast::error_code ignored;
  if (which == ConnectionClock::Deadline::kRead) {
    // The read completes as cancelled (or, if its bytes were already in, as late): onRead.
    readTimedOut_ = true;
    socket_.cancel(ignored);
  } else {
    // The write completes with an error, and its handler ends the answer and the connection.
    socket_.close(ignored);
  }
}

void HttpSession::onRead(beast::error_code ec, std::size_t n) {
  clock_.clear(ConnectionClock::Deadline::kRead);
  if (readTimedOut_ && !ec) ec = beast::error::timeout;  // the bytes came, but too late
  if (ec) {
    if (readTimedOut_ && reader_.readingBody()) {
      if (bodyOut_) {
        failBody("the request body was not received in time");
        if (writing_) return closeNow();
      }
      return sendSimple(408, "the request body was not received in time\n", true);
    }
    if (bodyOut_) failBody("the client went away before its request body was complete");
    // End of stream, reset, or a head that did not come in time: close without a word, as
    // servers do.
    return closeNow();
  }
  if (n > 0 && reader_.atRequestStart() && idleKey_) {
    unmarkIdle();
    // A keep-alive connection's next request has started: its head gets header_timeout from now.
    if (!firstRequest_) headDeadline_ = Clock::now() + context_.options.headerTimeout;
  }
  buffer_.commit(n);
  parseBuffered();
}

void HttpSession::onHead() {
  unmarkIdle();
  const RequestHead& head = reader_.head();
  isHead_ = head.isHead;
  version_ = head.version;
  keepAlive_ = head.keepAlive;
  bodyDeadline_ = Clock::now() + context_.options.bodyTimeout;
  // While the server drains, a request on an open connection is still served (and the connection
  // then closed); once the drain is over it is refused.
  if (context_.refusing) return sendSimple(503, "the server is shutting down\n", true);
  if (head.expectContinue && head.version >= 11) {
    // curl and others wait for this before sending a large body.
    auto self = shared_from_this();
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    armWriteTimer(Clock::now() + context_.options.sendTimeout);
    asio::async_write(socket_, asio::buffer(kContinue), [self](beast::error_code ec, std::size_t) {
      self->disarmWriteTimer();
      self->guarded("continue", [&] {
        if (ec) return self->closeNow();
        // Handed over only now: the app's answer must not be written while "100 Continue" is.
        if (self->reader_.hasBody()) {
          self->startBodyStream();
          if (!self->bodyOut_) return;
        }
        self->parseBuffered();
      });
    });
    return;
  }
  // A request with a body goes to the backend now; its body follows as it arrives. One whose
  // body is small and came with its head (a typical API call) goes whole once it is parsed: no
  // stream, no pieces, no credit, no extra turn for the app to read it.
  if (reader_.hasBody() && !reader_.bodyWhollyIn(buffer_, kInlineBodyBytes)) {
    startBodyStream();
    if (!bodyOut_) return;
  }
  parseBuffered();
}

// The whole request is in. A request whose body was streamed was handed over at its head: its
// body ends now. Any other goes to the backend now.
void HttpSession::dispatch() {
  if (bodyOut_) {
    if (!forwardBody()) return;
    bodyOut_->end();
    bodyOut_.reset();
    account();
    return probe();
  }
  if (submitRequest(nullptr)) probe();
}

bool HttpSession::submitRequest(std::shared_ptr<BodyPipe> bodyStream) {
  const RequestHead& head = reader_.head();
  std::string_view host = head.host.empty() ? std::string_view("localhost") : head.host;
  started_ = Clock::now();
  adoptRequestId(head);
  const std::string& id = requestId();
  if (context_.options.internal) {
    std::string_view target = head.target;
    if (auto reply = context_.options.internal(target.substr(0, target.find('?')))) {
      busy_ = true;
      if (bodyStream) keepAlive_ = false;  // its body is not read
      if (reply->stream) {
        AppResponse r;
        r.status = static_cast<int>(reply->status);
        r.headers = {{"content-type", reply->contentType}, {"cache-control", "no-store"}};
        r.stream = std::move(reply->stream);
        startStream(std::move(r));
        return false;
      }
      auto res = simpleResponse(reply->status, std::move(reply->body), id, version_);
      res->set(http::field::content_type, reply->contentType);
      write(std::move(res));
      return false;
    }
  }
  std::optional<Route> route = context_.router.resolve(host, head.target);
  if (!route) {
    busy_ = true;
    sendSimple(404, "no app is mounted at this path\n", bodyStream != nullptr);
    return false;
  }

  AppRequest out;
  out.app = route->mount->app;
  out.streaming = route->mount->streaming;
  app_ = out.app;
  if (context_.options.metrics && (!figures_ || figures_->app() != out.app)) {
    figures_ = &context_.options.metrics->app(out.app);
  }
  out.requestId = id;
  out.method = head.method;
  out.url = "http://" + std::string(host) + route->path;
  out.headers = reader_.takeHeaders();
  setClientAddress(out.headers);  // first: it drops an untrusted peer's x-forwarded-prefix
  if (route->mount->stripPrefix && route->mount->prefix != "/") {
    // Ours replaces any the client sent: an app may trust it to build its links.
    std::erase_if(out.headers, [](const auto& h) {
      return beast::iequals(beast::string_view(h.first.data(), h.first.size()),
                            "x-forwarded-prefix");
    });
    out.headers.emplace_back("x-forwarded-prefix", route->mount->prefix);
  }
  if (bodyStream) {
    out.bodyStream = std::move(bodyStream);  // the body follows as it arrives
  } else {
    out.body = reader_.takeBody();  // the backend holds it from here on
  }
  account();

  ++context_.requestsInFlight;
  busy_ = true;
  auto self = shared_from_this();
  cancelHandle_ = context_.backend.submit(std::move(out), [self](AppResponse response) {
    asio::post(self->socket_.get_executor(), [self, r = std::move(response)]() mutable {
      --self->context_.requestsInFlight;
      self->guarded("respond", [&] { self->respond(std::move(r)); });
    });
  });
  return true;
}

// While the app works, a read is kept pending on the socket: its end means the client went
// away, and the app's request.signal is aborted. Bytes mean the client is alive and its next
// request (pipelined, or sent once it has the answer) is arriving: they are kept for it, and no
// more is read until the answer is out. Once it is, the pending read simply becomes the next
// request's (readMore adopts it): no wait for readability that has to be cancelled, no second
// read, no peek (each a system call per request).
void HttpSession::probe() {
  if (buffer_.size() > 0 || cancelHandle_ == 0 || closed_) return;
  probing_ = true;
  socket_.async_read_some(
      asio::buffer(probeBytes_), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
        self->guarded("probe", [&] { self->onProbe(ec, n); });
      });
}

void HttpSession::onProbe(beast::error_code ec, std::size_t n) {
  probing_ = false;
  if (n > 0) {  // into the request buffer, where the reader parses from (committed below)
    auto room = buffer_.prepare(n);
    std::memcpy(room.data(), probeBytes_.data(), n);
  }
  if (probeAdopted_) {
    probeAdopted_ = false;
    return onRead(ec, n);
  }
  buffer_.commit(n);
  account();  // at most a probe's worth: parsed, and bounded, once the answer is out
  if (ec && ec != asio::error::operation_aborted && busy_ && !closed_) {
    // End of stream or a reset while the app works: its client is gone.
    clientLeft_ = true;
    if (streamPipe_) return cutStream("client", "the client closed the connection");
    context_.backend.cancel(cancelHandle_);
  }
}

}  // namespace isolane

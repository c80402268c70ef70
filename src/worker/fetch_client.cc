#include "worker/fetch_client.h"

#include "ipc/response_check.h"
#include "obs/log.h"
#include "util/close_on_exec.h"
#include "util/http_grammar.h"

#include <openssl/ssl.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace isolane {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// An idle keep-alive connection to an http: origin, for the next exchange with it. Reusing
// connections keeps a busy app from opening (and leaving in TIME_WAIT) one socket per fetch,
// which runs a machine out of ephemeral ports at a few thousand fetches a second.
struct IdleConnection {
  tcp::socket socket;
  tcp::endpoint remote;
  std::chrono::steady_clock::time_point since;
};

struct FetchClient::Impl {
  asio::io_context io;
  // key "poolKey\nhost:port" -> idle connections, newest last (reactor thread only)
  std::unordered_map<std::string, std::vector<IdleConnection>> idle;
  std::size_t idleCount = 0;
  static constexpr std::size_t kMaxIdle = 256;
  static constexpr std::size_t kMaxIdlePerOrigin = 64;
  // Servers commonly drop idle connections after 5 s; reuse only younger ones.
  static constexpr std::chrono::seconds kIdleFor{4};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  // Made on the first https fetch (reactor thread only), not at start: loading the system's CA
  // store takes 3-8 ms, which every worker start would pay for apps that may never use it.
  std::optional<ssl::context> tls;
  ssl::context& tlsContext() {
    if (!tls) {
      tls.emplace(ssl::context::tls_client);
      tls->set_default_verify_paths();
    }
    return *tls;
  }
  std::unordered_map<std::uint64_t, std::shared_ptr<FetchClient::Op>> ops;  // reactor thread only
  std::thread thread;
};

namespace {

struct ParsedUrl {
  bool https = false;
  std::string host;  // without brackets
  std::uint16_t port = 80;
  std::string target = "/";
  std::string hostHeader;
};

// The URL comes from the JavaScript fetch(), parsed and serialized by the WHATWG URL parser; this
// splits it, and refuses anything that parser would not have produced.
std::optional<ParsedUrl> splitUrl(const std::string& url) {
  ParsedUrl u;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    u.https = true;
    u.port = 443;
    rest = url.substr(8);
  } else {
    return std::nullopt;
  }
  auto slash = rest.find_first_of("/?#");
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (auto hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  if (u.target.empty() || u.target[0] != '/') u.target.insert(u.target.begin(), '/');
  if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  u.hostHeader = authority;
  std::string portText;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') portText = authority.substr(close + 2);
  } else {
    auto colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) portText = authority.substr(colon + 1);
  }
  if (u.host.empty()) return std::nullopt;
  // The JavaScript parser's output is not trusted (an app can rewrite what it runs on): what goes
  // into the request line and Host header must be a valid origin-form target and host.
  if (!http_grammar::isOriginForm(u.target) || !http_grammar::isHostHeader(u.hostHeader)) {
    return std::nullopt;
  }
  if (!portText.empty()) {
    char* end = nullptr;
    long p = std::strtol(portText.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) return std::nullopt;
    u.port = static_cast<std::uint16_t>(p);
  }
  return u;
}

bool skipRequestHeader(std::string_view name) {
  for (const char* n : {"host", "content-length", "transfer-encoding", "connection", "keep-alive",
                        "upgrade", "te", "trailer", "proxy-connection"}) {
    if (beast::iequals(beast::string_view(name.data(), name.size()), n)) return true;
  }
  return false;
}

}  // namespace

// One exchange. Lives on the reactor thread; owned by the ops map until it ends.
class FetchClient::Op : public std::enable_shared_from_this<Op> {
 public:
  Op(FetchClient& client, std::uint64_t id, FetchInit init)
      : client_(client), impl_(*client.impl_), id_(id), init_(std::move(init)),
        resolver_(impl_.io), deadlineTimer_(impl_.io) {
    tcp_.emplace(impl_.io);
    newParser();
    buffer_.resize(client_.options_.chunkBytes);
  }

  void newParser() {
    parser_.emplace();
    parser_->body_limit(client_.options_.maxResponseBytes);
    parser_->header_limit(64 * 1024);
  }

  void start() {
    auto url = splitUrl(init_.url);
    if (!url) return fail("network", "unsupported or malformed URL " + init_.url);
    if (auto bad = checkRequestHead(init_.method, init_.headers)) {
      return fail("policy", "the request head was refused: " + *bad);
    }
    // Methods Fetch forbids (a tunnel, or a request that echoes its own headers back).
    for (const char* forbidden : {"CONNECT", "TRACE", "TRACK"}) {
      if (beast::iequals(init_.method, forbidden)) {
        return fail("policy", "the request head was refused: the method " + init_.method +
                                  " is forbidden");
      }
    }
    url_ = *url;
    // Never pooled without a key; with one, only among the key's operations (FetchInit).
    if (!init_.poolKey.empty()) {
      originKey_ = init_.poolKey + "\n" + url_.host + ":" + std::to_string(url_.port);
    }
    deadline_ = std::chrono::steady_clock::now() + init_.timeout;
    // The whole exchange is bounded, including time the app spends not reading the body: an
    // operation nobody pulls would otherwise hold its socket forever.
    deadlineTimer_.expires_at(deadline_);
    deadlineTimer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) {
        self->fail("timeout", "the exchange with " + self->url_.hostHeader + " took longer than " +
                                  std::to_string(self->init_.timeout.count()) + " ms");
      }
    });
    if (!url_.https && !originKey_.empty() && takeIdle()) return write();
    resolve();
  }

  // A pooled connection to this origin whose address this op's policy allows, if any.
  bool takeIdle() {
    auto it = impl_.idle.find(originKey_);
    if (it == impl_.idle.end()) return false;
    auto now = std::chrono::steady_clock::now();
    while (!it->second.empty()) {
      IdleConnection conn = std::move(it->second.back());
      it->second.pop_back();
      --impl_.idleCount;
      bool fresh = now - conn.since < Impl::kIdleFor;
      if (fresh && !init_.policy.refuse(url_.host, url_.port, conn.remote.address())) {
        tcp_.emplace(std::move(conn.socket));
        remote_ = conn.remote;
        reused_ = true;
        return true;
      }
      beast::error_code ignored;
      conn.socket.close(ignored);
    }
    return false;
  }

  void resolve() {
    reused_ = false;
    resolver_.async_resolve(url_.host, std::to_string(url_.port),
                            [self = shared_from_this()](beast::error_code ec,
                                                        tcp::resolver::results_type results) {
                              self->onResolve(ec, std::move(results));
                            });
  }

  // One more piece of the body is wanted (up to kFetchPiecesAhead owed: a worker that asks for
  // more gets no more read ahead).
  void pull() {
    if (finished_) return;
    owed_ = std::min(owed_ + 1, kFetchPiecesAhead);
    readOn();
  }

  void abort() { fail("aborted", "the fetch was aborted"); }

 private:
  template <typename F>
  void withStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(*tcp_);
    }
  }

  void onResolve(beast::error_code ec, const tcp::resolver::results_type& results) {
    if (finished_) return;
    if (ec) return fail("network", "cannot resolve " + url_.host + ": " + ec.message());
    std::vector<tcp::endpoint> allowed;
    std::string refusal;
    for (const auto& entry : results) {
      auto why = init_.policy.refuse(url_.host, url_.port, entry.endpoint().address());
      if (why) {
        if (refusal.empty()) refusal = *why;
      } else {
        allowed.push_back(entry.endpoint());
      }
    }
    if (allowed.empty()) {
      return fail("policy", refusal.empty() ? "no address for " + url_.host : refusal);
    }
    tcp_->async_connect(allowed, [self = shared_from_this()](beast::error_code ec,
                                                            const tcp::endpoint& remote) {
      self->remote_ = remote;
      self->onConnect(ec);
    });
  }

  void onConnect(beast::error_code ec) {
    if (finished_) return;
    if (ec) return failIo(ec, "cannot connect to " + url_.hostHeader);
    setCloseOnExec(tcp_->socket().native_handle());
    if (!url_.https) return write();
    tls_.emplace(std::move(*tcp_), impl_.tlsContext());
    // SNI and the certificate's host name are checked against the URL's host.
    SSL_set_tlsext_host_name(tls_->native_handle(), url_.host.c_str());
    tls_->set_verify_mode(ssl::verify_peer);
    tls_->set_verify_callback(ssl::host_name_verification(url_.host));
    tls_->async_handshake(ssl::stream_base::client,
                          [self = shared_from_this()](beast::error_code ec) {
                            if (self->finished_) return;
                            if (ec) return self->failIo(ec, "TLS handshake with " + self->url_.hostHeader);
                            self->write();
                          });
  }

  void write() {
    // Built once: a retry on a fresh connection (retryFresh) sends the same request again.
    if (!requestBuilt_) {
      requestBuilt_ = true;
      request_.version(11);
      request_.method_string(init_.method);
      request_.target(url_.target);
      request_.set(http::field::host, url_.hostHeader);
      for (const auto& [name, value] : init_.headers) {
        if (!skipRequestHeader(name)) request_.insert(name, value);
      }
      // http: keeps the connection for the next exchange; https: closes (not pooled yet).
      if (url_.https) request_.set(http::field::connection, "close");
      request_.body() = std::move(init_.body);
      if (!request_.body().empty() || init_.method == "POST" || init_.method == "PUT" ||
          init_.method == "PATCH") {
        request_.prepare_payload();
      }
    }
    withStream([&](auto& stream) {
      http::async_write(stream, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (self->finished_) return;
        if (ec && self->retryFresh()) return;
        if (ec) return self->failIo(ec, "sending the request to " + self->url_.hostHeader);
        self->readHead();
      });
    });
  }

  void readHead() {
    if (init_.method == "HEAD") parser_->skip(true);
    withStream([&](auto& stream) {
      http::async_read_header(stream, readBuffer_, *parser_,
                              [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                self->onHead(ec);
                              });
    });
  }

  // A pooled connection the server had closed meanwhile fails at once: nothing of this request
  // was processed, so it is sent again on a new connection.
  bool retryFresh() {
    if (!reused_) return false;
    beast::error_code ignored;
    tcp_->socket().close(ignored);
    tcp_.emplace(impl_.io);
    readBuffer_.clear();
    newParser();
    resolve();
    return true;
  }

  void onHead(beast::error_code ec) {
    if (finished_) return;
    if (ec && (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
               ec == asio::error::eof) &&
        retryFresh()) {
      return;
    }
    if (ec) return failIo(ec, "reading the response from " + url_.hostHeader);
    int status = static_cast<int>(parser_->get().result_int());
    if (status >= 100 && status < 200 && status != 101) {
      // An interim response (100 Continue, 103 Early Hints): the real one follows.
      newParser();
      return readHead();
    }
    // No retry now: the request's body, and its charge (FetchInit::bodyHold), are let go of.
    request_.body().clear();
    request_.body().shrink_to_fit();
    init_.bodyHold.reset();
    auto& res = parser_->get();
    FetchEvent head;
    head.op = id_;
    head.kind = FetchEvent::Kind::kHead;
    head.status = static_cast<int>(res.result_int());
    head.statusText = std::string(res.reason());
    for (const auto& field : res) {
      head.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    bodyDone_ = parser_->is_done();
    headRead_ = true;
    // Beast reads as much as the buffer has room for, and at least 512 bytes: without room made
    // here every read of the body was a system call of 512 bytes (8,192 for 4 MiB). Made only
    // now: an operation still waiting for its head holds no more than it did.
    if (!bodyDone_) readBuffer_.reserve(client_.options_.chunkBytes);
    deliver(std::move(head));
    readOn();  // pulls that came before the head (a worker's, never the runtime's)
  }

  // Reads the next piece if one is owed, none is being read, and every event so far is in the
  // executor's queue (one that waits for room is not overtaken; meanwhile the socket backs up).
  void readOn() {
    if (finished_ || !headRead_ || reading_ || owed_ == 0 || !backlog_.empty()) return;
    if (bodyDone_) return end();
    readSome();
  }

  void readSome() {
    reading_ = true;
    parser_->get().body().data = buffer_.data();
    parser_->get().body().size = buffer_.size();
    withStream([&](auto& stream) {
      http::async_read(stream, readBuffer_, *parser_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         self->onBody(ec);
                       });
    });
  }

  void onBody(beast::error_code ec) {
    reading_ = false;
    if (finished_) return;
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::body_limit) {
      return fail("too-large", "the response from " + url_.hostHeader + " is larger than " +
                                   std::to_string(client_.options_.maxResponseBytes) + " bytes");
    }
    if (ec) return failIo(ec, "reading the response body from " + url_.hostHeader);
    std::size_t got = buffer_.size() - parser_->get().body().size;
    bodyDone_ = parser_->is_done();
    if (got == 0) {
      if (bodyDone_) return end();
      return readSome();  // framing only (chunk sizes); read on
    }
    FetchEvent chunk;
    chunk.op = id_;
    chunk.kind = FetchEvent::Kind::kChunk;
    chunk.data.assign(buffer_.data(), got);
    --owed_;
    deliver(std::move(chunk));
    readOn();
  }

  void end() {
    if (finished_) return;
    finished_ = true;
    FetchEvent e;
    e.op = id_;
    e.kind = FetchEvent::Kind::kEnd;
    deliver(std::move(e));
    // The whole body was read and the server keeps the connection: pool it.
    if (!url_.https && !originKey_.empty() && parser_->is_done() && parser_->get().keep_alive() &&
        readBuffer_.size() == 0 && impl_.idleCount < Impl::kMaxIdle) {
      auto& list = impl_.idle[originKey_];
      if (list.size() < Impl::kMaxIdlePerOrigin) {
        list.push_back(IdleConnection{tcp_->release_socket(), remote_,
                                      std::chrono::steady_clock::now()});
        ++impl_.idleCount;
        tcp_.emplace(impl_.io);
      }
    }
    close();
  }

  // Timeouts come from deadlineTimer_ alone, which fails the op and closes its socket; the I/O
  // that was pending then ends here with finished_ already set.
  void failIo(beast::error_code ec, const std::string& what) {
    fail("network", what + ": " + ec.message());
  }

  void fail(const std::string& kind, const std::string& message) {
    if (finished_) return;
    finished_ = true;
    FetchEvent e;
    e.op = id_;
    e.kind = FetchEvent::Kind::kError;
    e.errorKind = kind;
    e.data = message;
    deliver(std::move(e));
    close();
  }

  void close() {
    beast::error_code ignored;
    deadlineTimer_.cancel();
    resolver_.cancel();
    if (tls_) {
      beast::get_lowest_layer(*tls_).socket().close(ignored);
    } else {
      tcp_->socket().close(ignored);
    }
    client_.ended(id_);
  }

  FetchClient& client_;
  FetchClient::Impl& impl_;
  const std::uint64_t id_;
  FetchInit init_;
  ParsedUrl url_;
  std::string originKey_;
  tcp::endpoint remote_;
  bool reused_ = false;  // the connection came from the idle pool
  bool requestBuilt_ = false;
  std::chrono::steady_clock::time_point deadline_;
  tcp::resolver resolver_;
  std::optional<beast::tcp_stream> tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  http::request<http::string_body> request_;
  beast::flat_buffer readBuffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  asio::steady_timer deadlineTimer_;
  std::vector<char> buffer_;
  bool bodyDone_ = false;
  bool finished_ = false;
  bool headRead_ = false;  // the final head (not an interim 1xx): the body may be read
  bool reading_ = false;   // a read of the body is pending (one at a time)
  std::size_t owed_ = 0;  // pieces pulled and not yet read
  // Events that found the executor's queue full, in order: retried, never overtaken.
  std::deque<FetchEvent> backlog_;
  bool retrying_ = false;

  // Hands `event` to the executor in order: behind any that wait for room in its queue.
  void deliver(FetchEvent event) {
    if (backlog_.empty() && client_.tryEmit(event)) return;
    backlog_.push_back(std::move(event));
    retryLater();
  }
  // The queue was full: the executor is behind. Wait for it rather than drop or grow.
  void retryLater() {
    if (retrying_) return;
    retrying_ = true;
    auto timer = std::make_shared<asio::steady_timer>(impl_.io, std::chrono::milliseconds(1));
    timer->async_wait([self = shared_from_this(), timer](beast::error_code) {
      self->retrying_ = false;
      while (!self->backlog_.empty() && self->client_.tryEmit(self->backlog_.front())) {
        self->backlog_.pop_front();
      }
      if (!self->backlog_.empty()) return self->retryLater();
      self->readOn();
    });
  }
};

FetchClient::FetchClient(Doorbell& wake, FetchClientOptions options)
    : impl_(std::make_unique<Impl>()), wake_(wake), options_(options),
      events_(options.eventCapacity) {
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "isolane-fetch");
    // A handler that throws (nothing should: requests are checked before they start) is logged
    // and the reactor goes on with the other exchanges.
    for (;;) {
      try {
        impl_->io.run();
        return;
      } catch (const std::exception& e) {
        logEvent(Level::kError, "unexpected exception on the fetch reactor", {{"error", e.what()}});
      }
    }
  });
}

// Operations still open are dropped with the reactor: their sockets close with them, and nobody is
// left to take their events.
FetchClient::~FetchClient() {
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

std::uint64_t FetchClient::start(FetchInit init) {
  std::uint64_t id = nextOp_++;
  asio::post(impl_->io, [this, id, init = std::move(init)]() mutable {
    auto op = std::make_shared<Op>(*this, id, std::move(init));
    impl_->ops.emplace(id, op);
    op->start();
  });
  return id;
}

void FetchClient::pull(std::uint64_t op) {
  asio::post(impl_->io, [this, op] {
    if (auto it = impl_->ops.find(op); it != impl_->ops.end()) it->second->pull();
  });
}

void FetchClient::abort(std::uint64_t op) {
  asio::post(impl_->io, [this, op] {
    if (auto it = impl_->ops.find(op); it != impl_->ops.end()) it->second->abort();
  });
}

void FetchClient::ended(std::uint64_t op) {
  // Erase later: the op may be deep in its own call stack now.
  asio::post(impl_->io, [this, op] {
    impl_->ops.erase(op);
  });
}

bool FetchClient::tryEmit(FetchEvent& event) {
  bool pushed = events_.tryPush(event);
  wake_.ring();  // either way: the executor has something to take
  return pushed;
}

}  // namespace isolane

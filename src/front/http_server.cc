#include "front/http_server.h"

#include "obs/log.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <random>
#include <set>

#include "front/request_id.h"
#include "front/responses.h"

namespace isolane {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

class Session;

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  const Router& router;
  Backend& backend;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> requestsInFlight{0};
  std::atomic<bool> stopping{false};
  std::mutex sessionsMutex;  // guards sessions
  std::set<std::weak_ptr<Session>, std::owner_less<std::weak_ptr<Session>>> sessions;

  Impl(HttpServerOptions o, const Router& r, Backend& b)
      : options(std::move(o)), router(r), backend(b) {}
  void accept();
};

namespace {

// Hop-by-hop and framing headers are ours to write, not the app's.
bool isHopByHop(std::string_view name) {
  static const char* const kNames[] = {"connection", "keep-alive", "transfer-encoding",
                                       "content-length", "upgrade", "te", "trailer",
                                       "proxy-connection"};
  for (const char* n : kNames) {
    if (beast::iequals(beast::string_view(name.data(), name.size()), n)) return true;
  }
  return false;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server)
      : stream_(std::move(socket)), server_(server) {
    ++server_.connections;
  }
  ~Session() { --server_.connections; }

  void start() { readHead(/*first=*/true); }

  // Safe from any thread. Closes the connection on its strand unless a request is being
  // answered; such a connection closes itself once its answer is written (the server is
  // stopping, so it is not kept alive).
  void close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->busy_) return;
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
    });
  }

 private:
  void readHead(bool first) {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.maxHeaderBytes));
    parser_->body_limit(server_.options.maxBodyBytes);
    // A fresh connection must send its head promptly (slow-client defence); a keep-alive
    // connection may sit idle longer before its next request starts.
    stream_.expires_after(first || buffer_.size() > 0 ? server_.options.headerTimeout
                                                      : server_.options.idleTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              self->onHead(ec);
                            });
  }

  void onHead(beast::error_code ec) {
    isHead_ = false;
    if (ec) return onReadError(ec);
    isHead_ = parser_->get().method() == http::verb::head;
    if (server_.stopping) return sendSimple(503, "the server is shutting down\n", true);
    auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      // curl and others wait for this before sending a large body.
      auto self = shared_from_this();
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      http::async_write(stream_, *cont, [self, cont](beast::error_code wec, std::size_t) {
        if (wec) return self->stream_.close();
        self->readBody();
      });
      return;
    }
    readBody();
  }

  void readBody() {
    stream_.expires_after(server_.options.bodyTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->onReadError(ec);
                       self->dispatch();
                     });
  }

  void onReadError(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
        ec == beast::error::timeout) {
      // Timeouts: the client was idle or too slow; close without a word, as servers do.
      return stream_.close();
    }
    if (ec == http::error::header_limit) {
      return sendSimple(431, "request header fields too large\n", true);
    }
    if (ec == http::error::body_limit) {
      return sendSimple(413, "request body larger than " +
                                 std::to_string(server_.options.maxBodyBytes) + " bytes\n",
                        true);
    }
    if (ec == http::error::buffer_overflow) {
      return sendSimple(431, "request header fields too large\n", true);
    }
    return sendSimple(400, "malformed request: " + ec.message() + "\n", true);
  }

  void dispatch() {
    stream_.expires_never();  // the app's own deadline applies now
    http::request<http::string_body> req = parser_->release();
    keepAlive_ = req.keep_alive();
    version_ = req.version();
    isHead_ = req.method() == http::verb::head;

    std::string_view target(req.target().data(), req.target().size());
    std::string_view host(req[http::field::host].data(), req[http::field::host].size());
    std::string absoluteTarget;
    if (!target.empty() && target[0] != '/') {
      // absolute-form (RFC 9112 3.2.2): take authority and path from it.
      auto scheme = target.find("://");
      if (scheme == std::string_view::npos) return sendSimple(400, "bad request target\n", true);
      auto pathStart = target.find('/', scheme + 3);
      absoluteTarget = pathStart == target.npos ? "/" : std::string(target.substr(pathStart));
      host = target.substr(scheme + 3, (pathStart == target.npos ? target.size() : pathStart) -
                                           scheme - 3);
      target = absoluteTarget;
    }
    if (host.empty()) {
      if (version_ >= 11) return sendSimple(400, "missing Host header\n", true);
      host = localHost_;
    }
    requestId_ = newRequestId();
    started_ = std::chrono::steady_clock::now();
    app_.clear();
    if (server_.options.internal) {
      if (auto reply = server_.options.internal(target.substr(0, target.find('?')))) {
        auto res = simpleResponse(reply->status, std::move(reply->body), requestId_, version_);
        res->set(http::field::content_type, reply->contentType);
        return write(std::move(res));
      }
    }
    std::optional<Route> route = server_.router.resolve(host, target);
    if (!route) return sendSimple(404, "no app is mounted at this path\n", false);

    AppRequest out;
    out.app = route->mount->app;
    app_ = out.app;
    out.requestId = requestId_;
    out.method = std::string(req.method_string());
    out.url = "http://" + std::string(host) + route->path;
    out.headers.reserve(std::distance(req.begin(), req.end()) + 1);
    for (const auto& field : req) {
      out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    if (route->mount->stripPrefix && route->mount->prefix != "/") {
      out.headers.emplace_back("x-forwarded-prefix", route->mount->prefix);
    }
    out.body = std::move(req.body());

    ++server_.requestsInFlight;
    busy_ = true;
    auto self = shared_from_this();
    cancelHandle_ = server_.backend.submit(std::move(out), [self](AppResponse response) {
      asio::post(self->stream_.get_executor(), [self, r = std::move(response)]() mutable {
        --self->server_.requestsInFlight;
        self->respond(std::move(r));
      });
    });
    probe();
  }

  // While the app works, watch the socket without reading from it: end of stream means the
  // client went away, and the app's request.signal is aborted. Bytes mean a pipelined request is
  // arriving: the client is alive, and they stay in the socket for readHead.
  void probe() {
    if (buffer_.size() > 0 || cancelHandle_ == 0) return;
    probing_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code ec) {
                                  self->onProbe(ec);
                                });
  }

  void onProbe(beast::error_code ec) {
    probing_ = false;
    if (!ec && busy_) {
      char c;
      ssize_t n = ::recv(stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        server_.backend.cancel(cancelHandle_);
      }
    }
    if (resumeAfterProbe_) {
      resumeAfterProbe_ = false;
      readHead(/*first=*/false);
    }
  }

  void respond(AppResponse r) {
    record(r.status);
    if (r.failure != FailureKind::kNone) {
      auto res = failureResponse(r, requestId_, version_);
      if (r.failure == FailureKind::kOverloaded || r.failure == FailureKind::kShuttingDown) {
        res->set(http::field::retry_after, "1");
      }
      if (!r.shedReason.empty()) res->set("x-isolane-shed", r.shedReason);
      return write(std::move(res));
    }
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(version_);
    res->result(static_cast<unsigned>(r.status));
    if (!r.statusText.empty()) res->reason(r.statusText);
    for (auto& [name, value] : r.headers) {
      if (!isHopByHop(name)) res->insert(name, value);
    }
    res->set("x-request-id", requestId_);
    bool noBody = r.status == 204 || r.status == 304 || (r.status >= 100 && r.status < 200);
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

  void record(int status) {
    if (!server_.options.metrics || app_.empty()) return;
    server_.options.metrics->requests.with({app_, std::to_string(status)}).inc();
    server_.options.metrics->duration.with({app_}).observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  }

  void sendSimple(unsigned status, std::string body, bool close) {
    if (close) keepAlive_ = false;
    write(simpleResponse(status, std::move(body), requestId_, version_ ? version_ : 11));
  }

  void write(const std::shared_ptr<http::response<http::string_body>>& res) {
    // HEAD: the head of what GET would get, never a body (Content-Length is already set).
    if (isHead_) res->body().clear();
    bool keep = keepAlive_ && !server_.stopping;
    res->keep_alive(keep);
    stream_.expires_after(server_.options.bodyTimeout);  // a client that will not read is slow too
    auto self = shared_from_this();
    http::async_write(stream_, *res, [self, res, keep](beast::error_code ec, std::size_t) {
      self->busy_ = false;
      self->cancelHandle_ = 0;
      if (ec || !keep || self->server_.stopping) {
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        self->stream_.close();
        return;
      }
      if (self->probing_) {  // one read at a time: end the watch first, then read on
        self->resumeAfterProbe_ = true;
        beast::error_code ignored;
        self->stream_.socket().cancel(ignored);
        return;
      }
      self->readHead(/*first=*/false);
    });
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keepAlive_ = false;
  bool busy_ = false;  // from dispatch until the answer is written
  bool probing_ = false;           // a wait for readability is pending (see probe())
  bool resumeAfterProbe_ = false;  // the answer is written; read on once the wait ends
  std::uint64_t cancelHandle_ = 0;
  bool isHead_ = false;
  unsigned version_ = 11;
  std::string requestId_;
  std::string app_;  // the app answering the current request ("" before routing)
  std::chrono::steady_clock::time_point started_;
  std::string localHost_ = "localhost";
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping) return;
      // e.g. out of descriptors: keep going
      logEvent(Level::kWarn, "accept failed", {{"error", ec.message()}});
    } else if (connections >= options.maxConnections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      socket.set_option(tcp::no_delay(true));
      auto session = std::make_shared<Session>(std::move(socket), *this);
      {
        std::lock_guard<std::mutex> lock(sessionsMutex);
        for (auto it = sessions.begin(); it != sessions.end();) {
          it = it->expired() ? sessions.erase(it) : std::next(it);
        }
        sessions.insert(session);
      }
      session->start();
    }
    if (!stopping) accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options, const Router& router, Backend& backend)
    : impl_(std::make_unique<Impl>(std::move(options), router, backend)) {}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

Status HttpServer::start() {
  Impl& s = *impl_;
  beast::error_code ec;
  auto address = asio::ip::make_address(s.options.host, ec);
  if (ec) return Error{"invalid listen address '" + s.options.host + "': " + ec.message()};
  tcp::endpoint endpoint(address, s.options.port);
  std::string where = s.options.host + ":" + std::to_string(s.options.port);
  if (s.acceptor.open(endpoint.protocol(), ec)) return Error{"cannot open socket: " + ec.message()};
  s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (s.acceptor.bind(endpoint, ec)) return Error{"cannot listen on " + where + ": " + ec.message()};
  if (s.acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return Error{"cannot listen on " + where + ": " + ec.message()};
  }
  s.work.emplace(s.io.get_executor());
  s.accept();
  std::size_t n = std::max<std::size_t>(1, s.options.reactorThreads);
  for (std::size_t i = 0; i < n; ++i) {
    s.threads.emplace_back([&s] {
      pthread_setname_np(pthread_self(), "isolane-io");
      s.io.run();
    });
  }
  return Status::success();
}

std::uint16_t HttpServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}


void HttpServer::stop(std::chrono::milliseconds drain, const std::function<void()>& drained) {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  asio::post(s.io, [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
  });
  auto until = std::chrono::steady_clock::now() + drain;
  while (s.requestsInFlight > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What is still running gets its answer now (503 from a stopping backend) and is written.
  if (drained) drained();
  {
    std::lock_guard<std::mutex> lock(s.sessionsMutex);
    for (auto& weak : s.sessions) {
      if (auto session = weak.lock()) session->close();
    }
    s.sessions.clear();
  }
  // Let the last answers go out; a client that will not read them does not hold us for long.
  s.work.reset();
  auto closeBy = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while ((s.connections > 0 || s.requestsInFlight > 0) &&
         std::chrono::steady_clock::now() < closeBy) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.io.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

}  // namespace isolane

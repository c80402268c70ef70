// ExecDaemon: the listener and the HTTP routes of `isolane executor` (the WebSocket session:
// exec_session.cc).
#include "exec/exec_daemon.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/range/iterator_range.hpp>

#include "exec/dashboard_login.h"
#include "exec/exec_dashboard.h"
#include "exec/exec_session.h"
#include "obs/log.h"
#include "util/close_on_exec.h"

namespace isolane {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

class HttpSession : public ExecDaemon::Closable, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(std::shared_ptr<ExecDaemon::Shared> shared, tcp::socket socket)
      : shared_(std::move(shared)), stream_(std::move(socket)) {
    ++shared_->connections;
  }
  ~HttpSession() { --shared_->connections; }

  void start() { read(); }

  void closeSoon() override {
    net::post(executor_, [self = shared_from_this()] {
      if (!self->upgraded_) self->close();
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(shared_->options.maxBodyBytes);
    parser_->header_limit(64 * 1024);
    bodyCharge_.reset();
    stream_.expires_after(std::chrono::seconds(60));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onHeader(ec); });
  }

  // The head is in. A request the token does not open is answered 401 before any of its body is
  // read (the connection then closes), so that a client without the token cannot make the
  // executor hold a body; an authorized body is charged to the buffers' budget before it is read.
  void onHeader(beast::error_code ec) {
    if (ec) return onRead(ec);
    const Request& req = parser_->get();
    head_ = req.method() == http::verb::head;
    Access access = accessOf(req);
    if (access == Access::kRefused) {
      Response r = error(http::status::unauthorized, ExecErrorCode::kInternal,
                         "this executor requires Authorization: Bearer <token>");
      r.set(http::field::www_authenticate, "Bearer");
      send(std::move(r), false, "unauthorized");
      return;
    }
    if (parser_->is_done()) return onRead({});
    // A body, from here on. The routes that need no token take none: a client without it sends
    // the executor nothing to hold.
    if (access == Access::kOpen && !shared_->options.token.empty()) {
      send(error(http::status::bad_request, ExecErrorCode::kInternal, "this route takes no body"),
           false, "bad");
      return;
    }
    std::size_t expected = shared_->options.maxBodyBytes;
    if (auto length = parser_->content_length()) {
      if (*length > shared_->options.maxBodyBytes) {
        send(error(http::status::payload_too_large, ExecErrorCode::kInternal,
                   "the request is over the limit of " +
                       std::to_string(shared_->options.maxBodyBytes) + " bytes"),
             false, "bad");
        return;
      }
      expected = static_cast<std::size_t>(*length);
    }
    bodyCharge_ = ByteCharge::take(shared_->buffers, expected);
    if (!bodyCharge_) return refuseForBuffers();
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onRead(ec); });
  }

  // The budget of bytes held for clients is spent: 503 + Retry-After, and the connection closes
  // (its unread body is not read).
  void refuseForBuffers() {
    logEvent(Level::kWarn, "executor request refused: its bytes do not fit in max_buffered_mb");
    Response r = error(http::status::service_unavailable, ExecErrorCode::kQueueOverflow,
                       "the executor holds too much for its clients now; retry later");
    r.set(http::field::retry_after, "1");
    send(std::move(r), false, "buffers-full");
  }

  // Whether the request may go on: with the token (bearer, or the dashboard's cookie) when one
  // is set (kAuthorized), or on a route that needs none here (kOpen: the health probes, and the
  // dashboard's login, whose token is in its query and checked by route()).
  enum class Access { kOpen, kAuthorized, kRefused };
  Access accessOf(const Request& req) const {
    std::string_view full(req.target().data(), req.target().size());
    std::string_view target = full.substr(0, full.find('?'));
    std::string_view query = target.size() < full.size() ? full.substr(target.size() + 1) : "";
    if (target == "/healthz" || target == "/readyz") return Access::kOpen;
    bool dashboard = target == "/dashboard" || target == "/dashboard/events";
    if (target == "/dashboard" && req.method() == http::verb::get &&
        queryParameter(query, "token")) {
      return Access::kOpen;
    }
    return authorized(req, dashboard) ? Access::kAuthorized : Access::kRefused;
  }
  bool authorized(const Request& req, bool dashboard) const {
    if (shared_->options.token.empty()) return true;
    auto auth = req.find(http::field::authorization);
    std::string_view value = auth == req.end()
                                 ? std::string_view()
                                 : std::string_view(auth->value().data(), auth->value().size());
    bool bearer =
        value.size() > 7 && beast::iequals(beast::string_view(value.data(), 7), "Bearer ");
    if (bearer && secretMatches(value.substr(7), shared_->options.token)) return true;
    if (!dashboard) return false;
    std::vector<std::string_view> cookies;
    for (const auto& field : boost::make_iterator_range(req.equal_range(http::field::cookie))) {
      cookies.emplace_back(field.value().data(), field.value().size());
    }
    return cookiesOpenDashboard(cookies, shared_->options.token);
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset) {
      close();
      return;
    }
    if (ec) {
      // Malformed or oversized: a 400/413 naming it, then the connection closes.
      bool tooLarge = ec == http::error::body_limit || ec == http::error::header_limit;
      send(error(tooLarge ? http::status::payload_too_large : http::status::bad_request,
                 ExecErrorCode::kInternal,
                 tooLarge ? "the request is over the limit of " +
                                std::to_string(shared_->options.maxBodyBytes) + " bytes"
                          : "malformed HTTP request: " + ec.message()),
           false, "bad");
      return;
    }
    Request req = parser_->release();
    bodyCharge_.reset();  // the body is the execution's from here (its spec bounds it)
    route(std::move(req));
  }

  void route(Request req) {
    std::string_view full(req.target().data(), req.target().size());
    std::string_view target = full.substr(0, full.find('?'));
    std::string_view query = target.size() < full.size() ? full.substr(target.size() + 1) : "";
    bool keep = req.keep_alive();
    // The token was checked on the head (onHeader); the dashboard's login checks its own.
    if (target == "/dashboard" && req.method() == http::verb::get &&
        !shared_->options.token.empty()) {
      if (auto token = queryParameter(query, "token")) return dashboardLogin(*token, keep);
    }
    if (target == "/v1/session") {
      if (!beast::websocket::is_upgrade(req)) {
        send(error(http::status::upgrade_required, ExecErrorCode::kInternal,
                   "/v1/session is a WebSocket: send an Upgrade request"),
             keep, "/v1/session");
        return;
      }
      shared_->requests.with({"/v1/session", "101"}).inc();
      stream_.expires_never();
      upgraded_ = true;  // the stream is the WebSocket session's from here
      runExecSession(shared_, std::move(stream_), std::move(req));
      return;
    }
    if (target == "/v1/execute") {
      if (req.method() != http::verb::post) {
        send(error(http::status::method_not_allowed, ExecErrorCode::kInternal,
                   "POST an execution to /v1/execute"),
             keep, "/v1/execute");
        return;
      }
      execute(req.body(), keep);
      return;
    }
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      send(text(http::status::method_not_allowed, "method not allowed\n"), keep, "other");
      return;
    }
    if (target == "/healthz") {
      send(text(http::status::ok, "ok\n"), keep, "/healthz");
    } else if (target == "/readyz") {
      bool ready = !shared_->pool.stopping();
      send(text(ready ? http::status::ok : http::status::service_unavailable,
                ready ? "ready\n" : "shutting down\n"),
           keep, "/readyz");
    } else if (target == "/dashboard") {
      Response r = text(http::status::ok, std::string(dashboardPage()));
      r.set(http::field::content_type, "text/html; charset=utf-8");
      r.set(http::field::cache_control, "no-store");
      send(std::move(r), keep, "/dashboard");
    } else if (target == "/dashboard/events") {
      watchDashboard();
    } else if (target == "/metrics") {
      Response r = text(http::status::ok, shared_->metrics.render());
      r.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      send(std::move(r), keep, "/metrics");
    } else {
      send(text(http::status::not_found, "not found\n"), keep, "other");
    }
  }

  void execute(const std::string& body, bool keep) {
    if (!jsonDepthWithin(body, kMaxMessageDepth)) {
      send(error(http::status::bad_request, ExecErrorCode::kInternal,
                 "the body nests deeper than " + std::to_string(kMaxMessageDepth) + " levels"),
           keep, "/v1/execute");
      return;
    }
    nlohmann::ordered_json request = nlohmann::ordered_json::parse(body, nullptr, false);
    if (request.is_discarded()) {
      send(error(http::status::bad_request, ExecErrorCode::kInternal,
                 "the body must be a JSON object (an execution)"),
           keep, "/v1/execute");
      return;
    }
    Result<ExecutionSpec> spec = parseExecution(request, shared_->options.defaults, false);
    if (!spec) {
      send(error(http::status::bad_request, ExecErrorCode::kInternal, spec.error()), keep,
           "/v1/execute");
      return;
    }
    auto self = shared_from_this();
    shared_->pool.execute(std::move(spec.value()), nullptr, [self, keep](ExecutionOutcome o) {
      net::post(self->stream_.get_executor(), [self, keep, o = std::move(o)] {
        Response r(static_cast<http::status>(outcomeStatus(o)), 11);
        r.set(http::field::content_type, "application/json");
        if (o.error == ExecErrorCode::kQueueOverflow ||
            o.error == ExecErrorCode::kConnectionBroken) {
          r.set(http::field::retry_after, "1");
        }
        r.body() = "{" + outcomeMembers(o) + "}\n";
        self->send(std::move(r), keep, "/v1/execute");
      });
    });
  }

  static Response text(http::status status, std::string body) {
    Response r(status, 11);
    r.set(http::field::content_type, "text/plain; charset=utf-8");
    r.body() = std::move(body);
    return r;
  }

  static Response error(http::status status, ExecErrorCode code, const std::string& message) {
    Response r(status, 11);
    r.set(http::field::content_type, "application/json");
    r.body() = nlohmann::json{{"error", errorObject(code, message)}}.dump() + "\n";
    return r;
  }

  void send(Response response, bool keep, const char* route) {
    if (head_) response.body().clear();  // a HEAD answer has no body
    // An answer is held until the client has read it: charged to the budget (a small error
    // answer goes out regardless).
    auto charge =
        std::make_shared<ByteCharge>(ByteCharge::take(shared_->buffers, response.body().size()));
    if (!*charge && response.body().size() > 4096) {
      logEvent(Level::kWarn, "executor answer dropped: it does not fit in max_buffered_mb",
               {{"bytes", response.body().size()}});
      response = error(http::status::service_unavailable, ExecErrorCode::kQueueOverflow,
                       "the executor holds too much for its clients now; retry later");
      response.set(http::field::retry_after, "1");
    }
    shared_->requests.with({route, std::to_string(response.result_int())}).inc();
    response.keep_alive(keep);
    response.prepare_payload();
    auto message = std::make_shared<Response>(std::move(response));
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message, keep, charge](beast::error_code ec, std::size_t) {
          if (ec || !keep) {
            self->close();
            return;
          }
          self->read();
        });
  }

  // /dashboard?token=T: a browser cannot send the bearer header (nor can EventSource), so the
  // token is checked once and kept in a cookie that only /dashboard paths get; the redirect
  // takes it out of the address bar and the history.
  void dashboardLogin(std::string_view token, bool keep) {
    if (!secretMatches(token, shared_->options.token)) {
      send(error(http::status::unauthorized, ExecErrorCode::kInternal, "wrong token"), keep,
           "unauthorized");
      return;
    }
    Response r = text(http::status::see_other, "see /dashboard\n");
    r.set(http::field::location, "/dashboard");
    r.set(http::field::set_cookie, dashboardSetCookie(shared_->options.token));
    send(std::move(r), keep, "/dashboard");
  }

  // The dashboard's feed: a head with no length (the body ends with the connection), then each
  // snapshot as the feed sends it. A snapshot that comes while the previous one is still being
  // written is skipped, so a page that stops reading holds one message, not a backlog.
  void watchDashboard() {
    feedWriting_ = true;  // what the feed sends before the head is out waits for it
    std::weak_ptr<HttpSession> weak = weak_from_this();
    bool watching = shared_->dashboard && shared_->dashboard->watch([weak](const std::string& m) {
      auto self = weak.lock();
      if (!self || self->feedClosed_) return false;
      net::post(self->executor_, [self, m] { self->writeFeed(m); });
      return true;
    });
    if (!watching) {
      feedWriting_ = false;
      Response r = text(http::status::service_unavailable,
                        "too many dashboards are open; close one and retry\n");
      r.set(http::field::retry_after, "5");
      send(std::move(r), false, "/dashboard/events");
      return;
    }
    shared_->requests.with({"/dashboard/events", "200"}).inc();
    // No more requests are read on this connection: it is the feed's until either side ends it.
    stream_.expires_never();
    auto head = std::make_shared<std::string>(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
        "cache-control: no-store\r\nconnection: close\r\n\r\n");
    net::async_write(stream_, net::buffer(*head),
                     [self = shared_from_this(), head](beast::error_code ec, std::size_t) {
                       self->onFeedWritten(ec);
                     });
    watchForClose();
  }

  // The page sends nothing more: a read that ends tells that it went away. It also keeps this
  // session alive while the feed has nothing to write (the feed holds it weakly).
  void watchForClose() {
    stream_.socket().async_read_some(
        net::buffer(feedProbe_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) {
            self->feedClosed_ = true;
            return self->close();
          }
          self->watchForClose();  // bytes after the request: ignored
        });
  }

  void writeFeed(const std::string& message) {
    if (feedClosed_) return;
    if (feedWriting_) {
      feedNext_ = message;  // the newest replaces one still waiting
      return;
    }
    feedWriting_ = true;
    auto owned = std::make_shared<std::string>(message);
    stream_.expires_after(std::chrono::seconds(60));
    net::async_write(stream_, net::buffer(*owned),
                     [self = shared_from_this(), owned](beast::error_code ec, std::size_t) {
                       self->onFeedWritten(ec);
                     });
  }

  void onFeedWritten(beast::error_code ec) {
    feedWriting_ = false;
    if (ec) {
      feedClosed_ = true;
      return close();
    }
    if (!feedNext_.empty()) writeFeed(std::exchange(feedNext_, {}));
  }

  void close() {
    feedClosed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  std::shared_ptr<ExecDaemon::Shared> shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  ByteCharge bodyCharge_;  // the body being read, against shared_->buffers
  bool head_ = false;
  bool upgraded_ = false;
  // The dashboard feed (watchDashboard): a write in progress, the one message waiting, and
  // whether the connection is done (read from the feed's thread: atomic).
  bool feedWriting_ = false;
  std::string feedNext_;
  char feedProbe_[256];
  std::atomic<bool> feedClosed_{false};
  const net::any_io_executor executor_ = stream_.get_executor();  // usable after the upgrade
};

}  // namespace

bool isLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

ExecDaemon::ExecDaemon(ExecDaemonOptions options, ExecPool& pool, MetricsRegistry& metrics)
    : shared_(std::make_shared<Shared>(
          std::move(options), pool, metrics,
          metrics.counter("isolane_executor_http_requests_total",
                          "Requests to the executor daemon, by route and status.",
                          {"route", "status"}))),
      acceptor_(io_) {}

ExecDaemon::~ExecDaemon() { stop(); }

Status ExecDaemon::start() {
  const ExecDaemonOptions& o = shared_->options;
  if (!isLoopbackHost(o.host) && o.token.empty()) {
    return Error{"listening on " + o.host +
                 " (beyond loopback) requires a token: set ISOLANE_EXECUTOR_TOKEN"};
  }
  boost::system::error_code ec;
  auto address = net::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host, ec);
  if (ec) return Error{"cannot listen on '" + o.host + "': not an IP address"};
  tcp::endpoint endpoint(address, o.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) setCloseOnExec(acceptor_.native_handle());
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Error{"cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + ec.message()};
  port_ = acceptor_.local_endpoint().port();
  shared_->dashboard = std::make_unique<DashboardFeed>(
      shared_->metrics, [pool = &shared_->pool, started = std::chrono::steady_clock::now()](
                            const MetricReading& now, const MetricReading& before) {
        return executorSnapshot(*pool, std::chrono::seconds(1), started, now, before);
      });
  accept();
  for (std::size_t i = 0; i < std::max<std::size_t>(1, o.ioThreads); ++i) {
    threads_.emplace_back([this] { io_.run(); });
  }
  logEvent(Level::kInfo, "executor listening", {{"host", o.host}, {"port", port_}});
  return Status::success();
}

void ExecDaemon::accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) {
      setCloseOnExec(socket.native_handle());
      if (shared_->connections.load() >= shared_->options.maxConnections) {
        boost::system::error_code ignored;
        socket.close(ignored);  // full: the client sees the connection closed at once
      } else {
        auto session = std::make_shared<HttpSession>(shared_, std::move(socket));
        shared_->track(session);
        session->start();
      }
    }
    accept();
  });
}

void ExecDaemon::stopAccepting() {
  net::post(io_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

void ExecDaemon::Shared::track(const std::shared_ptr<Closable>& session) {
  std::lock_guard lock(sessionsMu);
  if (sessions.size() >= 64 && sessions.size() % 64 == 0) {  // forget the closed ones now and then
    sessions.erase(std::remove_if(sessions.begin(), sessions.end(),
                                  [](const std::weak_ptr<Closable>& w) { return w.expired(); }),
                   sessions.end());
  }
  sessions.push_back(session);
}

void ExecDaemon::stop() {
  if (threads_.empty()) return;
  stopAccepting();
  if (shared_->dashboard) shared_->dashboard->stop();  // its pages end with their connections
  std::vector<std::weak_ptr<Closable>> sessions;
  {
    std::lock_guard lock(shared_->sessionsMu);
    sessions = shared_->sessions;
  }
  for (auto& weak : sessions) {
    if (auto session = weak.lock()) session->closeSoon();
  }
  // With the listener and every connection closed, the I/O threads run out of work and return;
  // a connection that does not end within 2 s is stopped where it stands.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!io_.stopped() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  shared_->dashboard.reset();
}

}  // namespace isolane

#include "front/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <mutex>
#include <set>

#include "front/http_session.h"
#include "front/request_id.h"
#include "ipc/reactor.h"
#include "obs/log.h"
#include "util/close_on_exec.h"

namespace isolane {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

// The answer a client gets when it cannot be served a connection: written in one non-blocking
// send on the raw socket, which is closed right after (no session, nothing held).
void shedConnection(int fd, const char* reason) {
  std::string body = "the server has too many open connections; retry shortly\n";
  std::string text =
      "HTTP/1.1 503 Service Unavailable\r\n"
      "content-type: text/plain; charset=utf-8\r\n"
      "retry-after: 1\r\n"
      "x-isolane-shed: " +
      std::string(reason) +
      "\r\n"
      "x-request-id: " +
      newRequestId() +
      "\r\n"
      "connection: close\r\n"
      "content-length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::ignore = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
}

bool outOfDescriptors(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  FrontContext context;
  asio::io_context& io;
  tcp::acceptor acceptor{io};
  asio::steady_timer acceptBackoff{io};
  std::chrono::milliseconds backoff{0};
  int spareDescriptor = -1;  // closed to accept-and-shed one client when descriptors run out
  std::chrono::steady_clock::time_point lastAcceptLog;
  std::uint64_t acceptFailuresUnlogged = 0;
  std::mutex sessionsMutex;  // guards sessions
  std::set<std::weak_ptr<HttpSession>, std::owner_less<std::weak_ptr<HttpSession>>> sessions;

  Impl(HttpServerOptions o, const Router& r, Backend& b, asio::io_context& reactor)
      : context(std::move(o), r, b), io(reactor) {}
  ~Impl() {
    if (spareDescriptor >= 0) ::close(spareDescriptor);
  }
  void accept();
  void onAccept(beast::error_code ec, SessionSocket socket);
  void onAcceptFailure(const beast::error_code& ec);
  void acceptLater(std::chrono::milliseconds delay);
};

void HttpServer::Impl::accept() {
  try {
    acceptor.async_accept(asio::make_strand(io), [this, self = shared_from_this()](
                                                     beast::error_code ec, SessionSocket socket) {
      try {
        onAccept(ec, std::move(socket));
      } catch (const std::exception& e) {
        logEvent(Level::kError, "unexpected failure accepting a connection", {{"error", e.what()}});
        acceptLater(std::chrono::milliseconds(100));
      }
    });
  } catch (const std::exception& e) {
    // Accepting must never stop for good: try again shortly.
    logEvent(Level::kError, "cannot accept connections; retrying", {{"error", e.what()}});
    acceptLater(std::chrono::milliseconds(100));
  }
}

void HttpServer::Impl::acceptLater(std::chrono::milliseconds delay) {
  if (context.stopping) return;
  acceptBackoff.expires_after(delay);
  acceptBackoff.async_wait([this, self = shared_from_this()](beast::error_code ec) {
    if (!ec && !context.stopping) accept();
  });
}

void HttpServer::Impl::onAccept(beast::error_code ec, SessionSocket socket) {
  if (!ec) setCloseOnExec(socket.native_handle());
  if (ec) {
    if (ec == asio::error::operation_aborted || context.stopping) return;
    return onAcceptFailure(ec);
  }
  backoff = std::chrono::milliseconds(0);
  FrontMetrics* metrics = context.options.metrics;
  if (context.connections >= context.options.maxConnections) {
    // Make room by closing the connection that has waited longest for a request; with none
    // idle, this client is told to come back.
    if (auto idle = context.idle.takeOldest()) {
      idle->reclaim();
    } else {
      if (metrics) metrics->connectionsRefused.with({"connections"}).inc();
      shedConnection(socket.native_handle(), "connections");
      beast::error_code ignored;
      socket.close(ignored);
      if (!context.stopping) accept();
      return;
    }
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto session = std::make_shared<HttpSession>(std::move(socket), context, shared_from_this());
  {
    std::lock_guard<std::mutex> lock(sessionsMutex);
    for (auto it = sessions.begin(); it != sessions.end();) {
      it = it->expired() ? sessions.erase(it) : std::next(it);
    }
    sessions.insert(session);
  }
  session->start();
  if (!context.stopping) accept();
}

void HttpServer::Impl::onAcceptFailure(const beast::error_code& ec) {
  // Out of descriptors (or kernel memory): accepting again at once would fail again at once, a
  // busy loop. Shed one waiting client with the spare descriptor, then wait a little, longer
  // each time, and say so in the log at most once a second.
  bool descriptors = outOfDescriptors(ec);
  if (descriptors && spareDescriptor >= 0) {
    ::close(spareDescriptor);
    spareDescriptor = -1;
    int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      if (auto* m = context.options.metrics) m->connectionsRefused.with({"descriptors"}).inc();
      shedConnection(fd, "descriptors");
      ::close(fd);
    }
    spareDescriptor = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  auto now = std::chrono::steady_clock::now();
  if (now - lastAcceptLog >= std::chrono::seconds(1)) {
    logEvent(Level::kWarn, "accept failed; backing off",
             {{"error", ec.message()},
              {"failures_since_last_report", static_cast<std::int64_t>(acceptFailuresUnlogged)},
              {"open_connections", static_cast<std::int64_t>(context.connections.load())}});
    lastAcceptLog = now;
    acceptFailuresUnlogged = 0;
  } else {
    ++acceptFailuresUnlogged;
  }
  backoff = std::clamp(backoff * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  acceptLater(backoff);
}

HttpServer::HttpServer(HttpServerOptions options, const Router& router, Backend& backend)
    : reactor_(options.reactor, options.reactorThreads, "isolane-io",
               [metrics = options.metrics] {
                 if (metrics) metrics->internalErrors.inc();
               }) {
  impl_ = std::make_shared<Impl>(std::move(options), router, backend, reactor_.io());
}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

Status HttpServer::start() {
  Impl& s = *impl_;
  const HttpServerOptions& options = s.context.options;
  beast::error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) return Error{"invalid listen address '" + options.host + "': " + ec.message()};
  tcp::endpoint endpoint(address, options.port);
  std::string where = options.host + ":" + std::to_string(options.port);
  if (s.acceptor.open(endpoint.protocol(), ec)) return Error{"cannot open socket: " + ec.message()};
  setCloseOnExec(s.acceptor.native_handle());
  s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (s.acceptor.bind(endpoint, ec))
    return Error{"cannot listen on " + where + ": " + ec.message()};
  if (s.acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return Error{"cannot listen on " + where + ": " + ec.message()};
  }
  s.spareDescriptor = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  asio::post(s.io, [self = impl_] { self->accept(); });
  return Status::success();
}

std::uint16_t HttpServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void HttpServer::stop(std::chrono::milliseconds drain, const std::function<void()>& drained) {
  Impl& s = *impl_;
  if (s.context.stopping.exchange(true)) return;
  asio::post(s.io, [self = impl_] {
    beast::error_code ignored;
    self->acceptor.close(ignored);
    self->acceptBackoff.cancel();
  });
  using Clock = std::chrono::steady_clock;
  auto until = Clock::now() + drain;
  // Idle keep-alive connections stay open for drainIdle (a request on one is served, with
  // Connection: close): closing one at once races a balancer that is sending on it, and it would
  // fail a request it cannot retry (a POST). One idle that long is closed.
  auto closeIdle = [&s] {
    auto cutoff = Clock::now() - s.context.options.drainIdle;
    while (auto idle = s.context.idle.takeIdleSince(cutoff)) idle->reclaim();
  };
  closeIdle();
  while ((s.context.requestsInFlight > 0 || s.context.connections > 0) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    closeIdle();
  }
  s.context.refusing = true;
  std::vector<std::shared_ptr<HttpSession>> open;
  {
    std::lock_guard<std::mutex> lock(s.sessionsMutex);
    for (auto& weak : s.sessions) {
      if (auto session = weak.lock()) open.push_back(std::move(session));
    }
    s.sessions.clear();
  }
  // Event streams end cleanly before the backend stops (which fails every stream's producer).
  for (auto& session : open) session->endEventStream();
  // What is still running gets its answer now (503 from a stopping backend) and is written.
  if (drained) drained();
  for (auto& session : open) session->close();
  open.clear();
  // Let the last answers go out; a client that will not read them does not hold us for long.
  auto closeBy = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while ((s.context.connections > 0 || s.context.requestsInFlight > 0) &&
         std::chrono::steady_clock::now() < closeBy) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // A shared reactor goes on; the connections still on it keep what they use (impl_) alive.
  reactor_.stopIfOwned();
}

}  // namespace isolane

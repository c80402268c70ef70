#pragma once
// A small blocking HTTP/1.1 client for end-to-end tests: raw bytes out, parsed responses in
// (Boost.Beast's parser), so tests can send malformed, pipelined or chunked requests on purpose.

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>

namespace isolane::test {

namespace http = boost::beast::http;
using Response = http::response<http::string_body>;

class HttpConnection {
 public:
  explicit HttpConnection(std::uint16_t port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  void send(const std::string& raw) { boost::asio::write(socket_, boost::asio::buffer(raw)); }

  // Reads one response; throws on a closed connection or a parse error.
  Response read() {
    Response res;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

  // Reads one response to a HEAD request (no body follows its Content-Length).
  Response readHead() {
    http::response_parser<http::string_body> parser;
    parser.skip(true);
    http::read(socket_, buffer_, parser);
    return parser.release();
  }

  // True when the server closed the connection (reads EOF) within `limit`.
  bool closedWithin(std::chrono::milliseconds limit) {
    socket_.non_blocking(false);
    timeval tv{static_cast<long>(limit.count() / 1000),
               static_cast<long>(limit.count() % 1000) * 1000};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    ssize_t n = ::recv(socket_.native_handle(), &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  int native() { return socket_.native_handle(); }

  // Appends what arrives to *into, unparsed, until *into holds `marker` (empty: never), the peer
  // closes the connection, or `limit` passes.
  void readRaw(std::string* into, std::chrono::milliseconds limit, const std::string& marker = "") {
    into->append(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.clear();
    timeval tv{0, 100'000};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char chunk[65536];
    auto until = std::chrono::steady_clock::now() + limit;
    while ((marker.empty() || into->find(marker) == std::string::npos) &&
           std::chrono::steady_clock::now() < until) {
      ssize_t n = ::recv(socket_.native_handle(), chunk, sizeof chunk, 0);
      if (n == 0) return;
      if (n > 0) into->append(chunk, static_cast<std::size_t>(n));
    }
  }

  // Reads whatever arrives until the connection closes (or 2 s of silence); returns the count.
  std::size_t drain() {
    std::size_t total = buffer_.size();
    buffer_.clear();
    timeval tv{2, 0};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char chunk[65536];
    for (;;) {
      ssize_t n = ::recv(socket_.native_handle(), chunk, sizeof chunk, 0);
      if (n <= 0) return total;
      total += static_cast<std::size_t>(n);
    }
  }

  Response request(const std::string& method, const std::string& target,
                   const std::string& body = "", const std::string& extraHeaders = "") {
    std::string raw = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extraHeaders;
    if (!body.empty()) raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    raw += "\r\n" + body;
    send(raw);
    return read();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

inline Response get(std::uint16_t port, const std::string& target) {
  HttpConnection c(port);
  return c.request("GET", target, "", "Connection: close\r\n");
}

}  // namespace isolane::test

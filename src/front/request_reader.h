#pragma once
// RequestReader: the bytes of one client connection in, requests out, by RFC 9112 and strictly:
// whatever one server could read one way and another server another way (a Transfer-Encoding
// other than `chunked`, Transfer-Encoding with Content-Length or in HTTP/1.0, two Hosts, a Host
// that is not host[:port], bare LF line endings) is a 400 and the end of the connection, never a
// guess. Beast's parser does the parsing; this adds the rules it leaves out and bounds every byte
// a connection can make the server hold: the head, chunk-size lines and trailers, and the body.
//
// No sockets and no threads: a session feeds it what it read, the fuzzer feeds it anything.
// Thread rule: one connection's strand owns it.

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>
#include <string>

#include "ipc/http_exchange.h"

namespace isolane {

struct RequestLimits {
  std::size_t maxHeaderBytes = std::size_t{16} * 1024;  // the head; also chunk lines and trailers
  std::size_t maxBodyBytes = std::size_t{1024} * 1024;
};

// A request the reader refused: what the client is told, and a short code for logs and metrics.
struct RequestError {
  unsigned status = 400;
  std::string message;  // one line for the client (plain text)
  const char* code = "malformed";
};

// A request's head once it has passed every check.
struct RequestHead {
  std::string method;
  std::string target;  // origin-form: "/path?query"
  std::string host;    // from the Host header, or from an absolute-form target
  unsigned version = 11;
  bool keepAlive = true;
  bool isHead = false;
  bool expectContinue = false;  // the client waits for "100 Continue" before its body
  HeaderList headers;           // as they came, trailers never included
};

class RequestReader {
 public:
  explicit RequestReader(RequestLimits limits);

  enum class Event {
    kNeedMore,  // read more bytes into the buffer, then call parse() again
    kHead,      // head() is ready (once per request); call parse() again for the body
    kComplete,  // the whole request is in: head() and takeBody()
    kError,     // error() says why; the connection must be answered and closed
  };

  // Parses what `buffer` holds and consumes what it used; bytes of a next (pipelined) request
  // stay in the buffer. After kComplete, call reset() before parsing the next request.
  Event parse(boost::beast::flat_buffer& buffer);

  const RequestHead& head() const { return head_; }
  // Bytes of the current request's body read so far (held until takeBody()).
  std::size_t bodyBytes() const {
    return body_.size() + (parser_ && !parser_->is_done() ? parser_->get().body().size() : 0);
  }
  std::string takeBody() { return std::move(body_); }
  // After kHead: true when a body follows (chunked, or a Content-Length above 0).
  bool hasBody() const;
  // After kHead: the body has a Content-Length of at most `max` bytes and `buffer` (what parse()
  // left of it) holds all of them: the request can go whole, its body inline, without a stream.
  bool bodyWhollyIn(const boost::beast::flat_buffer& buffer, std::size_t max) const;
  // The body bytes parsed so far and not taken yet (a streamed request body); after kComplete,
  // the rest (as takeBody()).
  std::string takeBodySoFar();
  // The header lines, moved out (head().headers is empty afterwards).
  HeaderList takeHeaders() { return std::move(head_.headers); }
  const RequestError& error() const { return error_; }

  // Starts the next request of the connection.
  void reset();
  // True when nothing of the current request has been parsed (the connection is idle).
  bool atRequestStart() const { return !started_; }
  // True once the head has been reported (kHead) and the body is being read.
  bool readingBody() const { return headReported_; }
  // The most unconsumed bytes the connection's buffer may hold at this point: a read must not
  // grow it past this.
  std::size_t bufferLimit() const;

 private:
  Event fail(unsigned status, std::string message, const char* code);
  Event failFromParser(const boost::system::error_code& ec);
  // The checks Beast leaves out; fills head_ on success.
  std::optional<RequestError> checkHead();

  RequestLimits limits_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  RequestHead head_;
  std::string body_;
  RequestError error_;
  bool started_ = false;
  bool headReported_ = false;
  bool failed_ = false;
  std::size_t scanned_ = 0;  // unconsumed bytes already checked for bare LF
};

}  // namespace isolane

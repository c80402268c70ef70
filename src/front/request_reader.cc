#include "front/request_reader.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <string_view>
#include <vector>

#include "util/http_grammar.h"

namespace isolane {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Reads of a request body may bring this much past what the framing needs.
constexpr std::size_t kBodyReadBytes = 64 * 1024;

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The first LF not preceded by CR, from `from` on; RFC 9112 lets a server refuse them, and a
// server that accepts them reads a message differently from one that does not.
bool hasBareLf(std::string_view bytes, std::size_t from) {
  for (std::size_t i = bytes.find('\n', from); i != std::string_view::npos;
       i = bytes.find('\n', i + 1)) {
    if (i == 0 || bytes[i - 1] != '\r') return true;
  }
  return false;
}

bool equalsNoCase(std::string_view a, std::string_view b);

// A CRLF followed by SP or HTAB at or after `from` (the CRLF may start up to two bytes before).
bool hasObsFold(std::string_view bytes, std::size_t from) {
  for (std::size_t i = bytes.find("\r\n", from >= 2 ? from - 2 : 0); i != std::string_view::npos;
       i = bytes.find("\r\n", i + 1)) {
    if (i + 2 < bytes.size() && (bytes[i + 2] == ' ' || bytes[i + 2] == '\t')) return true;
  }
  return false;
}

// RFC 3986 5.2.4 remove_dot_segments on an origin-form target's path, with the WHATWG URL
// parser's reading of "%2e" as "." (so the router sees the path the app's request.url will show).
// The query is kept as it is.
std::string normalizePath(std::string_view target) {
  std::size_t queryAt = target.find('?');
  std::string_view path = target.substr(0, queryAt);
  auto isDot = [](std::string_view seg) { return seg == "." || equalsNoCase(seg, "%2e"); };
  auto isDotDot = [](std::string_view seg) {
    return seg == ".." || equalsNoCase(seg, ".%2e") || equalsNoCase(seg, "%2e.") ||
           equalsNoCase(seg, "%2e%2e");
  };
  std::vector<std::string_view> out;
  bool trailingSlash = false;
  std::size_t at = 1;  // past the leading '/'
  while (at <= path.size()) {
    std::size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(at, end - at);
    bool last = end == path.size();
    if (isDotDot(seg)) {
      if (!out.empty()) out.pop_back();
      trailingSlash = true;
    } else if (isDot(seg)) {
      trailingSlash = true;
    } else {
      out.push_back(seg);
      trailingSlash = false;
    }
    if (last) break;
    at = end + 1;
  }
  std::string result;
  for (std::string_view seg : out) {
    result += '/';
    result += seg;
  }
  if (trailingSlash || result.empty()) result += '/';
  if (queryAt != std::string_view::npos) result += target.substr(queryAt);
  return result;
}

bool equalsNoCase(std::string_view a, std::string_view b) {
  return beast::iequals(beast::string_view(a.data(), a.size()),
                        beast::string_view(b.data(), b.size()));
}

bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && equalsNoCase(s.substr(0, prefix.size()), prefix);
}

}  // namespace

RequestReader::RequestReader(RequestLimits limits) : limits_(limits) { reset(); }

void RequestReader::reset() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.maxHeaderBytes));
  parser_->body_limit(limits_.maxBodyBytes);
  head_ = RequestHead{};
  body_.clear();
  started_ = false;
  headReported_ = false;
  failed_ = false;
  scanned_ = 0;
}

bool RequestReader::hasBody() const {
  if (!parser_ || !headReported_) return false;
  if (parser_->chunked()) return true;
  auto length = parser_->content_length();
  return length && *length > 0;
}

bool RequestReader::bodyWhollyIn(const boost::beast::flat_buffer& buffer, std::size_t max) const {
  if (!parser_ || !headReported_ || parser_->chunked()) return false;
  // Beast: what is left of the body (bytes it may already hold are not counted).
  auto left = parser_->content_length();
  return left && *left <= max && buffer.size() >= *left;
}

std::string RequestReader::takeBodySoFar() {
  std::string out;
  if (parser_ && !parser_->is_done()) {
    // Beast's string body appends to what it holds: taking it between put()s is safe, and the
    // body limit counts every byte the parser saw, taken or not.
    out.swap(parser_->get().body());
  } else {
    out.swap(body_);
  }
  return out;
}

std::size_t RequestReader::bufferLimit() const {
  // The head must fit; while a body is read, reads may be larger, but what stays unconsumed (a
  // chunk-size line or the trailers) is held to the head's limit by parse().
  return headReported_ ? limits_.maxHeaderBytes + kBodyReadBytes : limits_.maxHeaderBytes;
}

RequestReader::Event RequestReader::fail(unsigned status, std::string message, const char* code) {
  failed_ = true;
  error_ = RequestError{status, std::move(message), code};
  return Event::kError;
}

RequestReader::Event RequestReader::failFromParser(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return fail(431, "request header fields too large", "header-too-large");
  }
  if (ec == http::error::body_limit) {
    return fail(413, "request body larger than " + std::to_string(limits_.maxBodyBytes) + " bytes",
                "body-too-large");
  }
  if (ec == http::error::bad_transfer_encoding) {
    return fail(400, "conflicting or repeated Transfer-Encoding", "transfer-encoding");
  }
  if (ec == http::error::bad_content_length) {
    return fail(400, "invalid or conflicting Content-Length", "content-length");
  }
  if (ec == http::error::bad_line_ending) {
    return fail(400, "bare LF line ending (lines end with CRLF)", "bare-lf");
  }
  if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension) {
    return fail(400, "malformed chunked body: " + ec.message(), "chunked");
  }
  return fail(400, "malformed request: " + ec.message(), "malformed");
}

RequestReader::Event RequestReader::parse(beast::flat_buffer& buffer) {
  if (failed_) return Event::kError;
  if (parser_->is_done()) return Event::kComplete;
  for (int idle = 0;;) {
    std::string_view bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
    if (!bytes.empty()) started_ = true;
    if (!headReported_ && !bytes.empty()) {
      // The head, up to its blank line, is checked before Beast reads it: Beast would report a
      // bare LF as whatever it broke (a "bad version"), and the client deserves the real reason.
      std::size_t end = bytes.find("\r\n\r\n", scanned_ >= 3 ? scanned_ - 3 : 0);
      std::string_view head = bytes.substr(0, end == std::string_view::npos ? bytes.size() : end);
      if (hasBareLf(head, scanned_)) {
        return fail(400, "bare LF line ending (lines end with CRLF)", "bare-lf");
      }
      // obs-fold (a line continued on the next one, which starts with a space or tab): Beast
      // unfolds it, a proxy may not, and `Transfer-Encoding:\r\n chunked` would then frame the
      // request two ways. RFC 9112 5.2 lets a server refuse it.
      if (hasObsFold(head, scanned_)) {
        return fail(400, "obsolete line folding in the head", "obs-fold");
      }
      scanned_ = head.size();
    }
    boost::system::error_code ec;
    std::size_t used = bytes.empty() ? 0 : parser_->put(buffer.data(), ec);
    if (bytes.empty()) ec = http::error::need_more;
    buffer.consume(used);
    if (used > 0) scanned_ = 0;
    if (ec == http::error::need_more) {
      // What is left unconsumed is a partial head, chunk-size line or trailer section: nothing
      // Beast would ever take with a bare LF in it, and nothing that may grow past the head limit.
      std::string_view left(static_cast<const char*>(buffer.data().data()), buffer.size());
      if (headReported_) {
        if (hasBareLf(left, scanned_)) {
          return fail(400, "bare LF line ending (lines end with CRLF)", "bare-lf");
        }
        scanned_ = left.size();
      }
      if (left.size() >= limits_.maxHeaderBytes) {
        if (!headReported_) return fail(431, "request header fields too large", "header-too-large");
        return fail(400,
                    "chunk-size line or trailer section longer than " +
                        std::to_string(limits_.maxHeaderBytes) + " bytes",
                    "chunk-framing-too-large");
      }
      return Event::kNeedMore;
    }
    if (ec) return failFromParser(ec);
    if (parser_->is_header_done() && !headReported_) {
      if (auto bad = checkHead()) {
        failed_ = true;
        error_ = std::move(*bad);
        return Event::kError;
      }
      headReported_ = true;
      parser_->eager(true);  // from here on, each put() takes all the body bytes it can
      return Event::kHead;
    }
    if (parser_->is_done()) {
      body_ = parser_->release().body();
      return Event::kComplete;
    }
    // A put() that consumed nothing only moved the parser to its next state; two in a row with
    // bytes waiting would be a parser bug, not something to spin on.
    if (used == 0 && ++idle > 2) return fail(400, "malformed request", "malformed");
  }
}

std::optional<RequestError> RequestReader::checkHead() {
  auto& req = parser_->get();
  auto bad = [](unsigned status, std::string message, const char* code) {
    return RequestError{status, std::move(message), code};
  };
  unsigned version = req.version();
  if (version != 10 && version != 11) {
    return bad(505, "HTTP version not supported (HTTP/1.0 and HTTP/1.1 are)", "version");
  }
  int teLines = 0, clLines = 0, hostLines = 0;
  std::string_view te, host;
  head_.headers.reserve(static_cast<std::size_t>(std::distance(req.begin(), req.end())));
  for (const auto& field : req) {
    std::string_view name = view(field.name_string());
    std::string_view value = view(field.value());
    if (!http_grammar::isToken(name) || !http_grammar::isFieldValue(value)) {
      return bad(400, "malformed header field", "header-field");
    }
    switch (field.name()) {
      case http::field::transfer_encoding:
        ++teLines;
        te = value;
        break;
      case http::field::content_length:
        ++clLines;
        break;
      case http::field::host:
        ++hostLines;
        host = value;
        break;
      default:
        break;
    }
    head_.headers.emplace_back(std::string(name), std::string(value));
  }
  if (clLines > 1 ||
      (clLines == 1 && req[http::field::content_length].find(',') != beast::string_view::npos)) {
    // Beast takes repeated or listed equal values; a server that takes the first or the last
    // would agree here, but the rule is: never a guess.
    return bad(400, "more than one Content-Length", "content-length");
  }
  if (teLines > 0) {
    // RFC 9112 6.1 and 6.3: only chunked is implemented, as the final and only coding; anything
    // else would be read differently by a server that does implement it.
    if (version == 10)
      return bad(400, "Transfer-Encoding in an HTTP/1.0 request", "transfer-encoding");
    if (teLines > 1 || !equalsNoCase(trimOws(te), "chunked")) {
      return bad(400, "Transfer-Encoding other than \"chunked\" is not supported",
                 "transfer-encoding");
    }
    if (clLines > 0) {
      return bad(400, "both Transfer-Encoding and Content-Length", "transfer-encoding");
    }
  }
  if (hostLines > 1) return bad(400, "more than one Host header", "host");
  if (hostLines == 0 && version == 11) return bad(400, "missing Host header", "host");
  if (hostLines == 1 && !http_grammar::isHostHeader(host)) {
    return bad(400, "invalid Host header (expected host[:port])", "host");
  }

  std::string_view target = view(req.target());
  if (!target.empty() && target[0] == '/') {
    if (!http_grammar::isOriginForm(target) || target.find('\\') != std::string_view::npos) {
      return bad(400, "invalid request target", "target");
    }
    head_.target = normalizePath(target);
    head_.host = std::string(host);
  } else if (startsWithNoCase(target, "http://") || startsWithNoCase(target, "https://")) {
    // absolute-form (RFC 9112 3.2.2): the authority in the target is the host, whatever the
    // Host header said.
    std::string_view rest = target.substr(target.find("://") + 3);
    std::size_t end = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, end);
    std::string path = end == std::string_view::npos ? "/" : std::string(rest.substr(end));
    if (path[0] == '?') path.insert(path.begin(), '/');
    if (!http_grammar::isHostHeader(authority) || !http_grammar::isOriginForm(path) ||
        path.find('\\') != std::string::npos) {
      return bad(400, "invalid request target", "target");
    }
    head_.target = normalizePath(path);
    head_.host = std::string(authority);
    // The app sees the host the request was routed by, in Host too (RFC 9112 3.2.2).
    bool replaced = false;
    for (auto& [name, value] : head_.headers) {
      if (equalsNoCase(name, "host")) {
        value = head_.host;
        replaced = true;
      }
    }
    if (!replaced) head_.headers.emplace_back("host", head_.host);
  } else {
    return bad(400, "invalid request target (origin-form or absolute-form expected)", "target");
  }

  head_.method = std::string(view(req.method_string()));
  head_.version = version;
  head_.keepAlive = req.keep_alive();
  head_.isHead = req.method() == http::verb::head;
  head_.expectContinue = beast::iequals(req[http::field::expect], "100-continue");
  return std::nullopt;
}

}  // namespace isolane

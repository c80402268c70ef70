#include "ipc/response_check.h"

#include "util/http_grammar.h"

namespace isolane {
namespace {

// A name safe to quote in a log line: cut short, control characters shown as '?'.
std::string printable(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 64; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  if (s.size() > 64) out += "...";
  return out;
}

std::optional<std::string> checkHeaderLines(const HeaderList& headers, const char* what) {
  if (headers.size() > kMaxResponseHeaderCount) {
    return std::string(what) + " has " + std::to_string(headers.size()) +
           " header lines; the limit is " + std::to_string(kMaxResponseHeaderCount);
  }
  std::size_t bytes = 0;
  for (const auto& [name, value] : headers) {
    if (!http_grammar::isToken(name)) {
      return std::string(what) + " has an invalid header name \"" + printable(name) +
             "\" (names are RFC 9110 tokens)";
    }
    if (int at = http_grammar::firstBadFieldChar(value); at >= 0) {
      return std::string(what) + " header \"" + printable(name) +
             "\" has a forbidden character (byte " +
             std::to_string(static_cast<unsigned char>(value[static_cast<std::size_t>(at)])) +
             " at offset " + std::to_string(at) + "; CR, LF, NUL and controls are refused)";
    }
    bytes += name.size() + value.size() + 4;
    if (bytes > kMaxResponseHeaderBytes) {
      return std::string(what) + " headers exceed " + std::to_string(kMaxResponseHeaderBytes) +
             " bytes";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkResponseHead(int status, const std::string& statusText,
                                             const HeaderList& headers) {
  if (status < kMinAppStatus || status > kMaxAppStatus) {
    return "response status " + std::to_string(status) + " is outside " +
           std::to_string(kMinAppStatus) + "-" + std::to_string(kMaxAppStatus);
  }
  if (statusText.size() > kMaxReasonPhraseBytes) {
    return "response status text is " + std::to_string(statusText.size()) +
           " bytes; the limit is " + std::to_string(kMaxReasonPhraseBytes);
  }
  if (!http_grammar::isReasonPhrase(statusText)) {
    return "response status text has a forbidden character (CR, LF, NUL or a control)";
  }
  return checkHeaderLines(headers, "response");
}

std::optional<std::string> checkRequestHead(const std::string& method, const HeaderList& headers) {
  if (!http_grammar::isToken(method)) {
    return "request method \"" + printable(method) + "\" is not an RFC 9110 token";
  }
  return checkHeaderLines(headers, "request");
}

}  // namespace isolane

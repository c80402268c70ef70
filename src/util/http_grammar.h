#pragma once
// The HTTP grammar of RFC 9110/9112 that isolane checks bytes against wherever they cross a trust
// boundary: an app's response head (in the worker, then again in the master), an app's outbound
// request, and a client's request head. Hand-written: a few character classes that no Debian
// library exposes on its own (Beast keeps its own internal).
//
// Pure functions of their input; safe from any thread.

#include <cstdint>
#include <string_view>

namespace isolane::http_grammar {

// tchar (RFC 9110 5.6.2): "!#$%&'*+-.^_`|~", DIGIT, ALPHA.
constexpr bool isTchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != 0 &&
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// token = 1*tchar: header names and methods.
constexpr bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!isTchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// field-vchar / SP / HTAB (RFC 9110 5.5): visible ASCII, obs-text (0x80-0xFF), space and tab.
// CR, LF, NUL and every other control character (DEL included) are refused, as Node's
// http module refuses them.
constexpr bool isFieldChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

constexpr bool isFieldValue(std::string_view s) {
  for (char c : s) {
    if (!isFieldChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// reason-phrase = *( HTAB / SP / VCHAR / obs-text ) (RFC 9112 4): the same characters.
constexpr bool isReasonPhrase(std::string_view s) { return isFieldValue(s); }

// The first byte of `s` that isFieldValue refuses, or -1.
constexpr int firstBadFieldChar(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!isFieldChar(static_cast<unsigned char>(s[i]))) return static_cast<int>(i);
  }
  return -1;
}

// Host = uri-host [ ":" port ] (RFC 9110 7.2), where uri-host is a reg-name of unreserved
// characters and sub-delims, an IPv4 address (a reg-name too) or a bracketed IPv6 literal.
// Stricter than RFC 3986 in one way: percent-encoded octets are refused, so what the router
// matched is byte for byte the host the app's request.url shows.
constexpr bool isHostHeader(std::string_view s) {
  if (s.empty()) return false;
  std::size_t hostEnd;
  if (s[0] == '[') {
    hostEnd = s.find(']');
    if (hostEnd == std::string_view::npos || hostEnd < 2) return false;
    for (std::size_t i = 1; i < hostEnd; ++i) {
      char c = s[i];
      bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex && c != ':' && c != '.') return false;
    }
    ++hostEnd;
  } else {
    hostEnd = s.find(':');
    if (hostEnd == std::string_view::npos) hostEnd = s.size();
    if (hostEnd == 0) return false;
    for (std::size_t i = 0; i < hostEnd; ++i) {
      char c = s[i];
      bool unreserved = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                        (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_' || c == '~';
      bool subDelim = c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' ||
                      c == '*' || c == '+' || c == ',' || c == ';' || c == '=';
      if (!unreserved && !subDelim) return false;
    }
  }
  if (hostEnd == s.size()) return true;
  if (s[hostEnd] != ':') return false;
  std::string_view port = s.substr(hostEnd + 1);
  if (port.size() > 5) return false;
  std::uint32_t value = 0;
  for (char c : port) {  // an empty port is allowed by the grammar ("host:")
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  return value <= 65535;
}

// origin-form = absolute-path [ "?" query ] (RFC 9112 3.2.1): starts with '/', then visible
// ASCII with no '#' (a fragment is never part of a request target).
constexpr bool isOriginForm(std::string_view s) {
  if (s.empty() || s[0] != '/') return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') return false;
  }
  return true;
}

}  // namespace isolane::http_grammar

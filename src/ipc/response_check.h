#pragma once
// What an app may put in a response head, checked in C++ wherever the head crosses a trust
// boundary: in the worker when it leaves JavaScript, in the master when it arrives from a worker,
// and in the front before it is serialized. JavaScript-side checks protect nothing (an app can
// rewrite every prototype); these do.
//
// Pure functions; safe from any thread.

#include <cstddef>
#include <optional>
#include <string>

#include "ipc/http_exchange.h"

namespace isolane {

// Limits on an app's response head. Over any of them the request is answered 500 HANDLER_ERROR.
inline constexpr int kMinAppStatus = 200;  // 1xx only for protocol upgrades, which apps cannot do
inline constexpr int kMaxAppStatus = 599;
inline constexpr std::size_t kMaxResponseHeaderCount = 500;
// Names, values and the ": " and CRLF of each line, summed.
inline constexpr std::size_t kMaxResponseHeaderBytes = 64u << 10;
inline constexpr std::size_t kMaxReasonPhraseBytes = 512;

// nullopt when the head may go on the wire; otherwise what is wrong with it, for the log (it names
// the header, never echoes a whole value).
std::optional<std::string> checkResponseHead(int status, const std::string& statusText,
                                             const HeaderList& headers);
inline std::optional<std::string> checkResponseHead(const AppResponse& r) {
  return checkResponseHead(r.status, r.statusText, r.headers);
}

// The same rules for an outbound request an app makes (fetch, service bindings): a token method
// and valid header lines, so no app can split a request on a shared upstream connection.
std::optional<std::string> checkRequestHead(const std::string& method, const HeaderList& headers);

}  // namespace isolane

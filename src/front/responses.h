#pragma once
// Responses the server writes itself: errors of the protocol (400, 413, 431), routing (404),
// and failures of a request (500, 503, 504). Plain text, never an app's stack or message.

#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "ipc/http_exchange.h"

namespace isolane {

using StringResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Hop-by-hop and framing headers (Connection, Transfer-Encoding, Content-Length, ...) are the
// server's to write, never an app's.
bool isHopByHopHeader(std::string_view name);

// Appends the head of `head` as it goes on the wire (status line, fields, blank line) to `out`:
// one contiguous buffer, so that a small answer leaves in one piece instead of one for each
// field (Beast's serializer hands the socket a buffer per field line).
void appendResponseHead(const boost::beast::http::response_header<>& head, std::string& out);

std::shared_ptr<StringResponse> simpleResponse(unsigned status, std::string body,
                                               const std::string& requestId, unsigned version);

// The client sees the status, a one-line reason, the request id (to quote to the operator), and
// the failure code in x-isolane-error; the details went to the log.
std::shared_ptr<StringResponse> failureResponse(const AppResponse& failure,
                                                const std::string& requestId, unsigned version);

}  // namespace isolane

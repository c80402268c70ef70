#pragma once
// Request ids: 16 hex digits, unique per process run, cheap to make on any reactor thread; or,
// from a trusted proxy (nginx's $request_id, Envoy's x-request-id), the one it sent.

#include <string>
#include <string_view>

namespace isolane {

// Safe from any thread.
std::string newRequestId();

// Whether `value` may be adopted as a request id: 1 to 128 characters of [A-Za-z0-9._:-]. It is
// logged and sent back, so nothing else (no spaces, quotes or control characters) is taken.
bool isWellFormedRequestId(std::string_view value);

}  // namespace isolane

#pragma once
// The C++ side of the runtime's respond(id, status, statusText, headers, body, waitUntil): turns
// the values JavaScript hands over into an AppResponse, trusting none of them. Each value must
// have the exact type expected (no toString/valueOf is called), and the head must pass
// checkResponseHead; otherwise the error says what was wrong, for the log.
//
// Thread rule: the isolate's executor thread.

#include <v8.h>

#include "ipc/http_exchange.h"
#include "runtime/js_scope.h"
#include "util/result.h"

namespace isolane {

Result<AppResponse> readAppResponse(JsScope& js, v8::Local<v8::Value> status,
                                    v8::Local<v8::Value> statusText, v8::Local<v8::Value> headers,
                                    v8::Local<v8::Value> body);

}  // namespace isolane

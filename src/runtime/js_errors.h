#pragma once
// Turning a caught JavaScript exception into text for the server log: the message, where it was
// thrown (file:line of the app source), and the stack. Never for the client.

#include <v8.h>

#include <string>

#include "runtime/js_scope.h"

namespace isolane {

// The exception caught by `tryCatch`, as "file:line: Error: message" plus the stack when there is
// one. Never runs user code that could throw past us (a throwing toString is caught).
std::string describeException(JsScope& js, const v8::TryCatch& tryCatch);

// The same for a rejection reason or thrown value we hold without a TryCatch message.
std::string describeValue(JsScope& js, v8::Local<v8::Value> value);

// Converts a value to UTF-8 without throwing (a hostile toString is caught and reported).
std::string toUtf8(JsScope& js, v8::Local<v8::Value> value);

}  // namespace isolane

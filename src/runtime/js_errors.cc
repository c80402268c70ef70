#include "runtime/js_errors.h"

namespace isolane {

std::string toUtf8(JsScope& js, v8::Local<v8::Value> value) {
  if (value.IsEmpty()) return "<empty>";
  if (value->IsString()) {
    v8::String::Utf8Value s(js.isolate(), value);
    return *s ? std::string(*s, s.length()) : std::string();
  }
  v8::TryCatch guard(js.isolate());
  v8::Local<v8::String> str;
  if (!value->ToString(js.context()).ToLocal(&str)) {
    return guard.HasTerminated() ? "<terminated while converting to a string>"
                                 : "<value whose toString() throws>";
  }
  v8::String::Utf8Value s(js.isolate(), str);
  return *s ? std::string(*s, s.length()) : std::string();
}

namespace {

// The `stack` property of an Error. GetRealNamedProperty skips interceptors only: the `stack`
// accessor runs, and with it any Error.prepareStackTrace an app installed. That is app code
// running inside a turn (the watchdog is armed), and a throw is caught here.
std::string stackOf(JsScope& js, v8::Local<v8::Value> value) {
  if (!value->IsNativeError()) return {};
  v8::TryCatch guard(js.isolate());
  auto obj = value.As<v8::Object>();
  v8::Local<v8::Value> stack;
  if (!obj->GetRealNamedProperty(js.context(), js.str("stack")).ToLocal(&stack)) return {};
  if (!stack->IsString()) return {};
  return toUtf8(js, stack);
}

}  // namespace

std::string describeValue(JsScope& js, v8::Local<v8::Value> value) {
  std::string stack = stackOf(js, value);
  if (!stack.empty()) return stack;
  return toUtf8(js, value);
}

std::string describeException(JsScope& js, const v8::TryCatch& tryCatch) {
  if (tryCatch.HasTerminated()) return "execution terminated";
  std::string where;
  v8::Local<v8::Message> message = tryCatch.Message();
  if (!message.IsEmpty()) {
    std::string file = toUtf8(js, message->GetScriptResourceName());
    int line = message->GetLineNumber(js.context()).FromMaybe(0);
    int column = message->GetStartColumn(js.context()).FromMaybe(-1) + 1;
    where = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  }
  v8::Local<v8::Value> exception = tryCatch.Exception();
  std::string stack = stackOf(js, exception);
  std::string text = toUtf8(js, exception);
  if (!stack.empty() && stack.find('\n') != std::string::npos) {
    return where + text + "\n" + stack.substr(stack.find('\n') + 1);
  }
  return where + text;
}

}  // namespace isolane

#pragma once
// Reading and building JavaScript values from C++ without giving app code a say. Apps may put
// getters and setters on Object.prototype and Array.prototype (`Object.defineProperty(
// Array.prototype, 0, { set() {} })`): a plain `Set` on a fresh object then calls the app's
// setter instead of creating the property, and a `Get` of a missing key calls its getter. So C++
// creates properties with CreateDataProperty, builds arrays from their elements in one call, and
// reads only own properties, checking each value's exact type before it is used.
//
// Thread rule: the isolate's executor thread, inside a JsScope (every function takes it first).

#include <v8.h>

#include <algorithm>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ipc/http_exchange.h"
#include "runtime/js_scope.h"

namespace isolane {

// Creates (or replaces) an own data property; never calls a setter.
inline void setOwn(JsScope& js, v8::Local<v8::Object> object, v8::Local<v8::Name> key,
                   v8::Local<v8::Value> value) {
  std::ignore = object->CreateDataProperty(js.context(), key, value);
}

// The value of an own property, or an empty handle when `object` has no own property `key`.
// An own accessor would still run: use this on objects the runtime built (only data properties),
// where it guarantees no app getter runs.
inline v8::Local<v8::Value> getOwn(JsScope& js, v8::Local<v8::Object> object,
                                   v8::Local<v8::Name> key) {
  if (!object->HasOwnProperty(js.context(), key).FromMaybe(false)) return {};
  v8::Local<v8::Value> value;
  return object->Get(js.context(), key).ToLocal(&value) ? value : v8::Local<v8::Value>();
}

// Element `i` of an array when it is an own element (a hole would be looked up on
// Array.prototype, where an app may have put a getter); else an empty handle. Like getOwn, meant
// for arrays the runtime built.
inline v8::Local<v8::Value> getOwnElement(JsScope& js, v8::Local<v8::Array> array,
                                          std::uint32_t i) {
  if (!array->HasRealIndexedProperty(js.context(), i).FromMaybe(false)) return {};
  v8::Local<v8::Value> value;
  return array->Get(js.context(), i).ToLocal(&value) ? value : v8::Local<v8::Value>();
}

// A JavaScript string's UTF-8 bytes; false (and `out` untouched) unless `value` is a string.
// Never calls toString(): a value that is not already a string is refused, not converted.
// With `max`: false as well when the string is longer than `max` UTF-8 bytes (it is not
// converted then); `size`, if given, gets its length in UTF-8 bytes either way.
inline bool stringValue(JsScope& js, v8::Local<v8::Value> value, std::string* out,
                        std::size_t max = SIZE_MAX, std::size_t* size = nullptr) {
  if (value.IsEmpty() || !value->IsString()) return false;
  auto s = value.As<v8::String>();
  int length = s->Utf8Length(js.isolate());
  if (size) *size = static_cast<std::size_t>(length);
  if (static_cast<std::size_t>(length) > max) return false;
  out->resize(static_cast<std::size_t>(length));
  s->WriteUtf8(js.isolate(), out->data(), length, nullptr,
               v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
  return true;
}

// At most `max` bytes of a JavaScript string's UTF-8 (never part of a character), without
// converting the rest; `size` gets the whole string's length in UTF-8 bytes. False unless
// `value` is a string.
inline bool stringPrefix(JsScope& js, v8::Local<v8::Value> value, std::size_t max,
                         std::string* out, std::size_t* size) {
  if (value.IsEmpty() || !value->IsString()) return false;
  auto s = value.As<v8::String>();
  auto length = static_cast<std::size_t>(s->Utf8Length(js.isolate()));
  *size = length;
  out->resize(std::min(length, max));
  int written = s->WriteUtf8(js.isolate(), out->data(), static_cast<int>(out->size()), nullptr,
                             v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
  out->resize(static_cast<std::size_t>(std::max(written, 0)));
  return true;
}

// A JavaScript string of Latin-1 code units (a WebIDL ByteString: header names and values, the
// reason phrase) as those bytes; false unless `value` is a string whose every code unit is below
// 256. What an app puts in a header goes on the wire byte for byte, as Fetch specifies.
inline bool byteStringValue(JsScope& js, v8::Local<v8::Value> value, std::string* out) {
  if (value.IsEmpty() || !value->IsString()) return false;
  auto s = value.As<v8::String>();
  int length = s->Length();
  if (s->IsOneByte() || s->ContainsOnlyOneByte()) {
    out->resize(static_cast<std::size_t>(length));
    s->WriteOneByte(js.isolate(), reinterpret_cast<std::uint8_t*>(out->data()), 0, length,
                    v8::String::NO_NULL_TERMINATION);
    return true;
  }
  return false;
}

// The header list JavaScript hands C++: a flat array [name0, value0, name1, value1, ...] of
// ByteStrings. False with `error` set when it is not an array, has an odd length or more than
// `maxLines` lines, or holds anything but byte strings; grammar is checked by the caller.
bool readHeaderList(JsScope& js, v8::Local<v8::Value> value, std::size_t maxLines, HeaderList* out,
                    std::string* error);

// The flat array JavaScript receives for `headers`, with each name and value as a one-byte string
// (bytes 0x80-0xFF become U+0080-U+00FF: Fetch's isomorphic decoding), built in one call.
v8::Local<v8::Array> headerListArray(JsScope& js, const HeaderList& headers);

// A one-byte JavaScript string of these bytes (isomorphic decoding).
v8::Local<v8::String> byteString(JsScope& js, std::string_view bytes);

}  // namespace isolane

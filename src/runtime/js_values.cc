#include "runtime/js_values.h"

#include <vector>

namespace isolane {

bool readHeaderList(JsScope& js, v8::Local<v8::Value> value, std::size_t maxLines, HeaderList* out,
                    std::string* error) {
  if (value.IsEmpty() || !value->IsArray()) {
    *error = "headers are not an array";
    return false;
  }
  auto list = value.As<v8::Array>();
  std::uint32_t length = list->Length();
  if (length % 2 != 0) {
    *error = "headers array has an odd length";
    return false;
  }
  if (length / 2 > maxLines) {
    *error = std::to_string(length / 2) + " header lines; the limit is " + std::to_string(maxLines);
    return false;
  }
  out->clear();
  out->reserve(length / 2);
  for (std::uint32_t i = 0; i < length; i += 2) {
    std::string name, text;
    if (!byteStringValue(js, getOwnElement(js, list, i), &name) ||
        !byteStringValue(js, getOwnElement(js, list, i + 1), &text)) {
      *error = "header line " + std::to_string(i / 2) +
               " is not a pair of byte strings (characters above U+00FF, or not strings)";
      return false;
    }
    out->emplace_back(std::move(name), std::move(text));
  }
  return true;
}

v8::Local<v8::String> byteString(JsScope& js, std::string_view bytes) {
  return v8::String::NewFromOneByte(js.isolate(),
                                    reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                    v8::NewStringType::kNormal, static_cast<int>(bytes.size()))
      .ToLocalChecked();  // fails only past V8's string length limit; header lines are bounded
}

v8::Local<v8::Array> headerListArray(JsScope& js, const HeaderList& headers) {
  std::vector<v8::Local<v8::Value>> elements;
  elements.reserve(headers.size() * 2);
  for (const auto& [name, value] : headers) {
    elements.push_back(byteString(js, name));
    elements.push_back(byteString(js, value));
  }
  return v8::Array::New(js.isolate(), elements.data(), elements.size());
}

}  // namespace isolane

#pragma once
// JsScope: proof that the current thread has entered an isolate and one of its contexts.
// Functions that touch V8 take it first: `void fill(JsScope& js, v8::Local<v8::Object> o)`.
// It lives on the stack only: it cannot be copied, moved, stored on the heap or captured by
// reference past the statement that made it (no V8 handle lives across a wait, DESIGN rule 2).

#include <v8.h>

#include <cstddef>
#include <string_view>

#include "runtime/isolate_owner.h"

namespace isolane {

class JsScope {
 public:
  JsScope(IsolateOwner& owner, const v8::Global<v8::Context>& context)
      : isolate_(owner.isolate()),
        isolateScope_(isolate_),
        handles_(isolate_),
        context_(context.Get(isolate_)),
        contextScope_(context_) {}

  // Inside a native callback: V8 called us, so this thread is already in the isolate and its
  // current context.
  template <typename T>
  explicit JsScope(const v8::FunctionCallbackInfo<T>& info)
      : isolate_(info.GetIsolate()),
        isolateScope_(isolate_),
        handles_(isolate_),
        context_(isolate_->GetCurrentContext()),
        contextScope_(context_) {}

  JsScope(const JsScope&) = delete;
  JsScope& operator=(const JsScope&) = delete;
  JsScope(JsScope&&) = delete;
  JsScope& operator=(JsScope&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

  v8::Isolate* isolate() const { return isolate_; }
  v8::Local<v8::Context> context() const { return context_; }

  v8::Local<v8::String> str(std::string_view s) const {
    return v8::String::NewFromUtf8(isolate_, s.data(), v8::NewStringType::kNormal,
                                   static_cast<int>(s.size()))
        .ToLocalChecked();  // only fails past V8's maximum string length; our strings are small
  }

 private:
  v8::Isolate* isolate_;
  v8::Isolate::Scope isolateScope_;
  v8::HandleScope handles_;
  v8::Local<v8::Context> context_;
  v8::Context::Scope contextScope_;
};

}  // namespace isolane

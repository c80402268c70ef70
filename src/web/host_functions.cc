#include "web/host_functions.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ipc/response_check.h"
#include "obs/console_log.h"
#include "runtime/array_buffers.h"
#include "runtime/context_state.h"
#include "runtime/host_ops.h"
#include "runtime/js_errors.h"
#include "runtime/js_values.h"
#include "runtime/memory_budget.h"
#include "web/compression.h"
#include "web/subtle_crypto.h"
#include "web/utf8.h"

namespace isolane {
namespace {

using Args = v8::FunctionCallbackInfo<v8::Value>;

ContextState& stateOf(const Args& args) {
  return *ContextState::from(args.GetIsolate()->GetCurrentContext());
}

v8::Local<v8::String> newString(v8::Isolate* isolate, std::string_view s) {
  return v8::String::NewFromUtf8(isolate, s.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(s.size()))
      .ToLocalChecked();
}

void throwType(v8::Isolate* isolate, const char* message) {
  isolate->ThrowException(v8::Exception::TypeError(newString(isolate, message)));
}

// The bytes a Uint8Array (or any ArrayBufferView) covers.
bool viewBytes(v8::Local<v8::Value> value, std::uint8_t** data, std::size_t* size) {
  if (!value->IsArrayBufferView()) return false;
  auto view = value.As<v8::ArrayBufferView>();
  auto* base = static_cast<std::uint8_t*>(view->Buffer()->Data());
  *data = base ? base + view->ByteOffset() : nullptr;
  *size = view->ByteLength();
  return true;
}

void log(const Args& args) {
  ContextState& state = stateOf(args);
  JsScope js(args);
  std::string level, text;
  std::size_t size = 0;
  // Only what goes in the line is copied out of JavaScript: a 20 MiB string costs 16 KiB here.
  if (!stringValue(js, args[0], &level, 16) ||
      !stringPrefix(js, args[1], kMaxConsoleLineBytes, &text, &size)) {
    return throwType(args.GetIsolate(), "log takes a level and a text, both strings");
  }
  if (level != "debug" && level != "info" && level != "log" && level != "warn" &&
      level != "error") {
    return throwType(args.GetIsolate(), "log level must be debug, info, log, warn or error");
  }
  if (size > text.size()) {
    text += "... [console line cut: " + std::to_string(size - text.size()) + " more bytes]";
  }
  if (state.log) state.log->write(level, state.appName, state.currentRequestId, text);
  if (state.testHooks) {
    v8::Isolate* isolate = args.GetIsolate();
    v8::Local<v8::Context> context = isolate->GetCurrentContext();
    v8::Local<v8::String> key = newString(isolate, "__capturedLogs");
    v8::Local<v8::Value> list;
    if (!context->Global()->Get(context, key).ToLocal(&list) || !list->IsArray()) {
      list = v8::Array::New(isolate);
      std::ignore = context->Global()->Set(context, key, list);
    }
    v8::Local<v8::Value> pair[] = {args[0], newString(isolate, text)};
    auto array = list.As<v8::Array>();
    std::ignore = array->Set(context, array->Length(), v8::Array::New(isolate, pair, 2));
  }
}

void now(const Args& args) {
  ContextState& state = stateOf(args);
  auto elapsed = std::chrono::steady_clock::now() - state.createdAt;
  args.GetReturnValue().Set(std::chrono::duration<double, std::milli>(elapsed).count());
}

void setTimer(const Args& args) {
  ContextState& state = stateOf(args);
  if (!args[0]->IsFunction())
    return throwType(args.GetIsolate(), "timer callback must be a function");
  double delay = args[1]->IsNumber() ? args[1].As<v8::Number>()->Value() : 0;
  if (!(delay >= 0)) delay = 0;  // NaN too
  bool repeat = args[2]->BooleanValue(args.GetIsolate());
  std::uint32_t id = state.timers->setTimer(state, args[0].As<v8::Function>(), delay, repeat);
  args.GetReturnValue().Set(id);
}

void clearTimer(const Args& args) {
  ContextState& state = stateOf(args);
  if (!args[0]->IsNumber()) return;
  double id = args[0].As<v8::Number>()->Value();
  if (id >= 1 && id <= 4294967295.0)
    state.timers->clearTimer(state, static_cast<std::uint32_t>(id));
}

void enqueueMicrotask(const Args& args) {
  if (!args[0]->IsFunction()) return throwType(args.GetIsolate(), "callback must be a function");
  args.GetIsolate()->EnqueueMicrotask(args[0].As<v8::Function>());
}

void utf8Encode(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::String> s;
  if (!args[0]->ToString(isolate->GetCurrentContext()).ToLocal(&s)) return;
  int length = s->Utf8Length(isolate);
  v8::Local<v8::ArrayBuffer> buffer;
  if (!newArrayBuffer(isolate, static_cast<std::size_t>(length)).ToLocal(&buffer)) return;
  s->WriteUtf8(isolate, static_cast<char*>(buffer->Data()), length, nullptr,
               v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
  args.GetReturnValue().Set(v8::Uint8Array::New(buffer, 0, static_cast<std::size_t>(length)));
}

void utf8EncodeInto(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::String> s;
  if (!args[0]->ToString(isolate->GetCurrentContext()).ToLocal(&s)) return;
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!viewBytes(args[1], &data, &size))
    return throwType(isolate, "destination must be a Uint8Array");
  int read = 0;
  int written = s->WriteUtf8(isolate, reinterpret_cast<char*>(data), static_cast<int>(size), &read,
                             v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
  v8::Local<v8::Value> pair[] = {v8::Integer::New(isolate, read),
                                 v8::Integer::New(isolate, written)};
  args.GetReturnValue().Set(v8::Array::New(isolate, pair, 2));
}

void utf8Decode(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!viewBytes(args[0], &data, &size)) return throwType(isolate, "input must be a Uint8Array");
  bool fatal = args[1]->BooleanValue(isolate);
  if (fatal && !utf8::isValid(data, size)) {
    return throwType(isolate, "The encoded data was not valid UTF-8");
  }
  v8::Local<v8::String> s;
  if (!v8::String::NewFromUtf8(isolate, reinterpret_cast<const char*>(data),
                               v8::NewStringType::kNormal, static_cast<int>(size))
           .ToLocal(&s)) {
    isolate->ThrowException(v8::Exception::RangeError(newString(isolate, "Invalid string length")));
    return;
  }
  args.GetReturnValue().Set(s);
}

void utf8IncompleteTail(const Args& args) {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!viewBytes(args[0], &data, &size))
    return throwType(args.GetIsolate(), "input must be a Uint8Array");
  args.GetReturnValue().Set(static_cast<std::uint32_t>(utf8::incompleteTail(data, size)));
}

void getRandomValues(const Args& args) {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!viewBytes(args[0], &data, &size))
    return throwType(args.GetIsolate(), "expected a typed array");
  if (size > 65536) return throwType(args.GetIsolate(), "at most 65536 bytes at a time");
  if (size && RAND_bytes(data, static_cast<int>(size)) != 1) {
    return throwType(args.GetIsolate(), "the system random source failed");
  }
}

void randomUUID(const Args& args) {
  std::uint8_t b[16];
  if (RAND_bytes(b, sizeof b) != 1)
    return throwType(args.GetIsolate(), "the system random source failed");
  b[6] = (b[6] & 0x0F) | 0x40;  // version 4
  b[8] = (b[8] & 0x3F) | 0x80;  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  args.GetReturnValue().Set(newString(args.GetIsolate(), std::string_view(out, 36)));
}

void digest(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  JsScope js(args);
  std::string name;
  if (!stringValue(js, args[0], &name)) {
    return throwType(isolate, "digest algorithm must be a string");
  }
  const EVP_MD* md = name == "SHA-1"     ? EVP_sha1()
                     : name == "SHA-256" ? EVP_sha256()
                     : name == "SHA-384" ? EVP_sha384()
                     : name == "SHA-512" ? EVP_sha512()
                                         : nullptr;
  if (!md) return throwType(isolate, "unsupported digest algorithm");
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!viewBytes(args[1], &data, &size)) return throwType(isolate, "data must be a Uint8Array");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int outLength = 0;
  static const std::uint8_t kEmpty = 0;
  if (EVP_Digest(data ? data : &kEmpty, size, out, &outLength, md, nullptr) != 1) {
    return throwType(isolate, "digest failed");
  }
  v8::Local<v8::ArrayBuffer> buffer;
  if (!newArrayBuffer(isolate, outLength, out).ToLocal(&buffer)) return;
  args.GetReturnValue().Set(buffer);
}

// structuredClone's delegate: V8 asks it to throw when a value cannot be cloned.
class CloneDelegate final : public v8::ValueSerializer::Delegate {
 public:
  explicit CloneDelegate(v8::Isolate* isolate) : isolate_(isolate) {}
  void ThrowDataCloneError(v8::Local<v8::String> message) override {
    isolate_->ThrowException(v8::Exception::Error(message));
  }

 private:
  v8::Isolate* isolate_;
};

void structuredClone(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  v8::Local<v8::Object> result = v8::Object::New(isolate);
  v8::TryCatch tryCatch(isolate);
  CloneDelegate delegate(isolate);
  v8::ValueSerializer serializer(isolate, &delegate);
  serializer.WriteHeader();
  v8::Local<v8::Value> clone;
  bool ok = serializer.WriteValue(context, args[0]).FromMaybe(false);
  if (ok) {
    std::pair<std::uint8_t*, std::size_t> buffer = serializer.Release();
    {
      v8::ValueDeserializer deserializer(isolate, buffer.first, buffer.second);
      ok = deserializer.ReadHeader(context).FromMaybe(false) &&
           deserializer.ReadValue(context).ToLocal(&clone);
    }
    std::free(buffer.first);  // ValueSerializer's default delegate allocates with realloc
  }
  if (tryCatch.HasTerminated()) {
    tryCatch.ReThrow();
    return;
  }
  if (ok) {
    std::ignore = result->Set(context, newString(isolate, "value"), clone);
  } else {
    v8::Local<v8::Value> message = newString(isolate, "value could not be cloned");
    if (tryCatch.HasCaught() && tryCatch.Exception()->IsObject()) {
      v8::Local<v8::Value> m;
      if (tryCatch.Exception()
              .As<v8::Object>()
              ->Get(context, newString(isolate, "message"))
              .ToLocal(&m)) {
        message = m;
      }
    }
    std::ignore = result->Set(context, newString(isolate, "error"), message);
  }
  args.GetReturnValue().Set(result);
}

// {method, url, headers: [name, value, ...], body: Uint8Array|null, timeoutMs} -> AppRequest.
// Returns false (with a TypeError thrown) when the shape is wrong or the head would not be valid
// HTTP. Only our runtime calls this, but what it passes is checked as if an app had made it: the
// request goes out on a connection other apps' requests may reuse.
bool readOutbound(JsScope& js, v8::Local<v8::Value> value, AppRequest* out, double* timeoutMs) {
  v8::Isolate* isolate = js.isolate();
  if (!value->IsObject()) {
    throwType(isolate, "request init must be an object");
    return false;
  }
  auto init = value.As<v8::Object>();
  auto get = [&](const char* key) { return getOwn(js, init, js.str(key)); };
  v8::Local<v8::Value> url = get("url"), body = get("body"), timeout = get("timeoutMs");
  if (!byteStringValue(js, get("method"), &out->method) || !stringValue(js, url, &out->url)) {
    throwType(isolate, "request init needs string method and url");
    return false;
  }
  std::string error;
  if (!readHeaderList(js, get("headers"), kMaxResponseHeaderCount, &out->headers, &error)) {
    throwType(isolate, ("request headers: " + error).c_str());
    return false;
  }
  if (auto bad = checkRequestHead(out->method, out->headers)) {
    throwType(isolate, bad->c_str());
    return false;
  }
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  if (!body.IsEmpty() && viewBytes(body, &data, &size)) {
    if (size) {
      // The copy lives until the request's bytes leave the worker: the app's memory meanwhile.
      ByteCharge charge = chargeIsolateOrThrow(isolate, size, "request body");
      if (!charge) return false;
      out->body.assign(reinterpret_cast<const char*>(data), size);
      out->bodyHold = std::make_shared<ByteCharge>(std::move(charge));
    }
  } else if (!body.IsEmpty() && !body->IsNullOrUndefined()) {
    throwType(isolate, "request body must be a Uint8Array or null");
    return false;
  }
  *timeoutMs = !timeout.IsEmpty() && timeout->IsNumber() ? timeout.As<v8::Number>()->Value() : 0;
  return true;
}

void fetchStart(const Args& args) {
  ContextState& state = stateOf(args);
  AppRequest request;
  double timeoutMs = 0;
  JsScope js(args);
  if (!readOutbound(js, args[0], &request, &timeoutMs)) return;
  if (!args[1]->IsObject()) return throwType(args.GetIsolate(), "callbacks must be an object");
  auto timeout = std::chrono::milliseconds(
      timeoutMs >= 1 && timeoutMs < 86'400'000 ? static_cast<std::int64_t>(timeoutMs) : 0);
  std::uint64_t op =
      state.ops->fetchStart(state, std::move(request), timeout, args[1].As<v8::Object>());
  args.GetReturnValue().Set(static_cast<double>(op));
}

std::uint64_t opArg(const Args& args) {
  double v = args[0]->IsNumber() ? args[0].As<v8::Number>()->Value() : 0;
  return v >= 1 ? static_cast<std::uint64_t>(v) : 0;
}

void fetchPull(const Args& args) {
  ContextState& state = stateOf(args);
  if (std::uint64_t op = opArg(args)) state.ops->fetchPull(state, op);
}

void fetchAbort(const Args& args) {
  ContextState& state = stateOf(args);
  if (std::uint64_t op = opArg(args)) state.ops->fetchAbort(state, op);
}

void serviceFetch(const Args& args) {
  ContextState& state = stateOf(args);
  AppRequest request;
  double timeoutMs = 0;
  JsScope js(args);
  if (!stringValue(js, args[0], &request.app)) {
    return throwType(args.GetIsolate(), "service name must be a string");
  }
  if (!readOutbound(js, args[1], &request, &timeoutMs)) return;
  if (!args[2]->IsObject()) return throwType(args.GetIsolate(), "callbacks must be an object");
  state.ops->serviceFetch(state, std::move(request), args[2].As<v8::Object>());
}

}  // namespace

namespace {

// Every native function on `host`. The runtime snapshot records them by their place in this list
// (hostFunctionReferences), so the list is the one source of both.
constexpr HostFunction kHostFunctions[] = {
    {"log", log},
    {"now", now},
    {"setTimer", setTimer},
    {"clearTimer", clearTimer},
    {"enqueueMicrotask", enqueueMicrotask},
    {"utf8Encode", utf8Encode},
    {"utf8EncodeInto", utf8EncodeInto},
    {"utf8Decode", utf8Decode},
    {"utf8IncompleteTail", utf8IncompleteTail},
    {"getRandomValues", getRandomValues},
    {"randomUUID", randomUUID},
    {"digest", digest},
    {"structuredClone", structuredClone},
    {"fetchStart", fetchStart},
    {"fetchPull", fetchPull},
    {"fetchAbort", fetchAbort},
    {"serviceFetch", serviceFetch},
    {"zlibCreate", zlibCreate},
    {"zlibFeed", zlibFeed},
    {"zlibRead", zlibRead},
    {"zlibEnd", zlibEnd},
};

// Every list of natives, in the fixed order the snapshot's references follow.
template <typename F>
void forEachHostFunction(F&& f) {
  for (const HostFunction& h : kHostFunctions) f(h);
  for (auto list : {subtle::keyFunctions(), subtle::signFunctions(), subtle::cipherFunctions(),
                    subtle::deriveFunctions()}) {
    for (const HostFunction& h : list) f(h);
  }
}

}  // namespace

v8::Local<v8::Object> makeHostObject(JsScope& js) {
  v8::Isolate* isolate = js.isolate();
  v8::Local<v8::Context> context = js.context();
  v8::Local<v8::Object> host = v8::Object::New(isolate);
  forEachHostFunction([&](const HostFunction& f) {
    v8::Local<v8::Function> fn = v8::Function::New(context, f.callback, v8::Local<v8::Value>(), 0,
                                                   v8::ConstructorBehavior::kThrow)
                                     .ToLocalChecked();
    setOwn(js, host, js.str(f.name), fn);
  });
  setHostTimeOrigin(js, host);
  return host;
}

void setHostTimeOrigin(JsScope& js, v8::Local<v8::Object> host) {
  ContextState* state = ContextState::from(js.context());
  setOwn(js, host, js.str("timeOrigin"), v8::Number::New(js.isolate(), state->timeOriginMs));
}

const std::vector<intptr_t>& hostFunctionReferences() {
  static const std::vector<intptr_t> references = [] {
    std::vector<intptr_t> list;
    forEachHostFunction(
        [&](const HostFunction& f) { list.push_back(reinterpret_cast<intptr_t>(f.callback)); });
    return list;
  }();
  return references;
}

}  // namespace isolane

// EventLoop: the natives through which the runtime answers a request (respond, fail, and the
// natives of a streamed body), and waitUntil. The runtime's dispatch (web/js/dispatch.js) calls
// exactly one of respond, fail and streamHead per request; a streamed body then goes through
// streamChunk and ends with streamEnd or fail. Nothing these natives receive is trusted: ids
// must name a request of the calling app in the expected state, values must have the exact type.
#include <tuple>

#include "ipc/body_pipe.h"
#include "obs/log.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/app_response.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {

bool EventLoop::addNatives(JsScope& js, v8::Local<v8::Object> natives, const Native* table,
                           std::size_t count) {
  v8::Local<v8::Value> self = v8::External::New(js.isolate(), this);
  for (std::size_t i = 0; i < count; ++i) {
    v8::Local<v8::Function> fn;
    if (!v8::Function::New(js.context(), table[i].callback, self, table[i].length,
                           v8::ConstructorBehavior::kThrow)
             .ToLocal(&fn)) {
      return false;
    }
    setOwn(js, natives, js.str(table[i].name), fn);
  }
  return true;
}

bool EventLoop::makeNatives(JsScope& js, v8::Local<v8::Object>* out) {
  v8::Isolate* isolate = js.isolate();
  // No prototype: the runtime reads these as own data properties, and nothing an app does to
  // Object.prototype can stand in for one.
  v8::Local<v8::Object> natives = v8::Object::New(isolate, v8::Null(isolate), nullptr, nullptr, 0);
  const Native kNatives[] = {{"respond", &EventLoop::respondCallback, 6},
                             {"fail", &EventLoop::failCallback, 2},
                             {"streamHead", &EventLoop::streamHeadCallback, 5},
                             {"streamChunk", &EventLoop::streamChunkCallback, 2},
                             {"streamEnd", &EventLoop::streamEndCallback, 2},
                             {"bodyPull", &EventLoop::bodyPullCallback, 2},
                             {"bodyAll", &EventLoop::bodyAllCallback, 2}};
  if (!addNatives(js, natives, kNatives, std::size(kNatives))) return false;
  *out = natives;
  return true;
}

// Ends the request now, or once the ctx.waitUntil promise `waitUntil` settles (the answer has
// gone out either way).
void EventLoop::finalizeAfter(JsScope& js, std::uint64_t id, v8::Local<v8::Value> waitUntil) {
  if (!waitUntil->IsPromise() || waitUntil.As<v8::Promise>()->State() != v8::Promise::kPending) {
    finalize(id);
    return;
  }
  v8::Local<v8::Value> data[] = {v8::External::New(js.isolate(), this),
                                 v8::Number::New(js.isolate(), static_cast<double>(id))};
  v8::Local<v8::Function> settled;
  if (!v8::Function::New(js.context(), &EventLoop::waitUntilSettled,
                         v8::Array::New(js.isolate(), data, 2), 0, v8::ConstructorBehavior::kThrow)
           .ToLocal(&settled) ||
      waitUntil.As<v8::Promise>()->Then(js.context(), settled, settled).IsEmpty()) {
    finalize(id);  // cannot wait for it: end the request's background work now
  }
}

// respond(id, status, statusText, headers, body, waitUntil)
void EventLoop::respondCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = self->callingRequest(info, Expect::kUnanswered);
  if (id == 0) return;
  JsScope js(info);
  Result<AppResponse> response = readAppResponse(js, info[1], info[2], info[3], info[4]);
  if (!response) {
    self->fail(id, FailureKind::kHandlerError,
               "the app's response was refused: " + response.error());
    return;
  }
  self->respond(id, std::move(response.value()));
  self->finalizeAfter(js, id, info[5]);
}

// fail(id, error): before the head, the request fails; after it, the stream is cut.
void EventLoop::failCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = self->callingRequest(info, Expect::kUnanswered);
  if (id == 0) id = self->callingRequest(info, Expect::kStreaming);
  if (id == 0) return;
  JsScope js(info);
  self->fail(id, FailureKind::kHandlerError, describeValue(js, info[1]));
}

// streamHead(id, status, statusText, headers, control) -> the credit (bytes the body may send
// before it waits for control(CREDIT)), or false when the head was refused (the request failed).
void EventLoop::streamHeadCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  info.GetReturnValue().Set(false);
  std::uint64_t id = self->callingRequest(info, Expect::kUnanswered);
  if (id == 0) return;
  Request& req = self->requests_.at(id);
  JsScope js(info);
  if (req.clientGone) {
    // The client went away before the head: nobody would read the stream.
    self->fail(id, FailureKind::kHandlerError, "the client went away before the response");
    return;
  }
  if (!req.job.sink || !info[4]->IsFunction()) {
    self->fail(id, FailureKind::kInternal, "a streamed head where no stream was asked for");
    return;
  }
  Result<AppResponse> head = readAppResponse(js, info[1], info[2], info[3], v8::Null(js.isolate()));
  if (!head) {
    self->fail(id, FailureKind::kHandlerError, "the app's response was refused: " + head.error());
    return;
  }
  head.value().streamed = true;
  req.stream.emplace(self->clock_.now(), StreamLimits{self->options_.streamIdleTimeout,
                                                      self->options_.streamMaxDuration});
  req.control.Reset(js.isolate(), info[4].As<v8::Function>());
  self->requests_.setDeadline(req, req.stream->deadline());  // its limits replace its timeout
  self->respond(id, std::move(head.value()));
  info.GetReturnValue().Set(static_cast<double>(req.stream->credit()));
}

// streamChunk(id, bytes) -> the credit left (below zero by at most this piece), or false when the
// stream is over (the runtime stops reading the app's stream).
void EventLoop::streamChunkCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  info.GetReturnValue().Set(false);
  std::uint64_t id = self->callingRequest(info, Expect::kStreaming);
  if (id == 0) return;
  Request& req = self->requests_.at(id);
  ResponseStream& stream = *req.stream;
  if (!info[1]->IsUint8Array() || stream.credit() <= 0) {
    // The runtime splits chunks and waits for credit: this is a bug of ours, not the app's.
    self->fail(id, FailureKind::kInternal,
               stream.credit() <= 0 ? "a streamed piece without credit"
                                    : "a streamed piece that is not bytes");
    return;
  }
  auto bytes = info[1].As<v8::Uint8Array>();
  std::size_t size = bytes->ByteLength();
  if (size == 0) {  // nothing to send (a detached view): the credit is unchanged
    info.GetReturnValue().Set(static_cast<double>(stream.credit()));
    return;
  }
  if (size > kStreamPieceBytes) {
    self->fail(id, FailureKind::kInternal, "a streamed piece over 64 KiB");
    return;
  }
  // The bytes are read where they are when they live in a backing store (no JavaScript runs
  // until piece() returns, and the sink copies what it cannot write at once); a small array on
  // V8's heap has none, and is copied.
  std::string copied;
  std::string_view piece;
  if (bytes->HasBuffer()) {
    v8::MemorySpan<std::uint8_t> contents = bytes->GetContents({});
    piece = {reinterpret_cast<const char*>(contents.data()), std::min(size, contents.size())};
  } else {
    copied.resize(size);
    copied.resize(bytes->CopyContents(copied.data(), size));
    piece = copied;
  }
  size = piece.size();
  std::int64_t left = stream.sent(size, self->clock_.now());
  self->requests_.setDeadline(req, stream.deadline());
  req.job.sink->piece(piece);
  info.GetReturnValue().Set(static_cast<double>(left));
}

// streamEnd(id, waitUntil)
void EventLoop::streamEndCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = self->callingRequest(info, Expect::kStreaming);
  if (id == 0) return;
  Request& req = self->requests_.at(id);
  req.stream.reset();
  req.control.Reset();
  req.job.sink->end();
  JsScope js(info);
  self->finalizeAfter(js, id, info[1]);
}

std::uint64_t EventLoop::callingRequest(const v8::FunctionCallbackInfo<v8::Value>& info,
                                        Expect expect) {
  // The id must name a request in flight of the app whose context is calling.
  if (!info[0]->IsNumber()) return 0;
  double value = info[0].As<v8::Number>()->Value();
  if (!(value >= 1 && value < 9007199254740992.0)) return 0;
  auto id = static_cast<std::uint64_t>(value);
  auto* it = requests_.find(id);
  if (!it) return 0;
  bool expected = expect == Expect::kInFlight     ? true
                  : expect == Expect::kUnanswered ? !it->responded
                                                  : it->stream.has_value();
  if (!expected) return 0;
  ContextState* state = ContextState::from(info.GetIsolate()->GetCurrentContext());
  if (state != &it->app->state) return 0;
  return id;
}

void EventLoop::waitUntilSettled(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Local<v8::Context> context = info.GetIsolate()->GetCurrentContext();
  auto data = info.Data().As<v8::Array>();
  auto* self =
      static_cast<EventLoop*>(data->Get(context, 0).ToLocalChecked().As<v8::External>()->Value());
  auto id =
      static_cast<std::uint64_t>(data->Get(context, 1).ToLocalChecked().As<v8::Number>()->Value());
  self->finalize(id);
}

}  // namespace isolane

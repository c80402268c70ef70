// EventLoop: a request body that arrives after its request, piece by piece, as the client sends it
// (RequestJob::bodyStreamed). The runtime reads it one of two ways (web/js/body.js):
// - as a stream (`request.body`): bodyPull hands it the next piece, one turn each;
// - whole (`text()`, `json()`, `arrayBuffer()`, `bytes()`, ... before anyone read `.body`):
//   bodyAll gathers it into one buffer of its Content-Length, each piece copied there on this
//   thread as it arrives (no turn, no promise, no concatenation in JavaScript), and hands it over
//   once, at its end. A body without a Content-Length is read as a stream.
// Each piece is acknowledged (job.bodyConsumed) once it is in JavaScript's hands or in the
// gathered buffer, which opens the master's window for the next.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <tuple>

#include "runtime/array_buffers.h"
#include "runtime/js_scope.h"
#include "runtime/memory_budget.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {
namespace {

// The body's length when its head declares exactly one and no Transfer-Encoding. The master's
// parser has already held the body to it.
std::optional<std::uint64_t> declaredLength(const HeaderList& headers) {
  for (const auto& header : headers) {
    if (headerNameIs(header.first, "transfer-encoding")) return std::nullopt;
  }
  return declaredContentLength(headers);
}

// `size` bytes at `data` (from malloc) as an ArrayBuffer that owns them, and their charge, until
// it is collected.
v8::Local<v8::ArrayBuffer> adoptGathered(v8::Isolate* isolate, char* data, std::size_t size,
                                         ByteCharge charge) {
  struct Held {
    char* data;
    ByteCharge charge;
    ~Held() { std::free(data); }
  };
  auto* held = new Held{data, std::move(charge)};
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(
      data, size, [](void*, std::size_t, void* owner) { delete static_cast<Held*>(owner); }, held);
  return v8::ArrayBuffer::New(isolate, std::move(store));
}

}  // namespace

void EventLoop::requestBody(std::uint64_t id, std::string piece, bool end, std::string error) {
  auto* it = requests_.find(id);  // none: the request ended, and nobody reads the rest
  if (!it || it->bodyEnded || !it->bodyError.empty()) return;
  Request& req = *it;
  if (!piece.empty()) {
    if (req.bodyGather) {
      gatherPiece(req, piece);  // past its length: bodyError, which stands
    } else {
      req.bodyPieces.push_back(std::move(piece));
    }
  }
  if (req.bodyError.empty()) {
    if (!error.empty()) {
      req.bodyError = std::move(error);
    } else if (end) {
      req.bodyEnded = true;
    }
  }
  if (req.bodyWaiter.IsEmpty()) return;
  // A gathered body is handed over only at its end; a pulled one piece by piece.
  if (!req.bodyGather || req.bodyEnded || !req.bodyError.empty()) bodyReady_.push_back(req.id);
}

bool EventLoop::gatherPiece(Request& req, const std::string& piece) {
  Request::BodyGather& gather = *req.bodyGather;
  if (piece.size() > gather.size - gather.filled) {
    req.bodyError = "the body is longer than its Content-Length";
    return false;
  }
  bool charged = gather.charge.resize(gather.filled + piece.size());
  if (!charged) {
    // As V8 does before it refuses an allocation: ArrayBuffers nothing reaches any more (an
    // earlier body the app has dropped) give their charge back, and the charge is tried again.
    v8::Isolate::Scope scope(owner_.isolate());
    owner_.isolate()->LowMemoryNotification();
    charged = gather.charge.resize(gather.filled + piece.size());
  }
  if (!charged) {
    req.bodyError = "a body of " + std::to_string(gather.size) +
                    " bytes does not fit in the app's memory outside its heap";
    req.bodyOutOfRoom = true;
    return false;
  }
  std::memcpy(gather.data.get() + gather.filled, piece.data(), piece.size());
  gather.filled += piece.size();
  if (req.job.bodyConsumed) req.job.bodyConsumed(piece.size());
  return true;
}

void EventLoop::deliverBodies() {
  if (bodyReady_.empty()) return;  // most passes: no deque made (one allocates)
  std::deque<std::uint64_t> ready;
  ready.swap(bodyReady_);
  for (std::uint64_t id : ready) {
    auto* it = requests_.find(id);
    // An id may be listed more than once (a piece arrived for each): deliver only what is there.
    if (!it || it->bodyWaiter.IsEmpty()) continue;
    bool settled = it->bodyEnded || !it->bodyError.empty();
    if (it->bodyGather ? !settled : it->bodyPieces.empty() && !settled) continue;
    turn(*it->app, id, [&](JsScope& js, v8::TryCatch&) {
      auto* r = requests_.find(id);
      if (!r) return;
      Request& req = *r;
      v8::Isolate* isolate = js.isolate();
      v8::Local<v8::Function> waiter = req.bodyWaiter.Get(isolate);
      req.bodyWaiter.Reset();
      auto call = [&](int kind, v8::Local<v8::Value> value) {
        v8::Local<v8::Value> argv[] = {v8::Integer::New(isolate, kind), value};
        std::ignore = waiter->Call(js.context(), v8::Undefined(isolate), value.IsEmpty() ? 1 : 2,
                                   argv);
      };
      if (req.bodyGather) {
        Request::BodyGather gather = std::move(*req.bodyGather);
        req.bodyGather.reset();
        if (req.bodyError.empty() && gather.filled != gather.size) {
          req.bodyError = "the body is shorter than its Content-Length";
        }
        if (!req.bodyError.empty()) return call(req.bodyOutOfRoom ? 3 : 2, js.str(req.bodyError));
        std::size_t size = gather.size;
        v8::Local<v8::ArrayBuffer> buffer =
            adoptGathered(isolate, gather.data.release(), size, std::move(gather.charge));
        return call(0, v8::Uint8Array::New(buffer, 0, size));
      }
      if (!req.bodyPieces.empty()) {
        std::string piece = std::move(req.bodyPieces.front());
        req.bodyPieces.pop_front();
        v8::Local<v8::ArrayBuffer> buffer;
        if (!newArrayBufferQuietly(isolate, piece.size(), piece.data()).ToLocal(&buffer)) {
          return call(2, js.str("no room for the request body"));
        }
        if (req.job.bodyConsumed) req.job.bodyConsumed(piece.size());
        return call(0, v8::Uint8Array::New(buffer, 0, piece.size()));
      }
      if (!req.bodyError.empty()) return call(2, js.str(req.bodyError));
      call(1, {});
    });
  }
}

// bodyPull(id, callback): callback(0, Uint8Array) with the next piece of the streamed request
// body, callback(1) at its end, or callback(2, message) when it failed; exactly once, later (never
// from inside this call).
void EventLoop::bodyPullCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = self->callingRequest(info, Expect::kInFlight);
  if (id == 0 || !info[1]->IsFunction()) return;
  Request& req = self->requests_.at(id);
  if (req.bodyGather) return;  // read whole already: there is no stream
  req.bodyPulled = true;
  req.bodyWaiter.Reset(info.GetIsolate(), info[1].As<v8::Function>());
  if (!req.bodyPieces.empty() || req.bodyEnded || !req.bodyError.empty()) {
    self->bodyReady_.push_back(id);
  }
}

// bodyAll(id, callback) -> boolean: true when the host gathers the whole body, then
// callback(0, Uint8Array of all of it) or callback(2, message), exactly once, later; false (and
// nothing happens) when the body has no declared length or is already read another way. A
// buffer the isolate has no room for is a RangeError thrown here.
void EventLoop::bodyAllCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  info.GetReturnValue().Set(false);
  EventLoop* self = loopOf(info);
  std::uint64_t id = self->callingRequest(info, Expect::kInFlight);
  if (id == 0 || !info[1]->IsFunction()) return;
  Request& req = self->requests_.at(id);
  if (!req.job.bodyStreamed || req.bodyPulled || req.bodyGather || !req.bodyWaiter.IsEmpty()) {
    return;
  }
  std::optional<std::uint64_t> length = declaredLength(req.job.request.headers);
  if (!length || *length == 0) return;
  v8::Isolate* isolate = info.GetIsolate();
  std::shared_ptr<ByteBudget> budget = isolateMemoryBudget(isolate);
  if (budget && *length > budget->cap()) {
    std::string message = "The request body of " + std::to_string(*length) +
                          " bytes is larger than the app's memory outside its heap";
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked()));
    return;
  }
  // Room for all of it at once (memory malloc hands out again is warm: no page to fault in per
  // request), charged to the app as the bytes arrive: a client that announces a large body and
  // sends little takes little of the app's budget. What it can announce is bounded by
  // max_body_bytes (1 MiB by default) and by the budget (above).
  Request::BodyGather gather;
  gather.data.reset(static_cast<char*>(std::malloc(*length)));
  if (!gather.data) {
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8Literal(isolate, "Array buffer allocation failed")));
    return;
  }
  gather.size = *length;
  gather.charge = ByteCharge::take(std::move(budget), 0);
  req.bodyGather = std::move(gather);
  req.bodyWaiter.Reset(isolate, info[1].As<v8::Function>());
  info.GetReturnValue().Set(true);
  // What arrived before: gathered now.
  while (!req.bodyPieces.empty() && req.bodyError.empty()) {
    std::string piece = std::move(req.bodyPieces.front());
    req.bodyPieces.pop_front();
    self->gatherPiece(req, piece);
  }
  req.bodyPieces.clear();
  if (req.bodyEnded || !req.bodyError.empty()) self->bodyReady_.push_back(id);
}

}  // namespace isolane

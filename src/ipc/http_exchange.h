#pragma once
// The request an app is asked to answer and the answer it gives, as plain data. This is what
// crosses from the HTTP front to a backend and back; the worker-pool issue puts it on the wire.
// Nothing untrusted crosses as a live object: headers and bodies are bytes.

#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/byte_budget.h"

namespace isolane {

class BodyPipe;

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Whether header name `name` is `lower` (written in lower case), ignoring ASCII case.
inline bool headerNameIs(std::string_view name, std::string_view lower) {
  if (name.size() != lower.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// The length a head declares: its one Content-Length, made of digits alone; none when it has
// none, more than one, or one that is not such a number.
inline std::optional<std::uint64_t> declaredContentLength(const HeaderList& headers) {
  std::optional<std::uint64_t> length;
  for (const auto& [name, value] : headers) {
    if (!headerNameIs(name, "content-length")) continue;
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty() || length) {
      return std::nullopt;
    }
    length = n;
  }
  return length;
}

struct AppRequest {
  std::string app;        // the mounted app's name
  std::string requestId;  // shown to the client on errors and in every log line
  std::string method;
  std::string url;  // absolute, as the app sees it
  HeaderList headers;
  std::string body;
  // A body streamed as it arrives (then `body` is empty): the front pushes, the backend takes
  // and acknowledges each piece once the app has read it.
  std::shared_ptr<BodyPipe> bodyStream = {};
  // Keeps the memory `body` is charged to charged while it lives (a worker's copy of an app's
  // outbound body counts against the app isolate's budget, runtime/memory_budget.h): whoever
  // takes `body` onward takes this along until the bytes have left the process.
  std::shared_ptr<const void> bodyHold = {};
  // Of an app marked streaming (SSE endpoints and the like): admitted against the stream cap from
  // the start, not only once its head says the body streams.
  bool streaming = false;
};

// Why a request did not get the app's own answer. The front maps each to a status. The values
// cross the wire (wire.fbs Failure.kind): append only.
enum class FailureKind : std::uint8_t {
  kNone,             // the app answered
  kHandlerError,     // the handler threw, rejected, or returned something that is not a Response
  kCpuLimit,         // its synchronous JavaScript ran past the CPU budget and was terminated
  kHeapLimit,        // the isolate ran out of heap while it ran
  kTimeout,          // no answer within the wall-clock deadline
  kOverloaded,       // no room to take it (a full queue): shed, retry later
  kShuttingDown,     // the server is stopping
  kUnknownApp,       // no app of that name is loaded
  kInternal,         // a bug of ours
  kWorkerCrashed,    // the worker process running it died (retryable: nothing was answered)
  kIsolateRecycled,  // its app's isolate was replaced (heap limit, leak) before it finished
  kClientGone,       // its client went away before it ran: it was dropped, not run
  kWithdrawn,        // given back unstarted at the master's asking, which sends it elsewhere
};
inline constexpr FailureKind kLastFailureKind = FailureKind::kWithdrawn;

// Stable, greppable codes for logs and the x-isolane-error header.
constexpr std::string_view failureCode(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return "NONE";
    case FailureKind::kHandlerError:
      return "HANDLER_ERROR";
    case FailureKind::kCpuLimit:
      return "CPU_LIMIT";
    case FailureKind::kHeapLimit:
      return "HEAP_LIMIT";
    case FailureKind::kTimeout:
      return "TIMEOUT";
    case FailureKind::kOverloaded:
      return "OVERLOADED";
    case FailureKind::kShuttingDown:
      return "SHUTTING_DOWN";
    case FailureKind::kUnknownApp:
      return "UNKNOWN_APP";
    case FailureKind::kInternal:
      return "INTERNAL";
    case FailureKind::kWorkerCrashed:
      return "WORKER_CRASHED";
    case FailureKind::kIsolateRecycled:
      return "ISOLATE_RECYCLED";
    case FailureKind::kClientGone:
      return "CLIENT_GONE";
    case FailureKind::kWithdrawn:
      return "WITHDRAWN";
  }
  return "INTERNAL";
}

constexpr int failureStatus(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return 200;
    case FailureKind::kTimeout:
      return 504;
    case FailureKind::kOverloaded:
    case FailureKind::kShuttingDown:
    case FailureKind::kIsolateRecycled:
      return 503;
    case FailureKind::kUnknownApp:
      return 404;
    case FailureKind::kWorkerCrashed:
      return 502;
    case FailureKind::kClientGone:
      return 499;  // nginx's "client closed request": logged, never written (nobody reads it)
    default:
      return 500;
  }
}

struct AppResponse {
  int status = 200;
  std::string statusText;
  HeaderList headers;
  std::string body;
  FailureKind failure = FailureKind::kNone;
  std::string failureDetail;  // for the log, never for the client
  std::string shedReason;     // kOverloaded only: why it was shed (x-isolane-shed)
  // A streamed body: the head is complete and `body` is empty; the bytes follow through the
  // pipe (set by the backend, for the front). `streamed` marks such a head where it is made (in
  // the event loop), before a backend attaches the pipe.
  bool streamed = false;
  std::shared_ptr<BodyPipe> stream = {};
  // As AppRequest::bodyHold: a worker's copy of an app's whole body stays charged to the app's
  // isolate until its frames are written.
  std::shared_ptr<const void> bodyHold = {};
  // In the master: `body`'s charge to the budget of bytes held for clients, taken as it arrived
  // from the worker and handed to the front, which holds it until the client has read it.
  std::shared_ptr<ByteCharge> clientCharge = {};

  // True for failures the client may retry: the server, not the request, was the cause.
  bool retryable() const {
    return failure == FailureKind::kOverloaded || failure == FailureKind::kShuttingDown ||
           failure == FailureKind::kWorkerCrashed || failure == FailureKind::kIsolateRecycled;
  }

  static AppResponse shed(std::string reason, std::string detail) {
    AppResponse r = failed(FailureKind::kOverloaded, std::move(detail));
    r.shedReason = std::move(reason);
    return r;
  }

  static AppResponse failed(FailureKind kind, std::string detail) {
    AppResponse r;
    r.status = failureStatus(kind);
    r.failure = kind;
    r.failureDetail = std::move(detail);
    return r;
  }
};

}  // namespace isolane

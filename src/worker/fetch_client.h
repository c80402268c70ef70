#pragma once
// FetchClient: the network half of outbound fetch(). HTTP/1.1 (and HTTPS with certificate and
// host-name verification) on its own reactor thread, which never enters V8. The executor thread
// starts, pulls and aborts operations; the reactor answers with events in a bounded queue and
// rings the executor's doorbell (a wake carries no data). One exchange per operation: redirects
// are followed hop by hop by the JavaScript fetch(), which starts a new operation for each.
//
// Thread rule: start(), pull(), abort(), drainInto() are called by the executor thread only;
// everything else runs on the reactor thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "ipc/http_exchange.h"
#include "util/bounded_queue.h"
#include "util/doorbell.h"
#include "worker/fetch_policy.h"

namespace isolane {

struct FetchInit {
  std::string method = "GET";
  std::string url;  // absolute http: or https:
  HeaderList headers;
  std::string body;
  std::chrono::milliseconds timeout{30'000};  // whole exchange, from start to the last byte
  FetchPolicy policy;
};

struct FetchEvent {
  enum class Kind { kHead, kChunk, kEnd, kError };
  std::uint64_t op = 0;
  Kind kind = Kind::kError;
  int status = 0;
  std::string statusText;
  HeaderList headers;
  std::string data;       // kChunk: bytes; kError: message
  std::string errorKind;  // kError: policy | network | timeout | too-large | aborted
};

struct FetchClientOptions {
  std::size_t maxResponseBytes = 64u << 20;  // one response body; past it: too-large
  std::size_t eventCapacity = 4096;          // events not yet taken by the executor
  std::size_t chunkBytes = 64u << 10;        // at most this much per pulled chunk
};

class FetchClient {
 public:
  FetchClient(Doorbell& wake, FetchClientOptions options = {});
  ~FetchClient();
  FetchClient(const FetchClient&) = delete;
  FetchClient& operator=(const FetchClient&) = delete;

  std::uint64_t start(FetchInit init);
  // Asks for the next body event of `op` (kChunk, kEnd or kError).
  void pull(std::uint64_t op);
  // Closes the connection; a kError "aborted" follows unless the op already ended.
  void abort(std::uint64_t op);
  void drainInto(std::deque<FetchEvent>& out) { events_.drainInto(out); }

  class Op;

 private:
  friend class Op;
  void emit(FetchEvent event);  // reactor thread
  void ended(std::uint64_t op);  // reactor thread

  struct Impl;
  std::unique_ptr<Impl> impl_;
  Doorbell& wake_;
  const FetchClientOptions options_;
  BoundedQueue<FetchEvent> events_;
  std::atomic<std::uint64_t> nextOp_{1};
};

}  // namespace isolane

#pragma once
// FetchClient: the network half of outbound fetch(). HTTP/1.1 (and HTTPS with certificate and
// host-name verification) on its own reactor thread, which never enters V8. What it writes is
// checked here, whoever sent it (a worker may be compromised): the URL's target and host, the
// method (an RFC 9110 token) and every header line (tokens; no CR, LF, NUL or control). The executor thread
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

#include "ipc/body_pipe.h"
#include "ipc/fetch_exchange.h"
#include "ipc/http_exchange.h"
#include "util/bounded_queue.h"
#include "util/doorbell.h"
#include "worker/egress_channel.h"
#include "worker/fetch_policy.h"

namespace isolane {

struct FetchInit {
  std::string app;  // whose fetch_allow `policy` holds (the master rebuilds it from its config)
  // Keep-alive connections are reused only among operations of one key: one app under one
  // policy. A connection another tenant's request left out of step (a body its upstream did not
  // read, shaped as a request) would otherwise hand the next tenant a response it chose. Empty:
  // the connection is never pooled (code-mode executions: each is its own tenant).
  std::string poolKey;
  std::string method = "GET";
  std::string url;  // absolute http: or https:
  HeaderList headers;
  std::string body;
  // Keeps `body` charged to the app isolate it was copied from until its bytes have left
  // (AppRequest::bodyHold).
  std::shared_ptr<const void> bodyHold;
  std::chrono::milliseconds timeout{30'000};  // whole exchange, from start to the last byte
  FetchPolicy policy;
};

// Pieces of a response body an operation reads ahead of its reader, at most: one pull asks for
// one more piece, and a reader keeps up to this many asked for (the runtime's fetch body stream),
// the same window as a streamed answer's (kStreamWindowBytes of kStreamPieceBytes pieces), so
// that the next piece is on its way while the reader takes this one. Pulls past it are not owed.
inline constexpr std::size_t kFetchPiecesAhead = kStreamWindowBytes / kStreamPieceBytes;

struct FetchClientOptions {
  std::size_t maxResponseBytes = 64u << 20;  // one response body; past it: too-large
  std::size_t eventCapacity = 4096;          // events not yet taken by the executor
  std::size_t chunkBytes = 64u << 10;        // at most this much per pulled chunk
};

class FetchClient final : public EgressChannel {
 public:
  FetchClient(Doorbell& wake, FetchClientOptions options = {});
  ~FetchClient() override;
  FetchClient(const FetchClient&) = delete;
  FetchClient& operator=(const FetchClient&) = delete;

  // Safe from any thread (the master's egress calls them from each worker's reader).
  std::uint64_t start(FetchInit init) override;
  void pull(std::uint64_t op) override;
  void abort(std::uint64_t op) override;  // closes the connection
  void drainInto(std::deque<FetchEvent>& out) override { events_.drainInto(out); }

  class Op;

 private:
  friend class Op;
  // Queues `event` for the executor (moved from only when it fits); false when the queue is full.
  bool tryEmit(FetchEvent& event);  // reactor thread
  void ended(std::uint64_t op);  // reactor thread

  struct Impl;
  std::unique_ptr<Impl> impl_;
  Doorbell& wake_;
  const FetchClientOptions options_;
  BoundedQueue<FetchEvent> events_;
  std::atomic<std::uint64_t> nextOp_{1};
};

}  // namespace isolane

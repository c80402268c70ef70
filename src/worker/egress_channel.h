#pragma once
// EgressChannel: where an executor thread's outbound fetches go. In a worker process, to the
// master (worker/wire_egress.h), which performs them outside the sandbox; in process, to a
// FetchClient of the thread's own (worker/fetch_client.h).
//
// Thread rule: start(), pull(), abort() and drainInto() are called by the executor thread only.

#include <cstdint>
#include <deque>

#include "ipc/fetch_exchange.h"

namespace isolane {

struct FetchInit;

class EgressChannel {
 public:
  virtual ~EgressChannel() = default;
  virtual std::uint64_t start(FetchInit init) = 0;
  // Asks for the next body event of `op` (kChunk, kEnd or kError).
  virtual void pull(std::uint64_t op) = 0;
  // Ends it; a kError "aborted" follows unless the op already ended.
  virtual void abort(std::uint64_t op) = 0;
  virtual void drainInto(std::deque<FetchEvent>& out) = 0;
};

}  // namespace isolane

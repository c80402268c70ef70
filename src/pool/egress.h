#pragma once
// Egress: the master performs the outbound fetch() calls of the apps its workers run. The worker
// that runs untrusted JavaScript holds no network (see the worker sandbox): it sends FetchCall
// frames, and the master checks each against the configuration it holds (the app's fetch_allow
// and the address policy, enforced here at connection time), runs it on its FetchClient, and
// sends the events back as FetchEvent frames, one body piece per pull (read ahead, up
// to kFetchPiecesAhead owed: worker/fetch_client.h).
//
// Nothing a worker sends is trusted: an unknown app is refused, a pull or abort names only the
// worker's own operations, a worker holds at most kMaxOpsPerWorker operations and
// kMaxBodyBytesPerWorker of request bodies at once, and the timeout it asks for is bounded.
//
// Thread rule: every method is safe from any thread; events go out on the egress thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/fetch_exchange.h"
#include "pool/worker_channel.h"
#include "util/byte_budget.h"
#include "util/doorbell.h"
#include "util/guarded.h"
#include "worker/fetch_client.h"

namespace isolane {

class Egress {
 public:
  static constexpr std::size_t kMaxOpsPerWorker = 4096;
  // Request bodies of one worker's fetches the master holds at once (until each has its
  // response's head: a body is sent again when a pooled connection turns out closed).
  static constexpr std::size_t kMaxBodyBytesPerWorker = std::size_t{64} << 20;
  // The longest exchange a worker may ask for (the runtime asks for none: 30 s).
  static constexpr std::chrono::milliseconds kMaxTimeout{300'000};

  Egress(FetchClientOptions options, std::size_t maxFrameBytes);
  ~Egress();
  Egress(const Egress&) = delete;
  Egress& operator=(const Egress&) = delete;

  // The apps and their fetch_allow lists, from the master's configuration.
  void setApps(const std::vector<AppSpec>& apps);
  // Sends one frame to a worker; false when it is gone.
  using Reply = std::function<bool(const std::string& frame)>;
  // The reply of a worker process's operations. It holds the worker weakly: an operation that
  // outlives its worker cannot keep it.
  static std::shared_ptr<const Reply> replyTo(const std::shared_ptr<WorkerChannel>& worker);
  // A call from the worker `owner` (one per worker process lifetime); its events go to `reply`.
  void call(std::uint64_t owner, const std::shared_ptr<const Reply>& reply, FetchCall call);
  // The worker is gone: its operations are aborted and their events dropped.
  void forget(std::uint64_t owner);

 private:
  struct Op {
    std::uint64_t owner;
    std::uint64_t workerOp;
    std::shared_ptr<const Reply> reply;
  };
  void fail(const Reply& reply, std::uint64_t workerOp, const std::string& message,
            const std::string& kind);
  void run();

  const std::size_t maxFrameBytes_;
  Doorbell wake_;
  FetchClient client_;
  Guarded<std::unordered_map<std::string, FetchPolicy>> policies_;
  struct Table {
    std::unordered_map<std::uint64_t, Op> ops;  // the client's op -> whose
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> byWorker;  // -> client op
    std::unordered_map<std::uint64_t, std::size_t> perOwner;
    std::unordered_map<std::uint64_t, std::shared_ptr<ByteBudget>> bodies;  // per worker
  };
  Guarded<Table> table_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace isolane

#pragma once
// Admission: whether a request runs now, waits, or is shed with 503 + Retry-After. One component,
// used by both backends (the subprocess pool and the in-process executors), so that a server
// sheds the same way whichever runs its apps; the backends only place requests on their workers
// and tell it why one could not be placed.
// - Caps: at most maxInflight short requests and streamMaxInflight streams at once. A request
//   moves from the first to the second when its head says its body streams (toStream); an app
//   marked streaming is held by the second from the start.
// - The wait queue: requests no worker can take now, in a queue per app served round-robin, so
//   that a flood waits behind itself and never in front of its neighbours (maxQueue in all;
//   past it, 503 with the reason, unless the app has fewer waiting than the app with the most:
//   then that app's newest request gives its place up). Each waits at most queueTimeout. When
//   every worker with room is inside a long turn, or none is ready yet but one is starting, an
//   admitted request waits even past maxQueue, up to its cap: a worker comes free within the
//   CPU limit, or is about to start.
// - Fair shedding by delay: a request that would go to a worker with a standing queue is shed
//   when its app holds at least an equal share of the short requests in flight (equal shares
//   among the apps with requests in flight): the flood, not its neighbours. A heavy app (one in
//   long turns, confined by the scheduler to all workers but one) whose own queue has stood for
//   longer than shedDelay has its new requests shed with "app-overloaded".
//
// Thread rule: every method is safe from any thread. It calls nothing back: the backend runs
// what it returns (answers, requests to place again) with no lock of its own held.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/http_exchange.h"
#include "obs/metrics.h"
#include "pool/app_counts.h"
#include "pool/capped_count.h"
#include "util/clock.h"

namespace isolane {

struct AdmissionOptions {
  std::size_t maxInflight = 1024;          // short requests admitted at once
  std::size_t streamMaxInflight = 10'000;  // streams admitted at once
  std::size_t maxQueue = 0;                // requests waiting for room; 0: shed at once
  std::chrono::milliseconds queueTimeout{1'000};
  std::chrono::milliseconds shedDelay{50};  // a heavy app's queue standing this long sheds it
};

// A request waiting for room, with what placing it again needs.
struct WaitingRequest {
  AppRequest request;
  std::function<void(AppResponse)> done;
  SteadyTime arrived;
  bool replayed = false;  // the one replay of a GET whose worker died
  std::uint64_t id = 0;   // its cancel handle, kept when it leaves the queue
};

// A request that may be sent twice: nothing of it changes state by the Fetch and HTTP standards
// reckoning (GET, HEAD), and it has no body to send again.
inline bool isReplayable(const AppRequest& r) {
  return (r.method == "GET" || r.method == "HEAD") && !r.bodyStream && r.body.empty();
}

// Why no worker took a request now, as its backend saw it.
struct Unplaced {
  bool admitted = false;     // it holds room under its cap (false: the cap is full)
  bool allWedged = false;    // every worker with room is inside a long turn
  bool anyReady = false;     // a worker that may run it is ready (then it is full)
  bool anyStarting = false;  // a worker that may run it is starting, or about to
  bool confined = false;     // its app is heavy and every worker it may use is unfit
  bool fresh = true;         // it arrives now (false: it waited already and is placed again)
  SteadyTime now{};
};

// What became of a request no worker took.
struct WaitOutcome {
  std::optional<std::string> shed;  // nullopt: it waits
  // Another app's newest request, which gave its place up (answer it with "queue-full").
  std::optional<WaitingRequest> displaced;
};

class Admission {
 public:
  explicit Admission(AdmissionOptions options);

  const AdmissionOptions& options() const { return options_; }
  // The cap a request is held by: the streams' or the short requests'. Lock-free.
  CappedCount& cap(bool stream) { return stream ? streams_ : admitted_; }
  const CappedCount& cap(bool stream) const { return stream ? streams_ : admitted_; }
  // A short request's head says its body streams: it leaves the short cap for the stream cap.
  // False (nothing moved) when the stream cap is full: the stream is then refused.
  bool toStream();
  // Short requests sent to a worker and not finished, per app.
  void countApp(const std::string& app, bool up);
  // True when `app` holds at least an equal share of the short requests in flight.
  bool overFairShare(const std::string& app) const;

  // A request no worker took: it waits, or the reason it is shed ("queue-full", "stream-full",
  // "all-wedged", "worker-full", "no-worker", "app-overloaded"). `w` is moved from only if it
  // waits.
  WaitOutcome waitOrShed(WaitingRequest& w, const Unplaced& why);
  // The waiting requests that `fits` says may go now: each app's oldest in turn, round-robin,
  // until no app's oldest fits (an app's others wait behind its oldest). `fits` takes room only
  // when it says yes.
  std::vector<WaitingRequest> takeReady(const std::function<bool(const WaitingRequest&)>& fits);
  // The requests that have waited longer than queueTimeout at `now`.
  std::vector<WaitingRequest> expire(SteadyTime now);
  // Every waiting request (the backend is stopping).
  std::vector<WaitingRequest> takeAll();
  // The waiting request with this handle, taken out (its client went away).
  std::optional<WaitingRequest> cancelWaiting(std::uint64_t id);
  // Lock-free: read on every release, to wake whoever places the waiting requests.
  std::size_t waiting() const { return waiting_.load(std::memory_order_acquire); }
  // A new cancel handle (never 0). Lock-free.
  std::uint64_t nextId();

  // isolane_queue_depth and isolane_pool_inflight (short requests admitted, not answered).
  void collect(Scrape& out) const;

  // The answers to a request shed for `reason`, or waited out.
  static AppResponse shed(const std::string& reason);
  AppResponse queueTimeout() const;
  AppResponse overloaded() const;

 private:
  const AdmissionOptions options_;
  CappedCount admitted_;   // short requests (the global in-flight cap)
  CappedCount streams_;    // streams
  mutable std::mutex mu_;  // guards the members below
  std::unordered_map<std::string, std::deque<WaitingRequest>> queues_;  // by app, oldest first
  std::deque<std::string> turn_;  // the apps with requests waiting, in the order they are served
  AppCounts inFlight_;            // short requests sent to a worker and not finished
  std::size_t waitingCount_ = 0;  // requests in queues_
  std::atomic<std::size_t> waiting_{0};  // waitingCount_, for reading without mu_
  std::atomic<std::uint64_t> nextId_{1};
};

}  // namespace isolane

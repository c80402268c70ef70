#pragma once
// The in-process backend: requests run on executor threads of this process, `threads` of them,
// each hosting one isolate per app it serves (worker/executor_set.h picks the thread). The same
// threads and isolates a worker process runs, inside the server: the mode for embedding.
//
// Admission is the subprocess pool's (pool/admission.h, pool/scheduler.h): the same caps, wait
// queue, queue timeout, wedge check and shedding by delay, read from a status page the executor
// threads publish in this process's memory, so a server sheds the same way in either backend.
//
// Thread rule: every public method is safe from any thread. One thread of its own (the
// admission thread) expires waiting requests and places them when room comes free.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ipc/status_page.h"
#include "obs/metrics.h"
#include "pool/admission.h"
#include "pool/backend.h"
#include "pool/code_cache_store.h"
#include "pool/scheduler.h"
#include "util/clock.h"
#include "worker/executor_set.h"

namespace isolane {

struct InProcessOptions {
  std::size_t threads = 1;
  // Caps and the wait queue (PoolOptions' max_inflight, stream_max_inflight, max_queue,
  // queue_timeout_ms).
  AdmissionOptions admission;
  // PoolOptions::wedgedTurn: read from the threads' status page (shedDelay is admission's).
  std::chrono::milliseconds wedgedTurn{50};
  double maxWedgedShare = 1.0;  // PoolOptions::maxWedgedShare, over the executor threads
  bool reserveThread = false;   // PoolOptions::reserveThread (worker/executor_set.h)
  ExecutorOptions executor;
  // Where the apps' code caches are kept (pool/code_cache_store.h); empty: none are.
  std::string codeCacheDir;
  // Where isolane_admission_rejected_total goes; null: nowhere.
  MetricsRegistry* metrics = nullptr;
  // The admission's clock (the queue timeout); tests drive it and call tick().
  const Clock* clock = &SystemClock::instance();
};

class InProcessBackend final : public Backend {
 public:
  InProcessBackend(const InProcessOptions& options, LogSink& log);
  ~InProcessBackend() override;

  Status start(const std::vector<AppSpec>& apps) override;
  std::uint64_t submit(AppRequest request, std::function<void(AppResponse)> done) override;
  void cancel(std::uint64_t handle) override;
  void stop() override;
  std::size_t inFlight() const override;
  bool ready() const override { return true; }

  // What the admission thread does when it wakes (every few milliseconds while a request waits
  // or a thread is inside a long turn): moves what waits behind a long turn, answers the
  // requests that waited past the queue timeout, then places the waiting ones there is room
  // for. Public for tests that drive
  // the clock.
  void tick();
  std::size_t waiting() const;

  // What a request holds under admission, shared with the sinks (which may outlive the backend).
  struct Shared;

 private:
  // Places `w` on an executor, or queues it, or sheds it. Returns its handle (0: answered).
  // `fresh`: it arrives now (false: it waited, and is placed again).
  std::uint64_t place(WaitingRequest w, bool fresh);
  // On executor thread `thread` (ExecutorSet::pick's, or the scheduler's for a heavy app).
  void run(WaitingRequest w, std::size_t thread);
  // Where a short request of `app` goes when the app is heavy and there are two threads or more
  // (confined to all threads but one, pool/scheduler.h); nullopt when it is not confined.
  std::optional<Placement> heavyThread(const std::string& app);
  void shed(WaitingRequest& w, const std::string& reason, AppResponse answer);
  void admissionLoop();
  // Asks each thread inside a long turn (when another is not) to give back the GETs and HEADs
  // it has not started, to place them again.
  void withdrawFromWedged();
  // Whether there is anywhere to withdraw to: the wedge check is on and there are two threads.
  bool withdrawalsOn() const { return options_.wedgedTurn.count() > 0 && executors_->size() >= 2; }
  bool anyWedged() const;

  const InProcessOptions options_;
  Family<Counter>* rejected_ = nullptr;
  // The executor threads publish their turns here, as a worker's do for the master.
  std::unique_ptr<StatusPage> page_;
  // Shared: a streamed body's credit reaches its executor through a weak reference, and the
  // front may hold the body after the backend is gone.
  std::shared_ptr<ExecutorSet> executors_;
  const std::shared_ptr<Shared> shared_;
  const CodeCacheStore codeCache_;
  std::thread admissionThread_;
};

}  // namespace isolane

#include "pool/inprocess_backend.h"

#include <algorithm>
#include <atomic>

#include "ipc/body_pipe.h"
#include "obs/log.h"
#include "pool/app_versions.h"
#include "pool/app_counts.h"
#include "pool/body_forwarder.h"
#include "pool/capped_count.h"
#include "pool/heavy_apps.h"
#include "pool/scheduler.h"
#include "runtime/engine_key.h"

namespace isolane {

struct InProcessBackend::Shared {
  Shared(AdmissionOptions options, std::size_t threads) : admission(options), threadApps(threads) {}

  // Short requests of `app` on executor thread `thread`, counted up or down.
  void countThreadApp(std::size_t thread, const std::string& app, bool up) {
    std::lock_guard<std::mutex> lock(appsMu);
    threadApps[thread].count(app, up);
  }
  bool appOn(std::size_t thread, const std::string& app) {
    std::lock_guard<std::mutex> lock(appsMu);
    return threadApps[thread].has(app);
  }

  // Room came free or a request waits: the admission thread looks again.
  void wake() {
    {
      std::lock_guard<std::mutex> lock(mu);
      kicked = true;
    }
    cv.notify_one();
  }

  Admission admission;
  HeavyApps heavy;  // apps lately in long turns: confined to all threads but one
  std::mutex appsMu;  // guards threadApps, replayable; may be taken under mu, never mu under it
  std::vector<AppCounts> threadApps;
  // GETs and HEADs without a body on an executor thread, by id, and the thread: one on a
  // wedged thread is withdrawn (if it has not started) and placed again.
  struct Replayable {
    std::size_t thread;
    bool withdrawing = false;
  };
  std::unordered_map<std::uint64_t, Replayable> replayable;
  std::mutex mu;  // guards kicked; stopping is written under it
  std::condition_variable cv;
  bool kicked = false;
  // The admission thread sleeps until woken, not looking on its own (admissionLoop): a request
  // that could be withdrawn wakes it. Set before it looks whether there is any and read after
  // one is registered (both sequentially consistent), so one of the two sees the other.
  std::atomic<bool> sleepsUntilWoken{false};
  std::atomic<bool> stopping{false};  // read without mu on every submit
};

namespace {

// A streamed body of this process: the executor pushes its pieces into a BodyPipe the front
// reads; the front's acknowledgements go back to the executor as credit. The pipe is made only
// when a response streams. It also holds the request's place under admission until its answer,
// or its streamed body, ends.
class PipeSink final : public StreamSink {
 public:
  enum class Held { kNone, kShort, kStream };

  PipeSink(std::weak_ptr<ExecutorSet> executor, std::uint64_t key,
           std::shared_ptr<InProcessBackend::Shared> shared, std::string app, Held held,
           std::size_t thread)
      : executor_(std::move(executor)),
        key_(key),
        shared_(std::move(shared)),
        app_(std::move(app)),
        thread_(thread),
        held_(held) {
    if (held_ == Held::kShort) shared_->countThreadApp(thread_, app_, true);
  }
  ~PipeSink() override { release(); }

  // Executor thread: the head says the body streams. A short request moves to the stream cap;
  // false when that is full (the stream is then refused).
  bool holdStream() {
    if (held_ != Held::kShort) return held_ == Held::kStream;
    if (!shared_->admission.toStream()) return false;
    shared_->admission.countApp(app_, false);
    shared_->countThreadApp(thread_, app_, false);
    held_ = Held::kStream;
    return true;
  }
  // Gives the place back (once), and wakes the admission thread when a request waits for it.
  void release() {
    if (held_ == Held::kNone) return;
    Admission& a = shared_->admission;
    if (held_ == Held::kShort) {
      a.countApp(app_, false);
      shared_->countThreadApp(thread_, app_, false);
    }
    a.cap(held_ == Held::kStream).give();
    held_ = Held::kNone;
    if (a.waiting() > 0) shared_->wake();
  }

  // Executor thread, at the head of a streamed body.
  std::shared_ptr<BodyPipe> pipe() {
    if (!pipe_) {
      pipe_ = std::make_shared<BodyPipe>([executor = executor_, key = key_](std::size_t n) {
        if (auto e = executor.lock()) e->credit(key, n);
      });
    }
    return pipe_;
  }
  void piece(std::string_view bytes) override { pipe()->push(std::string(bytes)); }
  void end() override {
    pipe()->end();
    release();
  }
  void abort(FailureKind, const std::string& detail) override {
    pipe()->fail(detail);
    release();
  }

 private:
  const std::weak_ptr<ExecutorSet> executor_;
  const std::uint64_t key_;
  const std::shared_ptr<InProcessBackend::Shared> shared_;
  const std::string app_;
  const std::size_t thread_;  // the executor thread it runs on
  Held held_;  // executor thread only, once submitted
  std::shared_ptr<BodyPipe> pipe_;
};

}  // namespace

InProcessBackend::InProcessBackend(const InProcessOptions& options, LogSink& log)
    : options_(options),
      page_(std::make_unique<StatusPage>()),
      executors_(std::make_shared<ExecutorSet>(options.threads, options.executor, log,
                                               SystemClock::instance(), page_.get(),
                                               options.reserveThread)),
      shared_(std::make_shared<Shared>(options.admission,
                                       executors_->size() + (executors_->hasReserve() ? 1 : 0))),
      codeCache_(options.codeCacheDir) {
  if (options_.metrics) {
    rejected_ = &options_.metrics->counter("isolane_admission_rejected_total",
                                           "Requests shed before running, by reason", {"reason"});
    // The sinks may outlive the backend; the registry, the backend.
    options_.metrics->addCollector([weak = std::weak_ptr<Shared>(shared_)](Scrape& out) {
      if (auto shared = weak.lock()) shared->admission.collect(out);
    });
  }
  admissionThread_ = std::thread([this] { admissionLoop(); });
}

InProcessBackend::~InProcessBackend() { stop(); }

Status InProcessBackend::start(const std::vector<AppSpec>& apps) {
  std::vector<std::string> names;
  for (const AppSpec& app : apps) names.push_back(app.name);
  shared_->heavy.setApps(names);
  // Read once: each executor thread, and each isolate made again after it idled, runs these
  // bytes (pool/app_versions.h).
  std::vector<AppSpec> versioned = apps;
  readAppVersions(versioned, kMaxAppModuleBytes,
                  options_.metrics ? &appVersionInfo(*options_.metrics) : nullptr);
  for (AppSpec& app : versioned) {
    codeCache_.offer(app, engineKey());
    AppLoadReport report;
    if (Status s = executors_->loadApp(app, &report); !s) return s;
    if (Result<bool> kept =
            codeCache_.settle(engineKey(), app.name, report, !app.codeCache.empty());
        !kept) {
      logEvent(Level::kWarn, "cannot store a code cache", {{"error", kept.error()}});
    }
  }
  return Status::success();
}

std::size_t InProcessBackend::waiting() const { return shared_->admission.waiting(); }

// A handle is the request's cancel key: the same id while it waits and while it runs.
std::uint64_t InProcessBackend::submit(AppRequest request, std::function<void(AppResponse)> done) {
  if (shared_->stopping) {
    done(AppResponse::failed(FailureKind::kShuttingDown, "the backend is shutting down"));
    return 0;
  }
  std::uint64_t id = shared_->admission.nextId();
  return place(WaitingRequest{std::move(request), std::move(done), options_.clock->now(), false, id},
               /*fresh=*/true);
}

std::uint64_t InProcessBackend::place(WaitingRequest w, bool fresh) {
  Admission& admission = shared_->admission;
  bool stream = w.request.streaming;
  bool admitted = admission.cap(stream).tryTake();
  Placement placement;
  if (admitted) {
    // The whole set of threads is one worker to the scheduler: the executor set picks the thread.
    WorkerView view;
    view.eligible = true;
    view.inFlight = admission.cap(false).taken();
    if (!stream && options_.wedgedTurn.count() > 0) {
      WorkerLoad load =
          readWorkerLoad(*page_, std::chrono::steady_clock::now(), options_.wedgedTurn);
      if (load.published && load.threads > 0) {
        view.threads = load.threads;
        view.freeThreads = load.threads - std::min(load.wedged, load.threads);
        view.overloaded =
            options_.admission.shedDelay.count() > 0 &&
            load.standingDelay > options_.admission.shedDelay;
        if (load.wedged > 0) {
          shared_->heavy.observe(*page_, std::chrono::steady_clock::now(), options_.wedgedTurn);
          shared_->wake();  // what waits behind the long turn may be moved (tick)
        }
      }
    }
    // No cap per worker here: the global one is it.
    placement = placeRequest(std::span<const WorkerView>(&view, 1), stream,
                             options_.admission.maxInflight + 1);
    if (placement.slot >= 0) {
      placement.slot = static_cast<int>(executors_->pick(w.request.app));
    }
    if (placement.slot >= 0 && !stream) {
      // A heavy app gets the threads one by one, as the subprocess pool's workers.
      if (auto confined = heavyThread(w.request.app)) {
        bool overloaded = placement.overloaded;
        placement = *confined;
        placement.overloaded = overloaded && placement.slot >= 0;
      }
    }
  }
  if (admitted && placement.slot >= 0 && placement.overloaded &&
      admission.overFairShare(w.request.app)) {
    admission.cap(stream).give();
    shed(w, "overloaded", admission.overloaded());
    return 0;
  }
  if (!admitted || placement.slot < 0) {
    if (admitted) admission.cap(stream).give();  // a waiting request holds no room
    std::uint64_t id = w.id;
    WaitOutcome outcome = admission.waitOrShed(
        w, Unplaced{admitted, placement.allWedged, true, false, placement.confined, fresh,
                    options_.clock->now()});
    if (outcome.displaced) shed(*outcome.displaced, "queue-full", Admission::shed("queue-full"));
    if (outcome.shed) {
      shed(w, *outcome.shed, Admission::shed(*outcome.shed));
      return 0;
    }
    shared_->wake();  // it may wait on a wedged thread: the admission thread looks again soon
    return id;
  }
  std::uint64_t id = w.id;
  run(std::move(w), static_cast<std::size_t>(placement.slot));
  return id;
}

std::optional<Placement> InProcessBackend::heavyThread(const std::string& app) {
  std::size_t threads = executors_->size();
  auto now = std::chrono::steady_clock::now();
  if (threads < 2 || options_.wedgedTurn.count() == 0 || !shared_->heavy.heavy(app, now)) {
    return std::nullopt;
  }
  std::vector<WorkerView> views(threads);
  std::int64_t nowNs = steadyNs(now);
  for (std::size_t i = 0; i < threads; ++i) {
    WorkerView& v = views[i];
    v.slot = static_cast<int>(i);
    v.eligible = true;
    v.inFlight = executors_->pending(i);
    v.freeThreads = inLongTurn(page_->thread[i], nowNs, options_.wedgedTurn) ? 0 : 1;
    v.appHere = shared_->appOn(i, app);
  }
  return placeRequest(views, false, SIZE_MAX, heavyWorkerLimit(threads, options_.maxWedgedShare));
}

void InProcessBackend::shed(WaitingRequest& w, const std::string& reason, AppResponse answer) {
  if (rejected_) rejected_->with({reason}).inc();
  w.done(std::move(answer));
}

// `w` holds its place under its cap.
void InProcessBackend::run(WaitingRequest w, std::size_t thread) {
  std::uint64_t key = w.id;
  bool stream = w.request.streaming;
  // A GET or HEAD without a body may be given back unstarted by a wedged thread (tick) and
  // placed again; its copy is kept until it is answered.
  std::shared_ptr<WaitingRequest> replay;
  if (!stream && !w.replayed && isReplayable(w.request)) {
    replay = std::make_shared<WaitingRequest>(WaitingRequest{w.request, {}, w.arrived, true, key});
    {
      std::lock_guard<std::mutex> lock(shared_->appsMu);
      shared_->replayable[key] = Shared::Replayable{thread};
    }
    // The thread may yet start a long turn of a request before it: somebody must look.
    if (withdrawalsOn() && shared_->sleepsUntilWoken.load()) shared_->wake();
  }
  if (!stream) shared_->admission.countApp(w.request.app, true);
  auto sink = std::make_shared<PipeSink>(executors_, key, shared_, w.request.app,
                                         stream ? PipeSink::Held::kStream : PipeSink::Held::kShort,
                                         thread);
  std::weak_ptr<ExecutorSet> executor = executors_;
  std::size_t streamCap = options_.admission.streamMaxInflight;
  RequestJob job{std::move(w.request),
                 [this, done = std::move(w.done), sink, executor, key, streamCap,
                  replay](AppResponse r) mutable {
                   if (replay) {
                     {
                       std::lock_guard<std::mutex> lock(shared_->appsMu);
                       shared_->replayable.erase(key);
                     }
                     if (r.failure == FailureKind::kWithdrawn) {
                       // Given back unstarted: placed again, holding nothing meanwhile.
                       sink->release();
                       replay->done = std::move(done);
                       place(std::move(*replay), /*fresh=*/false);
                       return;
                     }
                   }
                   if (r.streamed && !sink->holdStream()) {
                     // Refused before anything reached the client: 503, and the app's stream
                     // is cancelled.
                     if (auto e = executor.lock()) e->cancel(key);
                     r = streamCapShed(streamCap);
                   }
                   if (r.streamed) {
                     r.stream = sink->pipe();
                   } else {
                     sink->release();  // answered whole: no stream holds the place
                   }
                   done(std::move(r));
                 },
                 key};
  job.sink = sink;
  std::shared_ptr<BodyPipe> body = job.request.bodyStream;
  if (body) {
    job.bodyStreamed = true;
    job.bodyConsumed = [body](std::size_t bytes) { body->acknowledge(bytes); };
  }
  if (!executors_->submitTo(thread, job)) {
    if (rejected_) rejected_->with({"queue-full"}).inc();
    job.done(AppResponse::shed("queue-full", "the executor queue is full"));
    return;
  }
  // The body's pieces follow the request into the executor, in order, as they arrive.
  if (body)
    forwardBody(*body, [executor, key](std::string piece, bool end, std::string error) {
      if (auto e = executor.lock()) e->requestBody(key, std::move(piece), end, std::move(error));
    });
}

void InProcessBackend::withdrawFromWedged() {
  if (!withdrawalsOn()) return;
  std::int64_t nowNs = steadyNs(std::chrono::steady_clock::now());
  std::vector<bool> wedged(executors_->size());
  bool any = false;
  for (std::size_t i = 0; i < wedged.size(); ++i) {
    wedged[i] = inLongTurn(page_->thread[i], nowNs, options_.wedgedTurn);
    any |= wedged[i];
  }
  if (!any || std::find(wedged.begin(), wedged.end(), false) == wedged.end()) return;
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(shared_->appsMu);
    for (auto& [id, r] : shared_->replayable) {
      if (!wedged[r.thread] || r.withdrawing) continue;
      r.withdrawing = true;
      ids.push_back(id);
    }
  }
  // Answered WITHDRAWN if it has not started (then placed again by run's callback); one that
  // has goes on.
  for (std::uint64_t id : ids) executors_->withdraw(id);
}

bool InProcessBackend::anyWedged() const {
  if (options_.wedgedTurn.count() == 0) return false;
  WorkerLoad load = readWorkerLoad(*page_, std::chrono::steady_clock::now(), options_.wedgedTurn);
  return load.wedged > 0;
}

void InProcessBackend::tick() {
  withdrawFromWedged();
  Admission& admission = shared_->admission;
  for (WaitingRequest& w : admission.expire(options_.clock->now())) {
    shed(w, "queue-timeout", admission.queueTimeout());
  }
  if (admission.waiting() == 0) return;
  // Take, in order, what there is room for now; short requests only while a thread is free of
  // a long turn. Those placed may still find the room gone (a new request took it first): they
  // then wait again, at the back.
  std::size_t shortRoom = admission.cap(false).room();
  std::size_t streamRoom = admission.cap(true).room();
  if (options_.wedgedTurn.count() > 0) {
    WorkerLoad load = readWorkerLoad(*page_, std::chrono::steady_clock::now(), options_.wedgedTurn);
    if (load.published && load.threads > 0 && load.wedged >= load.threads) shortRoom = 0;
  }
  std::vector<WaitingRequest> ready = admission.takeReady([&](const WaitingRequest& w) {
    std::size_t& room = w.request.streaming ? streamRoom : shortRoom;
    if (room == 0) return false;
    // A confined heavy app goes only where it may (placed again, it would wait at once).
    if (!w.request.streaming) {
      if (auto confined = heavyThread(w.request.app); confined && confined->slot < 0) return false;
    }
    --room;
    return true;
  });
  for (WaitingRequest& w : ready) place(std::move(w), /*fresh=*/false);
}

void InProcessBackend::admissionLoop() {
  // While requests wait it looks every few milliseconds (a wedged thread comes free without
  // giving back a place: its request may go on awaiting). While one that could be given back
  // runs, it looks too: the thread it waits on may start a long turn of another request
  // queued before it, and nothing else would say so (the request would wait the whole turn).
  // Otherwise it sleeps until woken.
  const auto period = std::clamp<std::chrono::milliseconds>(
      options_.admission.queueTimeout / 10, std::chrono::milliseconds(5),
      std::chrono::milliseconds(50));
  const auto withdrawable = [this] {
    if (!withdrawalsOn()) return false;
    std::lock_guard<std::mutex> apps(shared_->appsMu);
    return !shared_->replayable.empty();
  };
  std::unique_lock<std::mutex> lock(shared_->mu);
  while (!shared_->stopping) {
    shared_->sleepsUntilWoken.store(true);
    if (shared_->admission.waiting() > 0 || anyWedged() || withdrawable()) {
      shared_->sleepsUntilWoken.store(false);
      shared_->cv.wait_for(lock, period, [&] { return shared_->kicked || shared_->stopping; });
    } else {
      shared_->cv.wait(lock, [&] { return shared_->kicked || shared_->stopping; });
      shared_->sleepsUntilWoken.store(false);
    }
    if (shared_->stopping) break;
    shared_->kicked = false;
    lock.unlock();
    tick();
    lock.lock();
  }
}

void InProcessBackend::cancel(std::uint64_t handle) {
  if (handle == 0) return;
  // Still waiting: it leaves the queue unrun (work nobody waits for is not done).
  if (std::optional<WaitingRequest> w = shared_->admission.cancelWaiting(handle)) {
    w->done(AppResponse::failed(FailureKind::kClientGone,
                                "the client went away while the request was queued"));
    return;
  }
  executors_->cancel(handle);
}

void InProcessBackend::stop() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stopping = true;
  }
  shared_->cv.notify_all();
  if (admissionThread_.joinable()) admissionThread_.join();
  for (WaitingRequest& w : shared_->admission.takeAll()) {
    w.done(AppResponse::failed(FailureKind::kShuttingDown, "the backend is shutting down"));
  }
  executors_->stop();
}

std::size_t InProcessBackend::inFlight() const {
  // As the subprocess pool counts them: what holds room, a stream until it ends (an executor's
  // pending count lets a stream go once its head is answered), and what waits.
  const Admission& admission = shared_->admission;
  return admission.cap(false).taken() + admission.cap(true).taken() + admission.waiting();
}

}  // namespace isolane

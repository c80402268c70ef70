#include "pool/subprocess_backend.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "obs/log.h"
#include "pool/app_versions.h"
#include "pool/body_forwarder.h"
#include "pool/subprocess_state.h"
#include "pool/worker_process.h"

namespace isolane {

SubprocessBackend::SubprocessBackend(PoolOptions options, MetricsRegistry& metrics,
                                     const Clock& clock, Supervision supervision)
    : options_(std::move(options)),
      clock_(clock),
      manualSupervision_(supervision == Supervision::kManual),
      reactor_(options_.reactor, 1, "isolane-wio"),
      admission_(AdmissionOptions{options_.maxInflight, options_.streamMaxInflight,
                                  options_.maxQueue, options_.queueTimeout, options_.shedDelay}),
      clientBuffers_(options_.clientBuffers
                         ? options_.clientBuffers
                         : std::make_shared<ByteBudget>(kDefaultClientBufferBytes)),
      rejected_(metrics.counter("isolane_admission_rejected_total",
                                "Requests shed before running, by reason", {"reason"})),
      spawns_(metrics.counter("isolane_worker_spawns_total", "Worker processes started")),
      crashes_(metrics.counter("isolane_worker_crashes_total",
                               "Worker processes that died outside a shutdown", {"slot"})),
      respawns_(metrics.counter("isolane_worker_respawns_total",
                                "Workers started to replace a dead one")),
      cooldowns_(metrics.counter("isolane_slot_cooldowns_total",
                                 "Times a slot spent its crash budget and rested", {"slot"})),
      heartbeatRtt_(metrics.histogram("isolane_heartbeat_rtt_seconds", "Heartbeat round-trip time",
                                      {}, latencyBuckets())),
      workerStart_(metrics.histogram(
          "isolane_worker_start_seconds",
          "From a worker's spawn to its readiness (its apps loaded), first starts and respawns", {},
          {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10})),
      appVersions_(appVersionInfo(metrics)),
      codeCacheLoads_(metrics.counter(
          "isolane_code_cache_loads_total",
          "App loads by what became of the module's code cache: accepted, rejected (V8 refused "
          "it; recompiled), none (there was none for the module)",
          {"result"})),
      codeCacheStored_(metrics.counter("isolane_code_cache_stored_total",
                                       "Code caches made by a worker and stored by the master")),
      isolateRecycles_(metrics.counter(
          "isolane_isolate_recycles_total",
          "App isolates replaced by a fresh one: they hit their heap limit, or their live heap "
          "stayed near it after full collections")),
      consoleDropped_(metrics.counter(
          "isolane_console_dropped_lines_total",
          "Console lines of apps dropped because the app logged past its rate limit (each worker "
          "logs how many, per app, at most once a second)")),
      replays_(metrics.counter("isolane_requests_replayed_total",
                               "GET and HEAD requests sent again because their worker died "
                               "under them")),
      decisions_(metrics.counter(
          "isolane_schedule_decisions_total",
          "Where requests went, by reason: least-loaded, avoided-wedged (a worker inside a long "
          "synchronous turn was passed over), all-wedged (every worker was: it queued), "
          "quarantine-fallback (only a quarantined worker could take it), stream",
          {"reason"})),
      quarantines_(metrics.counter(
          "isolane_slot_quarantines_total",
          "Times a slot went into quarantine: its worker crashed or was killed as a last resort",
          {"slot"})),
      backoffs_(metrics.counter("isolane_slot_backoffs_total",
                                "Times the last live slot of a lane spent its crash budget and "
                                "respawned after a backoff instead of resting",
                                {"slot"})),
      streamPieces_(metrics.counter(
          "isolane_stream_pieces_total",
          "Pieces of streamed response bodies from the workers, by the way they crossed: shared "
          "(in a block of memory shared with the worker, written to the client from there) or "
          "socket (through the worker's socket, when every block was out)",
          {"path"})),
      sharedPieces_(streamPieces_.with({"shared"})),
      socketPieces_(streamPieces_.with({"socket"})),
      requestPieces_(metrics.counter(
          "isolane_request_body_pieces_total",
          "Pieces of streamed request bodies sent to the workers, by the way they crossed: "
          "shared (written into a block of memory shared with the worker) or socket (through "
          "the worker's socket, when every block was out)",
          {"path"})),
      sharedRequestPieces_(requestPieces_.with({"shared"})),
      socketRequestPieces_(requestPieces_.with({"socket"})),
      egress_(FetchClientOptions{}, options_.maxFrameBytes),
      codeCache_(options_.codeCacheDir) {
  auto addSlot = [&](const std::string& group) {
    auto slot = std::make_unique<Slot>();
    slot->index = static_cast<int>(slots_.size());
    slot->group = group;
    slot->budget = CrashBudget(options_.crashBudget);
    slot->backoff = FloorBackoff(options_.crashBudget);
    // One count per executor thread, each a socket of its worker's (WorkerProcess::kMaxSockets).
    slot->threadInFlight.assign(
        std::clamp<std::size_t>(options_.executorThreads, 1, WorkerProcess::kMaxSockets), 0);
    const Slot* raw = slot.get();
    // A worker with one executor thread answers its heartbeat between passes: a pass as long as
    // a request's CPU limit allows, and the grace a hang gets, does not make it a missed one.
    slot->life =
        WorkerLifecycle(LifecycleOptions{options_.spawnTimeout, options_.heartbeatInterval,
                                         options_.heartbeatTimeout,
                                         options_.requestCpuLimit + options_.hangGrace},
                        [this, raw](const WorkerTransition& t) { onTransitionLocked(*raw, t); });
    slots_.push_back(std::move(slot));
  };
  for (std::size_t i = 0; i < options_.size; ++i) addSlot("");
  for (const auto& [app, n] : options_.ownApps) {
    for (std::size_t i = 0; i < n; ++i) addSlot(app);
  }
  metrics.addCollector([this](Scrape& out) {
    std::vector<WorkerInfo> info = workers();
    auto perSlot = [&](const char* name, const char* help, auto value) {
      out.family(name, help, "gauge");
      for (const WorkerInfo& w : info) {
        out.sample({{"slot", slotName(w.slot)}}, static_cast<double>(value(w)));
      }
    };
    perSlot("isolane_worker_inflight",
            "Requests in flight per worker slot: sent to its worker and not finished, streamed "
            "responses included",
            [](const WorkerInfo& w) { return w.inFlight + w.streams; });
    perSlot("isolane_worker_pending",
            "Requests the worker's executor threads hold (queued or running), as it publishes "
            "them on its status page",
            [](const WorkerInfo& w) { return w.pending; });
    perSlot("isolane_worker_wedged_threads",
            "Executor threads of the worker inside one synchronous turn longer than "
            "wedged_turn_ms",
            [](const WorkerInfo& w) { return w.wedgedThreads; });
    perSlot("isolane_worker_longest_turn_seconds",
            "The longest synchronous JavaScript turn in progress in the worker",
            [](const WorkerInfo& w) { return w.longestTurn.count() / 1000.0; });
    out.family("isolane_worker_turn_cpu_seconds_total",
               "CPU time the worker's JavaScript turns used", "counter");
    for (const WorkerInfo& w : info) {
      out.sample({{"slot", slotName(w.slot)}}, static_cast<double>(w.turnCpuNs) / 1e9);
    }
    perSlot("isolane_worker_streams", "Streamed responses in flight per worker slot",
            [](const WorkerInfo& w) { return w.streams; });
    perSlot("isolane_worker_rss_bytes", "Resident memory per worker",
            [](const WorkerInfo& w) { return w.rssBytes; });
    perSlot("isolane_worker_heap_used_bytes", "V8 heap in use per worker",
            [](const WorkerInfo& w) { return w.heapUsedBytes; });
    perSlot("isolane_worker_heap_limit_bytes", "V8 heap limit per worker",
            [](const WorkerInfo& w) { return w.heapLimitBytes; });
    perSlot("isolane_worker_isolates", "App isolates alive per worker (one per app per thread)",
            [](const WorkerInfo& w) { return w.isolates; });
    perSlot("isolane_worker_up", "1 when the slot has a live, ready worker",
            [](const WorkerInfo& w) { return w.state == WorkerState::kReady ? 1 : 0; });
    perSlot("isolane_worker_quarantined",
            "1 while the slot is in quarantine (used only when no other worker can be)",
            [](const WorkerInfo& w) { return w.quarantined ? 1 : 0; });
    admission_.collect(out);
  });
  if (!manualSupervision_) {
    supervisor_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "isolane-super");
      std::unique_lock<std::mutex> lock(mu_);
      while (!stopping_) {
        lock.unlock();
        superviseOnce();
        lock.lock();
        if (!stopping_ && diskWork_.empty()) wake_.wait_for(lock, std::chrono::milliseconds(100));
      }
    });
  }
}

SubprocessBackend::~SubprocessBackend() { stop(); }

std::size_t SubprocessBackend::inFlight() const {
  return admission_.cap(false).taken() + admission_.cap(true).taken() + admission_.waiting();
}

void SubprocessBackend::releaseLocked(const Pending& p) {
  Slot& slot = *slots_[static_cast<std::size_t>(p.slot)];
  bool live = slot.generation == p.generation;
  std::size_t& count = p.stream ? slot.streams : slot.inFlight;
  if (live && count > 0) --count;
  if (live && !p.stream) slot.appRequests.remove(p.app);
  if (live && p.thread < slot.threadInFlight.size() && slot.threadInFlight[p.thread] > 0) {
    --slot.threadInFlight[p.thread];
  }
  if (!p.stream) admission_.countApp(p.app, false);
  capOf(p.stream).give();
}

void SubprocessBackend::forgetLocked(std::uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  releaseLocked(it->second);
  pending_.erase(it);
}

// Lanes divide the shared workers (slots 0 to size - 1); an app of its own process has its own.
std::size_t SubprocessBackend::streamingLane() const {
  // At least one slot stays in each lane.
  return options_.size > 1 ? std::min(options_.streamingLane, options_.size - 1) : 0;
}

bool SubprocessBackend::inStreamingLane(const Slot& slot) const {
  return lanes() && slot.group.empty() &&
         static_cast<std::size_t>(slot.index) >= options_.size - streamingLane() &&
         static_cast<std::size_t>(slot.index) < options_.size;
}

std::string SubprocessBackend::groupOf(const std::string& app) const {
  for (const auto& [own, n] : options_.ownApps) {
    if (own == app) return own;
  }
  return "";
}

bool SubprocessBackend::servesLocked(const Slot& slot, const std::string& app) const {
  if (!slot.group.empty()) return slot.group == app;
  for (const auto& [own, n] : options_.ownApps) {
    if (own == app) return false;
  }
  return true;
}

std::vector<AppSpec> SubprocessBackend::appsOf(const Slot& slot) const {
  std::vector<AppSpec> out;
  for (const AppSpec& app : apps_) {
    if (servesLocked(slot, app.name)) out.push_back(app);
  }
  return out;
}

bool SubprocessBackend::candidateLocked(const Slot& slot, const std::string& app,
                                        bool stream) const {
  if (!servesLocked(slot, app)) return false;
  return !slot.group.empty() || !lanes() || inStreamingLane(slot) == stream;
}

Status SubprocessBackend::start(const std::vector<AppSpec>& apps) {
  apps_ = apps;
  readAppVersions(apps_, maxModuleBytes(), &appVersions_);
  std::vector<std::string> names;
  for (const AppSpec& a : apps) names.push_back(a.name);
  heavy_.setApps(names);
  egress_.setApps(apps);
  if (options_.workerCommand.empty()) return Error{"no worker command configured"};
  std::unique_lock<std::mutex> lock(mu_);
  // The first worker starts alone: one ready worker is enough to serve, and on a machine with
  // few cores the others' node start-up would slow it down. The supervisor spawns the others
  // once it is ready (tests that drive supervision themselves get every slot at once).
  // Likewise the first of each app of its own process.
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = *slots_[i];
    bool firstOfGroup = i == 0 || slots_[i - 1]->group != slot.group;
    if (!manualSupervision_ && !firstOfGroup) continue;
    if (slot.life.state() == WorkerState::kResting && !slot.proc) spawnLocked(slot);
  }
  if (manualSupervision_) return Status::success();
  auto deadline =
      std::chrono::steady_clock::now() + options_.spawnTimeout + std::chrono::milliseconds(500);
  std::string error;
  while (true) {
    std::set<std::string> readyGroups, groups;
    for (auto& s : slots_) {
      groups.insert(s->group);
      if (s->life.ready()) readyGroups.insert(s->group);
      if (!s->loadError.empty() && error.empty()) error = s->loadError;
      if (s->budget.recentCrashes() > 0 && error.empty() && !s->life.reason().empty()) {
        error = "worker " + std::to_string(s->index) + " could not start: " + s->life.reason();
      }
    }
    // One ready worker of each group is enough to serve: it loaded its apps, so they are sound;
    // the others join as they become ready (and are supervised like any respawn if they do not).
    if (!error.empty() || readyGroups.size() == groups.size()) break;
    if (wake_.wait_until(lock, deadline) == std::cv_status::timeout) {
      error = "workers did not become ready within " +
              std::to_string(options_.spawnTimeout.count()) + " ms";
      break;
    }
  }
  if (!error.empty()) {
    lock.unlock();
    stop();
    return Error{error};
  }
  started_ = true;
  wake_.notify_all();  // the supervisor spawns the other slots now, while the server starts
  return Status::success();
}

std::uint64_t SubprocessBackend::submit(AppRequest request, std::function<void(AppResponse)> done) {
  return route(std::move(request), std::move(done), clock_.now());
}

void SubprocessBackend::cancel(std::uint64_t handle) {
  std::shared_ptr<WorkerChannel> proc;
  std::uint32_t thread = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = pending_.find(handle);
    if (it == pending_.end()) {
      // Still queued: it leaves the queue unrun (work nobody waits for is not done).
      lock.unlock();
      std::optional<WaitingRequest> q = admission_.cancelWaiting(handle);
      if (!q) return;  // answered already
      q->done(AppResponse::failed(FailureKind::kClientGone,
                                  "the client went away while the request was queued"));
      return;
    }
    it->second.clientGone = true;
    Slot& slot = *slots_[static_cast<std::size_t>(it->second.slot)];
    if (slot.generation != it->second.generation || !slot.proc) return;
    proc = slot.proc;
    thread = it->second.thread;
  }
  auto frame = encodeCancel(handle, options_.maxFrameBytes);
  if (frame) (void)proc->sendTo(thread, std::move(frame.value()));
}

std::uint64_t SubprocessBackend::route(AppRequest request, std::function<void(AppResponse)> done,
                                       SteadyTime arrived, bool replayed, std::uint64_t id) {
  // Admission first, before any serialization: over the global cap the answer is immediate.
  bool stream = request.streaming;
  bool admitted = capOf(stream).tryTake();
  auto unadmit = [&] {
    if (admitted) capOf(stream).give();
  };
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    unadmit();
    done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
    return 0;
  }
  Pick pick = admitted ? pickLocked(stream, request.app) : Pick{};
  Slot* slot = pick.slot;
  bool wedged = pick.allWedged;
  if (slot && pick.overloaded && admission_.overFairShare(request.app)) {
    lock.unlock();
    unadmit();
    rejected_.with({"overloaded"}).inc();
    done(admission_.overloaded());
    return 0;
  }
  if (!slot) {
    // Of the slots of this request's lane: is one ready, or starting (spawned, or dead and about
    // to be respawned by the supervisor, not resting)?
    bool anyReady = false, anyStarting = false;
    SteadyTime now = clock_.now();
    for (auto& s : slots_) {
      if (!candidateLocked(*s, request.app, stream)) continue;
      anyReady |= s->life.ready();
      // Spawning or loading, or dying to be respawned, or resting only until now.
      WorkerState state = s->life.state();
      anyStarting |= state == WorkerState::kSpawning || state == WorkerState::kLoading ||
                     state == WorkerState::kKilling ||
                     (state == WorkerState::kResting && started_ && s->life.restUntil() <= now);
    }
    bool fresh = id == 0;
    if (fresh) id = admission_.nextId();
    WaitingRequest waiting{std::move(request), std::move(done), arrived, replayed, id};
    WaitOutcome outcome = admission_.waitOrShed(
        waiting,
        Unplaced{admitted, wedged, anyReady, anyStarting, pick.confined, fresh, clock_.now()});
    lock.unlock();
    unadmit();  // a queued request holds no room while it waits
    if (outcome.displaced) {
      rejected_.with({"queue-full"}).inc();
      outcome.displaced->done(Admission::shed("queue-full"));
    }
    if (!outcome.shed) {
      if (pick.confined) {
        decisions_.with({"heavy-app-waits"}).inc();
      } else if (wedged) {
        decisions_.with({"all-wedged"}).inc();
      }
      return id;
    }
    rejected_.with({*outcome.shed}).inc();
    waiting.done(Admission::shed(*outcome.shed));
    return 0;
  }
  (stream               ? decided_.stream
   : pick.quarantined   ? decided_.quarantineFallback
   : pick.avoidedWedged ? decided_.avoidedWedged
                        : decided_.leastLoaded)
      .inc();
  if (!stream) admission_.countApp(request.app, true);
  if (id == 0) id = admission_.nextId();
  if (stream) {
    ++slot->streams;
  } else {
    ++slot->inFlight;
    slot->appRequests.add(request.app);
  }
  std::shared_ptr<WorkerChannel> proc = slot->proc;
  // Weak: a body that keeps arriving after its worker died must not keep the dead worker's
  // memory (its mapping, its resident blocks) alive, nor release it under the pool's lock.
  std::weak_ptr<StreamBlocksFile> blocks =
      request.bodyStream ? slot->blocks : std::shared_ptr<StreamBlocksFile>();
  Pending pending{
      slot->index,
      slot->generation,
      std::move(done),
      AppResponse{},
      false,
      clock_.now() + options_.requestTimeout + options_.requestCpuLimit + options_.hangGrace,
      request.app,
      request.requestId,
      {}};
  pending.stream = stream;
  pending.requestBody = request.bodyStream;
  pending.arrived = arrived;
  const std::uint32_t thread = pickThreadLocked(*slot);
  pending.thread = thread;
  ++slot->threadInFlight[thread];
  // A replayable request is kept for its replay: moved there, not copied, and read from there.
  std::shared_ptr<const AppRequest> kept;
  if (!replayed && isReplayable(request)) {
    kept = std::make_shared<const AppRequest>(std::move(request));
    pending.replay = kept;
  }
  const AppRequest& sent = kept ? *kept : request;
  pending_.emplace(id, std::move(pending));
  lock.unlock();

  // Stamped with the machine's monotonic clock (not clock_, which tests replace): the worker
  // counts the request's wait from here, time in its socket included (worker/delay_monitor.h).
  const auto sentNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(pick.at.time_since_epoch());
  Result<std::string> frame =
      encodeRequest(id, sent, 0, options_.maxFrameBytes, static_cast<std::uint64_t>(sentNs.count()));
  if (!frame) {
    finish(id, AppResponse::failed(FailureKind::kInternal, "request frame: " + frame.error()));
    return 0;
  }
  // A failed send means the worker is dying; its death answers this request.
  (void)proc->sendTo(thread, std::move(frame.value()));
  if (sent.bodyStream) {
    // Its body follows as it arrives, each piece a frame behind the request's. A dead worker
    // stops the forwarding: the send fails, and its death answers the request.
    std::weak_ptr<WorkerChannel> weak = proc;
    std::size_t max = options_.maxFrameBytes;
    // The counters live in the registry, which outlives the backend and its sessions' pipes.
    Counter* viaBlock = &sharedRequestPieces_;
    Counter* viaSocket = &socketRequestPieces_;
    forwardBody(*sent.bodyStream, [weak, blocks, id, max, thread, viaBlock, viaSocket](
                                      std::string piece, bool end, std::string error) {
      auto worker = weak.lock();
      if (!worker) return;
      // A piece crosses in one of the worker's request blocks when one is free (written there
      // by the kernel, ipc/stream_blocks.h), else as the frame's trailer, written from where it
      // is (not copied behind the head).
      // (An end or a failure has no piece: putRequestPiece refuses it, as it does a small one.)
      std::shared_ptr<StreamBlocksFile> region = blocks.lock();
      std::optional<std::uint32_t> block = region ? region->putRequestPiece(piece) : std::nullopt;
      if (block) {
        auto size = static_cast<std::uint32_t>(piece.size());
        if (auto shared = encodeSharedRequestBody(id, *block, size, max)) {
          (void)worker->sendTo(thread, std::move(shared.value()));
          viaBlock->inc();
          return;
        }
        region->takeBackRequestPiece(*block);
      }
      if (!piece.empty()) viaSocket->inc();
      auto head = encodeRequestBodyHead(id, piece.size(), end, error, max);
      if (head) (void)worker->sendTo(thread, std::move(head.value()), std::move(piece));
    });
  }
  return id;
}

void SubprocessBackend::drainQueue() {
  if (admission_.waiting() == 0) return;
  std::vector<WaitingRequest> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    // Take, in order, only what there is room for now (short requests in the short lane under
    // the global cap, streaming apps' requests in theirs under the stream cap, each in the
    // workers of its app's group), so that nothing is queued again at the back; within a group
    // and kind, the first that does not fit holds the ones behind it.
    struct Room {
      std::size_t shortRoom = 0, streamSlots = 0;
    };
    std::map<std::string, Room> rooms;  // by group ("": the shared workers)
    for (auto& s : slots_) {
      if (!s->life.ready()) continue;
      Room& room = rooms[s->group];
      if (!s->group.empty() || inStreamingLane(*s) || !lanes()) ++room.streamSlots;
      if (!inStreamingLane(*s) && s->inFlight < options_.workerMaxInflight && !wedgedLocked(*s)) {
        room.shortRoom += options_.workerMaxInflight - s->inFlight;
      }
    }
    std::size_t shortCap = capOf(false).room(), streamCap = capOf(true).room();
    ready = admission_.takeReady([&](const WaitingRequest& w) {
      Room& room = rooms[groupOf(w.request.app)];
      bool stream = w.request.streaming;
      if (stream ? room.streamSlots == 0 || streamCap == 0 : room.shortRoom == 0 || shortCap == 0) {
        return false;
      }
      // A confined heavy app goes only where it may (placed again, it would wait at once).
      if (!stream && heavy_.heavy(w.request.app, std::chrono::steady_clock::now()) &&
          pickLocked(false, w.request.app).confined) {
        return false;
      }
      if (stream) {
        --streamCap;
      } else {
        --room.shortRoom;
        --shortCap;
      }
      return true;
    });
  }
  for (WaitingRequest& q : ready) {
    route(std::move(q.request), std::move(q.done), q.arrived, q.replayed, q.id);
  }
}

void SubprocessBackend::finish(std::uint64_t id, AppResponse response) {
  std::unique_lock<std::mutex> lock(mu_);
  if (pending_.count(id)) finishLocked(id, std::move(response), lock);
}

void SubprocessBackend::finishLocked(std::uint64_t id, AppResponse response,
                                     std::unique_lock<std::mutex>& lock) {
  std::function<void(AppResponse)> done = std::move(pending_.at(id).done);
  forgetLocked(id);
  lock.unlock();
  if (done) done(std::move(response));
  drainQueue();
}

std::vector<WorkerInfo> SubprocessBackend::workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerInfo> out;
  SteadyTime now = clock_.now();
  for (const auto& s : slots_) {
    out.push_back(WorkerInfo{s->index, s->life.state(), s->proc ? s->proc->pid() : 0, s->inFlight,
                             s->streams, inStreamingLane(*s), s->rssBytes, s->heapUsedBytes,
                             s->heapLimitBytes, s->executions, s->life.restingUntilLater(now),
                             s->isolates});
    out.back().quarantined = s->quarantinedUntil > now;
    if (s->status && s->life.ready()) {
      WorkerLoad load =
          readWorkerLoad(s->status->page(), std::chrono::steady_clock::now(), options_.wedgedTurn);
      out.back().pending = load.pending;
      out.back().wedgedThreads = load.wedged;
      out.back().longestTurn = load.longestTurn;
      out.back().turnCpuNs = load.cpuNs;
    }
  }
  return out;
}

std::size_t SubprocessBackend::readyWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& s : slots_) n += s->life.ready();
  return n;
}

}  // namespace isolane

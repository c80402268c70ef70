#include "pool/subprocess_backend.h"

#include <signal.h>

#include "obs/log.h"

namespace isolane {

struct SubprocessBackend::Slot {
  int index = 0;
  SlotState state = SlotState::kEmpty;
  std::shared_ptr<WorkerProcess> proc;
  std::uint64_t generation = 0;  // frames and deaths of an older process are ignored
  std::size_t inFlight = 0;
  std::size_t appsLoaded = 0;
  bool everReady = false;
  SteadyTime spawnDeadline{};
  SteadyTime respawnAt{};  // an empty slot waits until then (a cooldown, or now)
  std::uint64_t heartbeatSeq = 0;
  bool heartbeatOutstanding = false;
  SteadyTime heartbeatSentAt{};
  SteadyTime nextHeartbeat{};
  std::string killReason;  // why we killed it, reported instead of "killed by signal SIGKILL"
  std::string loadError;
  CrashBudget budget;
  std::uint64_t rssBytes = 0, heapUsedBytes = 0, heapLimitBytes = 0, executions = 0;
};

struct SubprocessBackend::Pending {
  int slot;
  std::uint64_t generation;
  std::function<void(AppResponse)> done;
  AppResponse response;
  bool headSeen = false;
  SteadyTime hangDeadline;
  std::string app, requestId;
  std::string discard;  // non-empty: drop the body as it arrives and answer with this error
};

struct SubprocessBackend::Queued {
  AppRequest request;
  std::function<void(AppResponse)> done;
  SteadyTime arrived;
};

namespace {

// Bodies buffered in the master across all requests: past it, the response that would cross it
// is answered with an error instead (its bytes are dropped as they arrive).
constexpr std::size_t kMaxBufferedBytes = 1024u << 20;

std::string slotName(int i) { return std::to_string(i); }

}  // namespace

SubprocessBackend::SubprocessBackend(PoolOptions options, MetricsRegistry& metrics,
                                     const Clock& clock, Supervision supervision)
    : options_(std::move(options)),
      clock_(clock),
      manualSupervision_(supervision == Supervision::kManual),
      rejected_(metrics.counter("isolane_admission_rejected_total",
                                "Requests shed before running, by reason", {"reason"})),
      spawns_(metrics.counter("isolane_worker_spawns_total", "Worker processes started")),
      crashes_(metrics.counter("isolane_worker_crashes_total",
                               "Worker processes that died outside a shutdown", {"slot"})),
      respawns_(metrics.counter("isolane_worker_respawns_total",
                                "Workers started to replace a dead one")),
      cooldowns_(metrics.counter("isolane_slot_cooldowns_total",
                                 "Times a slot spent its crash budget and rested", {"slot"})),
      heartbeatRtt_(metrics.histogram("isolane_heartbeat_rtt_seconds",
                                      "Heartbeat round-trip time", {}, latencyBuckets())) {
  for (std::size_t i = 0; i < options_.size; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->index = static_cast<int>(i);
    slot->budget = CrashBudget(options_.crashBudget);
    slots_.push_back(std::move(slot));
  }
  metrics.addCollector([this](std::string& out) {
    std::vector<WorkerInfo> info = workers();
    auto perSlot = [&](const char* name, const char* help, auto value) {
      writeHeader(out, name, help, "gauge");
      for (const WorkerInfo& w : info) {
        writeSample(out, name, {{"slot", slotName(w.slot)}}, static_cast<double>(value(w)));
      }
    };
    perSlot("isolane_worker_inflight", "Requests in flight per worker slot",
            [](const WorkerInfo& w) { return w.inFlight; });
    perSlot("isolane_worker_rss_bytes", "Resident memory per worker",
            [](const WorkerInfo& w) { return w.rssBytes; });
    perSlot("isolane_worker_heap_used_bytes", "V8 heap in use per worker",
            [](const WorkerInfo& w) { return w.heapUsedBytes; });
    perSlot("isolane_worker_heap_limit_bytes", "V8 heap limit per worker",
            [](const WorkerInfo& w) { return w.heapLimitBytes; });
    perSlot("isolane_worker_up", "1 when the slot has a live, ready worker",
            [](const WorkerInfo& w) { return w.state == SlotState::kReady ? 1 : 0; });
    std::size_t depth;
    {
      std::lock_guard<std::mutex> lock(mu_);
      depth = queue_.size();
    }
    writeHeader(out, "isolane_queue_depth", "Requests waiting for room", "gauge");
    writeSample(out, "isolane_queue_depth", {}, static_cast<double>(depth));
    writeHeader(out, "isolane_pool_inflight", "Requests admitted and not answered", "gauge");
    writeSample(out, "isolane_pool_inflight", {}, static_cast<double>(inFlight()));
  });
  if (!manualSupervision_) {
    supervisor_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "isolane-super");
      std::unique_lock<std::mutex> lock(mu_);
      while (!stopping_) {
        lock.unlock();
        superviseOnce();
        lock.lock();
        if (!stopping_) wake_.wait_for(lock, std::chrono::milliseconds(100));
      }
    });
  }
}

SubprocessBackend::~SubprocessBackend() { stop(); }

bool SubprocessBackend::tryAdmit() {
  std::size_t cur = admitted_.load(std::memory_order_relaxed);
  while (cur < options_.maxInflight) {
    if (admitted_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void SubprocessBackend::release(std::size_t n) {
  admitted_.fetch_sub(n, std::memory_order_acq_rel);
}

std::size_t SubprocessBackend::inFlight() const { return admitted_.load(); }

// The live worker with the fewest requests in flight that still has room, the earliest slot on a
// tie. Starting and dead slots are never picked. Every ready worker has every app loaded (each
// spawn loads them all), so "prefer the worker that has the app" never decides anything yet.
SubprocessBackend::Slot* SubprocessBackend::pickLocked() {
  Slot* best = nullptr;
  for (auto& s : slots_) {
    if (s->state != SlotState::kReady || s->inFlight >= options_.workerMaxInflight) continue;
    if (!best || s->inFlight < best->inFlight) best = s.get();
  }
  return best;
}

Status SubprocessBackend::start(const std::vector<AppSpec>& apps) {
  apps_ = apps;
  if (options_.workerCommand.empty()) return Error{"no worker command configured"};
  std::unique_lock<std::mutex> lock(mu_);
  for (auto& slot : slots_) {
    if (slot->state == SlotState::kEmpty && !slot->proc) spawnLocked(*slot, lock);
  }
  if (manualSupervision_) return Status::success();  // tests drive supervision themselves
  auto deadline = std::chrono::steady_clock::now() + options_.spawnTimeout +
                  std::chrono::milliseconds(500);
  std::string error;
  while (true) {
    std::size_t ready = 0;
    for (auto& s : slots_) {
      if (s->state == SlotState::kReady) ++ready;
      if (!s->loadError.empty() && error.empty()) error = s->loadError;
      if (s->budget.recentCrashes() > 0 && error.empty() && !s->killReason.empty()) {
        error = "worker " + std::to_string(s->index) + " could not start: " + s->killReason;
      }
    }
    if (!error.empty() || ready == slots_.size()) break;
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
  return Status::success();
}

void SubprocessBackend::spawnLocked(Slot& slot, std::unique_lock<std::mutex>&) {
  SteadyTime now = clock_.now();
  std::uint64_t generation = ++slot.generation;
  int index = slot.index;
  std::vector<std::string> argv = options_.workerCommand;
  argv.push_back("--slot");
  argv.push_back(std::to_string(index));
  auto proc = WorkerProcess::spawn(
      argv, options_.maxFrameBytes,
      [this, index, generation](const wire::Frame& f) { onFrame(index, generation, f); },
      [this, index, generation](const std::string& why) { onDeath(index, generation, why); });
  if (!proc) {
    slot.killReason = proc.error();
    slot.respawnAt = slot.budget.recordCrash(now);
    crashes_.with({slotName(index)}).inc();
    logEvent(Level::kError, "worker spawn failed", {{"slot", index}, {"error", proc.error()}});
    wake_.notify_all();
    return;
  }
  // Never destroy a process under mu_ (its reader thread may be waiting for mu_).
  if (slot.proc) graveyard_.push_back(std::move(slot.proc));
  slot.proc = std::shared_ptr<WorkerProcess>(std::move(proc.value()));
  slot.state = SlotState::kStarting;
  slot.spawnDeadline = now + options_.spawnTimeout;
  slot.appsLoaded = 0;
  slot.inFlight = 0;
  slot.killReason.clear();
  slot.loadError.clear();
  spawns_.with({}).inc();
  if (slot.everReady) respawns_.with({}).inc();
  for (const AppSpec& app : apps_) {
    auto frame = encodeLoadApp(app.name, app.modulePath, app.vars, app.fetchAllow, app.services,
                               options_.maxFrameBytes);
    if (frame) (void)slot.proc->send(frame.value());
  }
  // The first heartbeat is answered only after the loads before it: ready means loaded.
  slot.heartbeatSeq++;
  slot.heartbeatOutstanding = true;
  slot.heartbeatSentAt = now;
  auto hb = encodeHeartbeat(slot.heartbeatSeq, options_.maxFrameBytes);
  if (hb) (void)slot.proc->send(hb.value());
  logEvent(Level::kInfo, "worker spawned", {{"slot", index}, {"pid", slot.proc->pid()}});
}

void SubprocessBackend::killLocked(Slot& slot, const std::string& reason) {
  if (slot.killReason.empty()) slot.killReason = reason;
  if (slot.proc) slot.proc->kill(SIGKILL);
}

std::uint64_t SubprocessBackend::submit(AppRequest request,
                                        std::function<void(AppResponse)> done) {
  return route(std::move(request), std::move(done), clock_.now());
}

void SubprocessBackend::cancel(std::uint64_t handle) {
  std::shared_ptr<WorkerProcess> proc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(handle);
    if (it == pending_.end()) return;  // answered already, or still queued (then it just runs)
    Slot& slot = *slots_[static_cast<std::size_t>(it->second.slot)];
    if (slot.generation != it->second.generation || !slot.proc) return;
    proc = slot.proc;
  }
  auto frame = encodeCancel(handle, options_.maxFrameBytes);
  if (frame) (void)proc->send(frame.value());
}

std::uint64_t SubprocessBackend::route(AppRequest request, std::function<void(AppResponse)> done,
                                       SteadyTime arrived) {
  // Admission first, before any serialization: over the global cap the answer is immediate.
  bool admitted = tryAdmit();
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    if (admitted) release();
    done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
    return 0;
  }
  Slot* slot = admitted ? pickLocked() : nullptr;
  if (!slot) {
    bool anyReady = false;
    for (auto& s : slots_) anyReady |= s->state == SlotState::kReady;
    std::string reason = !admitted ? "queue-full" : anyReady ? "worker-full" : "no-worker";
    if (queue_.size() < options_.maxQueue) {
      queue_.push_back(Queued{std::move(request), std::move(done), arrived});
      lock.unlock();
      if (admitted) release();
      return 0;
    }
    lock.unlock();
    if (admitted) release();
    rejected_.with({reason}).inc();
    done(AppResponse::shed(reason, "shed: " + reason));
    return 0;
  }
  std::uint64_t id = nextId_++;
  ++slot->inFlight;
  std::shared_ptr<WorkerProcess> proc = slot->proc;
  pending_.emplace(id, Pending{slot->index, slot->generation, std::move(done), AppResponse{}, false,
                               clock_.now() + options_.requestTimeout +
                                   options_.requestCpuLimit + options_.hangGrace,
                               request.app, request.requestId, {}});
  lock.unlock();

  Result<std::string> frame = encodeRequest(id, request, 0, options_.maxFrameBytes);
  if (!frame) {
    finish(id, AppResponse::failed(FailureKind::kInternal, "request frame: " + frame.error()));
    return 0;
  }
  // A failed send means the worker is dying; its death answers this request.
  (void)proc->send(frame.value());
  return id;
}

void SubprocessBackend::drainQueue() {
  std::vector<Queued> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty() || stopping_) return;
    // Take only as many as there is room for now, so they are not queued again at the back.
    std::size_t room = 0;
    for (auto& s : slots_) {
      if (s->state == SlotState::kReady && s->inFlight < options_.workerMaxInflight) {
        room += options_.workerMaxInflight - s->inFlight;
      }
    }
    std::size_t admitted = admitted_.load();
    room = std::min(room, admitted < options_.maxInflight ? options_.maxInflight - admitted : 0);
    while (!queue_.empty() && ready.size() < room) {
      ready.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  for (Queued& q : ready) route(std::move(q.request), std::move(q.done), q.arrived);
}

void SubprocessBackend::finish(std::uint64_t id, AppResponse response) {
  std::function<void(AppResponse)> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Slot& slot = *slots_[static_cast<std::size_t>(it->second.slot)];
    if (slot.generation == it->second.generation && slot.inFlight > 0) --slot.inFlight;
    done = std::move(it->second.done);
    buffered_ -= it->second.response.body.size();
    pending_.erase(it);
  }
  release();
  done(std::move(response));
  drainQueue();
}

void SubprocessBackend::onFrame(int index, std::uint64_t generation, const wire::Frame& frame) {
  std::unique_lock<std::mutex> lock(mu_);
  Slot& slot = *slots_[static_cast<std::size_t>(index)];
  if (slot.generation != generation) return;
  auto violation = [&](const std::string& what) {
    logEvent(Level::kError, "worker protocol violation",
             {{"slot", index}, {"pid", slot.proc ? slot.proc->pid() : 0}, {"error", what}});
    killLocked(slot, "protocol violation: " + what);
  };
  // Frames about one request: find it, and make sure it is this worker's.
  auto pendingFor = [&](std::uint64_t id) -> Pending* {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.slot != index ||
        it->second.generation != generation) {
      violation(std::string(wire::EnumNameMessage(frame.message_type())) +
                " for unknown request " + std::to_string(id));
      return nullptr;
    }
    return &it->second;
  };
  switch (frame.message_type()) {
    case wire::Message::Hello: {
      std::uint32_t version = frame.message_as_Hello()->version();
      if (version != kProtocolVersion) {
        violation("protocol version " + std::to_string(version) + ", expected " +
                  std::to_string(kProtocolVersion));
      }
      return;
    }
    case wire::Message::AppLoaded: {
      const wire::AppLoaded* m = frame.message_as_AppLoaded();
      if (m->ok()) {
        ++slot.appsLoaded;
      } else {
        slot.loadError = m->error() ? m->error()->str() : "app failed to load";
        killLocked(slot, "an app failed to load: " + slot.loadError);
        wake_.notify_all();
      }
      return;
    }
    case wire::Message::HeartbeatAck: {
      const wire::HeartbeatAck* m = frame.message_as_HeartbeatAck();
      SteadyTime now = clock_.now();
      slot.rssBytes = m->rss_bytes();
      slot.heapUsedBytes = m->heap_used_bytes();
      slot.heapLimitBytes = m->heap_limit_bytes();
      slot.executions = m->executions();
      if (slot.heartbeatOutstanding && m->seq() == slot.heartbeatSeq) {
        heartbeatRtt_.with({}).observe(
            std::chrono::duration<double>(now - slot.heartbeatSentAt).count());
        slot.heartbeatOutstanding = false;
        slot.nextHeartbeat = now + options_.heartbeatInterval;
      }
      if (slot.state == SlotState::kStarting && slot.appsLoaded == apps_.size()) {
        slot.state = SlotState::kReady;
        slot.everReady = true;
        logEvent(Level::kInfo, "worker ready", {{"slot", index}, {"pid", slot.proc->pid()}});
        wake_.notify_all();
        lock.unlock();
        drainQueue();
      }
      return;
    }
    case wire::Message::ResponseHead: {
      const wire::ResponseHead* m = frame.message_as_ResponseHead();
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (p->headSeen) return violation("second response head for one request");
      p->headSeen = true;
      p->response.status = m->status();
      p->response.statusText = m->status_text() ? m->status_text()->str() : "";
      p->response.headers = headersFrom(m->headers());
      return;
    }
    case wire::Message::BodyChunk: {
      const wire::BodyChunk* m = frame.message_as_BodyChunk();
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (!p->headSeen) return violation("body chunk before the response head");
      if (m->data() && p->discard.empty()) {
        std::size_t n = m->data()->size();
        if (p->response.body.size() + n > kMaxResponseBodyBytes) {
          return violation("response body over " + std::to_string(kMaxResponseBodyBytes) +
                           " bytes");
        }
        if (buffered_.fetch_add(n) + n > kMaxBufferedBytes) {
          buffered_ -= n + p->response.body.size();
          p->response.body.clear();
          p->response.body.shrink_to_fit();
          p->discard = "the server's response buffers are full (" +
                       std::to_string(kMaxBufferedBytes >> 20) + " MiB in flight)";
          return;
        }
        p->response.body.append(reinterpret_cast<const char*>(m->data()->data()), n);
      }
      return;
    }
    case wire::Message::End: {
      std::uint64_t id = frame.message_as_End()->id();
      Pending* p = pendingFor(id);
      if (!p) return;
      if (!p->headSeen) return violation("end before the response head");
      buffered_ -= p->response.body.size();
      AppResponse response = p->discard.empty()
                                 ? std::move(p->response)
                                 : AppResponse::failed(FailureKind::kInternal, p->discard);
      p->response.body.clear();
      lock.unlock();
      finish(id, std::move(response));
      return;
    }
    case wire::Message::Failure: {
      const wire::Failure* m = frame.message_as_Failure();
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (m->kind() == 0 || m->kind() > static_cast<std::uint8_t>(FailureKind::kWorkerCrashed)) {
        return violation("failure of unknown kind " + std::to_string(m->kind()));
      }
      auto kind = static_cast<FailureKind>(m->kind());
      std::string detail = m->detail() ? m->detail()->str() : "";
      std::uint64_t id = m->id();
      lock.unlock();
      AppResponse r = AppResponse::failed(kind, detail);
      if (kind == FailureKind::kOverloaded) r.shedReason = "worker-queue-full";
      finish(id, std::move(r));
      return;
    }
    default:
      violation(std::string("unexpected ") + wire::EnumNameMessage(frame.message_type()) +
                " frame");
      return;
  }
}

void SubprocessBackend::onDeath(int index, std::uint64_t generation, const std::string& reason) {
  std::vector<std::pair<std::function<void(AppResponse)>, std::string>> orphans;
  std::string why;
  pid_t pid = 0;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = *slots_[static_cast<std::size_t>(index)];
    if (slot.generation != generation) return;
    why = slot.killReason.empty() ? reason : slot.killReason + " (" + reason + ")";
    pid = slot.proc ? slot.proc->pid() : 0;
    stopping = stopping_;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.slot == index && it->second.generation == generation) {
        buffered_ -= it->second.response.body.size();
        orphans.emplace_back(std::move(it->second.done), it->second.requestId);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (slot.proc) graveyard_.push_back(std::move(slot.proc));
    slot.state = SlotState::kEmpty;
    slot.inFlight = 0;
    slot.heartbeatOutstanding = false;
    if (slot.killReason.empty()) slot.killReason = reason;
    if (!stopping) {
      crashes_.with({slotName(index)}).inc();
      SteadyTime now = clock_.now();
      slot.respawnAt = slot.budget.recordCrash(now);
      if (slot.respawnAt > now) {
        cooldowns_.with({slotName(index)}).inc();
        logEvent(Level::kWarn, "worker slot cooling down",
                 {{"slot", index},
                  {"cooldown_ms", static_cast<std::int64_t>(options_.crashBudget.cooldown.count())}});
      }
    }
    wake_.notify_all();
  }
  if (!stopping) {
    logEvent(Level::kError, "worker died",
             {{"slot", index}, {"pid", pid}, {"reason", why},
              {"requests_lost", static_cast<std::int64_t>(orphans.size())}});
  }
  release(orphans.size());
  for (auto& [done, requestId] : orphans) {
    done(AppResponse::failed(
        stopping ? FailureKind::kShuttingDown : FailureKind::kWorkerCrashed,
        "worker " + std::to_string(index) + " (pid " + std::to_string(pid) + ") " +
            (stopping ? "stopped" : "crashed") + " during the request: " + why));
  }
  drainQueue();
}

void SubprocessBackend::superviseOnce() {
  std::vector<std::shared_ptr<WorkerProcess>> dead;
  std::vector<Queued> expired;
  {
    std::unique_lock<std::mutex> lock(mu_);
    SteadyTime now = clock_.now();
    dead.swap(graveyard_);
    for (auto& s : slots_) {
      Slot& slot = *s;
      switch (slot.state) {
        case SlotState::kEmpty:
          // Before start() the supervisor spawns nothing: start() spawns the first workers.
          if (!stopping_ && (started_ || manualSupervision_) && now >= slot.respawnAt) {
            spawnLocked(slot, lock);
          }
          break;
        case SlotState::kStarting:
          if (now > slot.spawnDeadline) {
            killLocked(slot, "did not answer its first heartbeat within " +
                                 std::to_string(options_.spawnTimeout.count()) + " ms");
          }
          break;
        case SlotState::kReady:
          if (slot.heartbeatOutstanding) {
            if (now - slot.heartbeatSentAt > options_.heartbeatTimeout) {
              killLocked(slot, "missed a heartbeat (no answer within " +
                                   std::to_string(options_.heartbeatTimeout.count()) + " ms)");
            }
          } else if (now >= slot.nextHeartbeat) {
            auto hb = encodeHeartbeat(++slot.heartbeatSeq, options_.maxFrameBytes);
            slot.heartbeatOutstanding = true;
            slot.heartbeatSentAt = now;
            if (hb) (void)slot.proc->send(hb.value());
          }
          break;
      }
    }
    // The last resort: a request its worker never answered, long past every deadline of its own.
    for (auto& [id, p] : pending_) {
      if (now > p.hangDeadline) {
        Slot& slot = *slots_[static_cast<std::size_t>(p.slot)];
        if (slot.generation == p.generation && slot.killReason.empty()) {
          killLocked(slot, "request " + p.requestId + " got no answer within " +
                               std::to_string((options_.requestTimeout + options_.requestCpuLimit +
                                               options_.hangGrace)
                                                  .count()) +
                               " ms; the worker is wedged (SIGKILL as a last resort)");
        }
      }
    }
    while (!queue_.empty() && now - queue_.front().arrived > options_.queueTimeout) {
      expired.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  dead.clear();  // joins reader threads: never under mu_
  for (Queued& q : expired) {
    rejected_.with({"queue-timeout"}).inc();
    q.done(AppResponse::shed("queue-timeout", "waited longer than " +
                                                  std::to_string(options_.queueTimeout.count()) +
                                                  " ms in the queue"));
  }
  drainQueue();
}

void SubprocessBackend::stop() {
  std::deque<Queued> queued;
  std::vector<std::shared_ptr<WorkerProcess>> procs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    queued.swap(queue_);
    for (auto& s : slots_) {
      if (!s->proc) continue;
      auto frame = encodeShutdown(0, options_.maxFrameBytes);
      if (frame) (void)s->proc->send(frame.value());
      procs.push_back(s->proc);
    }
    wake_.notify_all();
  }
  if (supervisor_.joinable()) supervisor_.join();
  for (Queued& q : queued) {
    q.done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
  }
  // Each worker answers what it runs with SHUTTING_DOWN and exits; one that does not within the
  // grace is sent SIGKILL.
  auto deadline = std::chrono::steady_clock::now() + options_.shutdownGrace;
  for (auto& p : procs) {
    while (p->alive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    p->kill(SIGKILL);
  }
  for (auto& p : procs) {
    while (p->alive()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<std::pair<std::uint64_t, Pending>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : slots_) {
      if (s->proc) procs.push_back(std::move(s->proc));
      s->state = SlotState::kEmpty;
    }
    for (auto& g : graveyard_) procs.push_back(std::move(g));
    graveyard_.clear();
    for (auto& entry : pending_) left.emplace_back(entry.first, std::move(entry.second));
    pending_.clear();
  }
  procs.clear();
  release(left.size());
  for (auto& [id, p] : left) {
    p.done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
  }
}

std::vector<WorkerInfo> SubprocessBackend::workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerInfo> out;
  SteadyTime now = clock_.now();
  for (const auto& s : slots_) {
    out.push_back(WorkerInfo{s->index, s->state, s->proc ? s->proc->pid() : 0, s->inFlight,
                             s->rssBytes, s->heapUsedBytes, s->heapLimitBytes, s->executions,
                             s->state == SlotState::kEmpty && s->respawnAt > now});
  }
  return out;
}

std::size_t SubprocessBackend::readyWorkers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& s : slots_) n += s->state == SlotState::kReady;
  return n;
}

}  // namespace isolane

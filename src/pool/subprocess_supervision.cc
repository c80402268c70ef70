// SubprocessBackend: spawning, heartbeats, deaths, the last-resort kill, and shutdown.
#include <signal.h>

#include <algorithm>

#include "obs/events.h"
#include "obs/log.h"
#include "pool/subprocess_backend.h"
#include "pool/subprocess_state.h"
#include "pool/worker_process.h"

namespace isolane {

void SubprocessBackend::sendAll(Outbox& outbox) {
  // A failed send means the worker is dying; its death is handled on the reactor.
  for (Outgoing& o : outbox) (void)o.proc->sendTo(o.thread, std::move(o.frame));
  outbox.clear();
}

void SubprocessBackend::spawnLocked(Slot& slot) {
  SteadyTime now = clock_.now();
  std::uint64_t generation = ++slot.generation;
  int index = slot.index;
  std::vector<std::string> argv = options_.workerCommand;
  argv.push_back("--slot");
  argv.push_back(std::to_string(index));
  // A fresh status page per process: nothing an earlier one wrote there survives it.
  auto page = StatusPageFile::create();
  if (page) {
    argv.push_back("--status-fd");
    argv.push_back("4");
  } else {
    logEvent(Level::kWarn, "no status page for the worker; it is scheduled blind",
             {{"slot", index}, {"error", page.error()}});
  }
  // And fresh stream blocks: pieces an earlier process lent are given back to its own region.
  auto blocks = StreamBlocksFile::create();
  if (blocks) {
    argv.push_back("--blocks-fd");
    argv.push_back("5");
  } else {
    logEvent(Level::kWarn, "no stream blocks for the worker; its streams go through its socket",
             {{"slot", index}, {"error", blocks.error()}});
  }
  // Each executor thread reads a socket of its own: the worker is told where the others are.
  const std::size_t threads = slot.threadInFlight.size();
  if (threads > 1) {
    std::string fds;
    for (std::size_t i = 1; i < threads; ++i) {
      fds += (fds.empty() ? "" : ",") + std::to_string(WorkerProcess::socketFd(i));
    }
    argv.push_back("--thread-fds");
    argv.push_back(fds);
  }
  const WorkerSpawner& spawn = options_.spawnWorker ? options_.spawnWorker : spawnWorkerProcess;
  auto proc = spawn(WorkerSpawn{
      std::move(argv), options_.maxFrameBytes,
      [this, index, generation](const wire::Frame& f, std::string_view trailer) {
        onFrame(index, generation, f, trailer);
      },
      [this, index, generation](const std::string& why) { onDeath(index, generation, why); },
      page ? page.value()->fd() : -1, blocks ? blocks.value()->fd() : -1, &reactor_.io(), threads});
  if (page) page.value()->closeFd();  // the child has its copy
  slot.status = page ? std::move(page.value()) : nullptr;
  // An earlier process's region is unmapped off the lock (once its last piece is written).
  if (slot.blocks) retiredBlocks_.push_back(std::move(slot.blocks));
  slot.blocks = blocks ? std::move(blocks.value()) : nullptr;
  if (!proc) {
    slot.life.died(now, proc.error(), slot.budget.recordCrash(now));
    crashes_.with({slotName(index)}).inc();
    logEvent(Level::kError, "worker spawn failed", {{"slot", index}, {"error", proc.error()}});
    recordEvent("spawn-failed", index, 0, proc.error());
    wake_.notify_all();
    return;
  }
  // Never destroy a process under mu_ (its handler on the reactor may be waiting for mu_).
  if (slot.proc) graveyard_.push_back(std::move(slot.proc));
  slot.proc = std::shared_ptr<WorkerChannel>(std::move(proc.value()));
  slot.appsLoaded = 0;
  slot.inFlight = 0;
  std::fill(slot.threadInFlight.begin(), slot.threadInFlight.end(), 0);
  slot.appRequests.clear();
  slot.loadError.clear();
  slot.engineKey.clear();
  slot.loadsOutstanding.clear();
  slot.laterLoads.clear();
  slot.firstApp.clear();
  slot.loadsSent = false;
  slot.isolates = 0;
  slot.isolatesRecycled = 0;  // a new worker counts from zero
  slot.consoleDropped = 0;
  slot.egressReply.reset();
  // The apps go out when it says hello (loadApps): their code caches depend on its engine.
  slot.life.spawned(now);
}

void SubprocessBackend::onTransitionLocked(const Slot& slot, const WorkerTransition& t) {
  pid_t pid = slot.proc ? slot.proc->pid() : 0;
  switch (t.to) {
    case WorkerState::kSpawning:
      spawns_.with({}).inc();
      if (slot.life.everReady()) respawns_.with({}).inc();
      logEvent(Level::kInfo, "worker spawned", {{"slot", slot.index}, {"pid", pid}});
      recordEvent(slot.life.everReady() ? "respawn" : "spawn", slot.index, pid);
      break;
    case WorkerState::kReady:
      workerStart_.with({}).observe(
          std::chrono::duration<double>(t.now - slot.life.spawnedAt()).count());
      logEvent(Level::kInfo, "worker ready", {{"slot", slot.index}, {"pid", pid}});
      recordEvent("ready", slot.index, pid);
      break;
    case WorkerState::kKilling:
      recordEvent("kill", slot.index, pid, t.reason);
      break;
    case WorkerState::kDraining:
      recordEvent("drain", slot.index, pid, t.reason);
      break;
    case WorkerState::kLoading:
    case WorkerState::kResting:
      // Its deaths are told by onDeath, which knows what they cost (the requests lost).
      break;
  }
}

void SubprocessBackend::loadApps(int index, std::uint64_t generation,
                                 const std::string& engineKey) {
  std::shared_ptr<WorkerChannel> proc;
  std::vector<AppSpec> apps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = *slots_[static_cast<std::size_t>(index)];
    if (slot.generation != generation || !slot.proc) return;
    proc = slot.proc;
    apps = appsOf(slot);
  }
  // Each process loads the apps in another order (turned by slot and generation): only the
  // code cache of the app a worker loads first is believed (Slot::firstApp), so each app is
  // first in some worker.
  if (!apps.empty()) {
    std::rotate(apps.begin(),
                apps.begin() + static_cast<std::ptrdiff_t>(
                                   (static_cast<std::size_t>(index) + generation) % apps.size()),
                apps.end());
  }
  // The modules were read by the master at start (a worker reads no file); a module that could
  // not be read goes with the reason instead of its bytes, and the worker's load reports it.
  std::vector<std::string> frames;
  for (AppSpec& app : apps) {
    codeCache_.offer(app, engineKey);
    auto frame = encodeLoadApp(app, options_.maxFrameBytes);
    if (!frame && !app.codeCache.empty()) {  // over the frame ceiling: without the cache
      app.codeCache.clear();
      frame = encodeLoadApp(app, options_.maxFrameBytes);
    }
    if (!frame) {  // the modules alone do not fit: the worker's load fails, saying why
      auto why = std::make_shared<AppModules>();
      why->error = frame.error();
      app.modules = std::move(why);
      frame = encodeLoadApp(app, options_.maxFrameBytes);
    }
    if (frame) frames.push_back(std::move(frame.value()));
  }
  std::string now;  // what goes out now: the first load (or, with no app, the heartbeat)
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = *slots_[static_cast<std::size_t>(index)];
    if (slot.generation != generation || !slot.proc) return;
    slot.loadsOutstanding.clear();
    for (const AppSpec& app : apps) {
      slot.loadsOutstanding[app.name] = Slot::Load{app.sourceSha256, !app.codeCache.empty()};
    }
    slot.firstApp = apps.empty() ? std::string() : apps.front().name;
    slot.loadsSent = true;
    // The first heartbeat is answered only after the loads before it: ready means loaded.
    auto hb = encodeHeartbeat(slot.life.firstHeartbeat(clock_.now()), options_.maxFrameBytes);
    // The other loads (and the heartbeat) wait for the first load's answer (Slot::laterLoads).
    slot.laterLoads.clear();
    for (std::size_t i = 1; i < frames.size(); ++i) slot.laterLoads.push_back(std::move(frames[i]));
    if (hb) slot.laterLoads.push_back(std::move(hb.value()));
    if (!frames.empty()) {
      now = std::move(frames.front());
    } else if (!slot.laterLoads.empty()) {
      now = std::move(slot.laterLoads.back());
      slot.laterLoads.clear();
    }
  }
  if (!now.empty()) (void)proc->send(std::move(now));
}

void SubprocessBackend::noteCodeCache(const std::string& engineKey, const std::string& app,
                                      const AppLoadReport& report,
                                      const std::string& offeredSha256, bool cacheOffered,
                                      bool firstLoad) {
  static const char* const kUse[] = {"none", "accepted", "rejected"};
  codeCacheLoads_.with({kUse[static_cast<int>(report.cache)]}).inc();
  // What a worker says of a cache is believed only for the hash it was offered for this app,
  // and only from the app it loaded before any other app's code ran in it.
  if (report.sourceSha256 != offeredSha256) {
    if (report.cache != CodeCacheUse::kNone || !report.producedCache.empty()) {
      logEvent(Level::kWarn, "a worker's code cache report names a module it was not offered",
               {{"app", app}});
    }
    return;
  }
  if (!firstLoad) return;
  if (report.cache == CodeCacheUse::kRejected) {
    logEvent(Level::kWarn, "V8 rejected a code cache; the module was compiled",
             {{"app", app}, {"sha256", report.sourceSha256}});
  }
  Result<bool> kept = codeCache_.settle(engineKey, app, report, cacheOffered);
  if (!kept) {
    logEvent(Level::kWarn, "cannot store a code cache", {{"error", kept.error()}});
  } else if (kept.value()) {
    codeCacheStored_.with({}).inc();
  }
}

bool SubprocessBackend::lastLiveOfLaneLocked(const Slot& slot, SteadyTime now) const {
  for (const auto& s : slots_) {
    if (s.get() == &slot || s->group != slot.group ||
        inStreamingLane(*s) != inStreamingLane(slot)) {
      continue;
    }
    if (!s->life.restingUntilLater(now)) return false;
  }
  return true;
}

void SubprocessBackend::killLocked(Slot& slot, const std::string& reason) {
  if (slot.life.kill(clock_.now(), reason) && slot.proc) slot.proc->kill(SIGKILL);
}

void SubprocessBackend::onDeath(int index, std::uint64_t generation, const std::string& reason) {
  struct Orphan {
    std::function<void(AppResponse)> done;
    std::shared_ptr<const AppRequest> replay;
    SteadyTime arrived;
    std::uint64_t id;  // its cancel handle, kept by its replay
  };
  std::vector<Orphan> orphans;
  std::string why;
  pid_t pid = 0;
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = *slots_[static_cast<std::size_t>(index)];
    if (slot.generation != generation) return;
    pid = slot.proc ? slot.proc->pid() : 0;
    stopping = stopping_;
    std::string cut = "WORKER_CRASHED: worker " + std::to_string(index) + " died: " + reason;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.slot == index && it->second.generation == generation) {
        releaseLocked(it->second);
        if (it->second.done) {
          orphans.push_back(
              Orphan{std::move(it->second.done), it->second.replay, it->second.arrived, it->first});
        } else if (it->second.pipe) {
          it->second.pipe->fail(cut);  // the head went out: the stream is cut
        }
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (slot.proc) graveyard_.push_back(std::move(slot.proc));
    egress_.forget(egressOwner(index, generation));
    slot.inFlight = 0;
    std::fill(slot.threadInFlight.begin(), slot.threadInFlight.end(), 0);
    slot.appRequests.clear();
    slot.streams = 0;
    SteadyTime now = clock_.now();
    SteadyTime restUntil = now;  // when it is spawned again
    if (!stopping) {
      crashes_.with({slotName(index)}).inc();
      // Quarantined: its next process gets requests only when no other worker can take them.
      slot.quarantinedUntil = now + options_.quarantine;
      quarantines_.with({slotName(index)}).inc();
      restUntil = slot.budget.recordCrash(now);
      if (restUntil > now && lastLiveOfLaneLocked(slot, now)) {
        // The floor: the last slot of its lane never rests for the whole cooldown (the server
        // would answer only no-worker); it comes back after a backoff that doubles each time.
        std::chrono::milliseconds backoff = slot.backoff.next(now);
        restUntil = now + backoff;
        backoffs_.with({slotName(index)}).inc();
        recordEvent("backoff", index, 0,
                    "the last of its lane: back in " + std::to_string(backoff.count()) + " ms");
        logEvent(Level::kWarn, "worker slot backing off (the last of its lane)",
                 {{"slot", index}, {"backoff_ms", static_cast<std::int64_t>(backoff.count())}});
      } else if (restUntil > now) {
        cooldowns_.with({slotName(index)}).inc();
        recordEvent("cooldown", index, 0, "crash budget spent");
        logEvent(
            Level::kWarn, "worker slot cooling down",
            {{"slot", index},
             {"cooldown_ms", static_cast<std::int64_t>(options_.crashBudget.cooldown.count())}});
      }
    }
    why = slot.life.died(now, reason, restUntil);
    wake_.notify_all();
  }
  if (!stopping) {
    recordEvent("crash", index, pid, why);
    logEvent(Level::kError, "worker died",
             {{"slot", index},
              {"pid", pid},
              {"reason", why},
              {"requests_lost", static_cast<std::int64_t>(orphans.size())}});
  }
  std::size_t replayed = 0;
  for (Orphan& orphan : orphans) {
    // A GET or HEAD goes once more to a ready worker: its client never sees another app's crash.
    if (orphan.replay && !stopping) {
      ++replayed;
      replays_.with({}).inc();
      route(*orphan.replay, std::move(orphan.done), orphan.arrived, /*replayed=*/true, orphan.id);
      continue;
    }
    orphan.done(AppResponse::failed(
        stopping ? FailureKind::kShuttingDown : FailureKind::kWorkerCrashed,
        "worker " + std::to_string(index) + " (pid " + std::to_string(pid) + ") " +
            (stopping ? "stopped" : "crashed") + " during the request: " + why));
  }
  if (replayed) {
    logEvent(Level::kWarn, "requests replayed after their worker died",
             {{"slot", index}, {"replayed", static_cast<std::int64_t>(replayed)}});
  }
  drainQueue();
}

void SubprocessBackend::offTheReactor(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // With no supervisor thread (manual supervision: the caller's thread is the test's), or none
    // any more (stopping), it runs here.
    if (!manualSupervision_ && !stopping_) {
      diskWork_.push_back(std::move(work));
      work = nullptr;
    }
  }
  if (work) return work();
  wake_.notify_all();
}

void SubprocessBackend::doDiskWork() {
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    work.swap(diskWork_);
  }
  for (auto& w : work) w();
}

void SubprocessBackend::superviseOnce() {
  doDiskWork();
  Outbox outbox;
  std::vector<std::shared_ptr<WorkerChannel>> dead;
  std::vector<std::shared_ptr<StreamBlocksFile>> retired;
  std::vector<WaitingRequest> expired;
  {
    std::unique_lock<std::mutex> lock(mu_);
    SteadyTime now = clock_.now();
    dead.swap(graveyard_);
    retired.swap(retiredBlocks_);
    for (auto& s : slots_) {
      Slot& slot = *s;
      if (slot.life.state() == WorkerState::kResting) {
        // Before start() the supervisor spawns nothing: start() spawns the first workers.
        if (!stopping_ && (started_ || manualSupervision_) && now >= slot.life.restUntil()) {
          spawnLocked(slot);
        }
        continue;
      }
      std::chrono::milliseconds longestPass{0};
      if (slot.status) {
        longestPass = readWorkerLoad(slot.status->page(), std::chrono::steady_clock::now(),
                                     options_.wedgedTurn)
                          .longestPass;
      }
      WorkerLifecycle::Due due = slot.life.due(now, longestPass);
      if (due.kind == WorkerLifecycle::Due::Kind::kKill) {
        killLocked(slot, due.reason);
      } else if (due.kind == WorkerLifecycle::Due::Kind::kHeartbeat) {
        auto hb = encodeHeartbeat(due.seq, options_.maxFrameBytes);
        if (hb) outbox.push_back({slot.proc, std::move(hb.value()), 0});
      }
    }
    withdrawFromWedgedLocked(outbox);
    // The last resort: a request its worker never answered, long past every deadline of its own.
    for (auto& [id, p] : pending_) {
      // A stream that waits for its client to read is not wedged.
      if (p.pipe && p.pipe->producerBlocked()) {
        p.hangDeadline = streamHangDeadline();
        continue;
      }
      if (now > p.hangDeadline) {
        Slot& slot = *slots_[static_cast<std::size_t>(p.slot)];
        if (slot.generation == p.generation && slot.life.live()) {
          killLocked(slot, "request " + p.requestId + " got no answer within " +
                               std::to_string((options_.requestTimeout + options_.requestCpuLimit +
                                               options_.hangGrace)
                                                  .count()) +
                               " ms; the worker is wedged (SIGKILL as a last resort)");
        }
      }
    }
    expired = admission_.expire(now);
  }
  sendAll(outbox);
  dead.clear();  // waits for their ends on the reactor: never under mu_
  for (WaitingRequest& q : expired) {
    rejected_.with({"queue-timeout"}).inc();
    q.done(admission_.queueTimeout());
  }
  drainQueue();
}

void SubprocessBackend::stop() {
  std::vector<WaitingRequest> queued;
  std::vector<std::shared_ptr<WorkerChannel>> procs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    queued = admission_.takeAll();
    for (auto& s : slots_) {
      if (s->proc) procs.push_back(s->proc);
    }
    wake_.notify_all();
  }
  // Never sent under mu_: a worker whose socket is full must not stall the pool.
  auto shutdown = encodeShutdown(0, options_.maxFrameBytes);
  for (auto& p : procs) {
    if (shutdown) (void)p->send(shutdown.value());
  }
  if (supervisor_.joinable()) supervisor_.join();
  doDiskWork();  // what its last pass left (a code cache to store), before the workers go
  for (WaitingRequest& q : queued) {
    q.done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
  }
  // Each worker answers what it runs with SHUTTING_DOWN and exits; one that does not within the
  // grace is sent SIGKILL.
  endWorkers(procs, std::chrono::steady_clock::now() + options_.shutdownGrace);
  std::vector<std::pair<std::uint64_t, Pending>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : slots_) {
      if (s->proc) procs.push_back(std::move(s->proc));
      if (s->life.state() != WorkerState::kResting) {
        s->life.died(clock_.now(), "the pool stopped", clock_.now());
      }
    }
    for (auto& g : graveyard_) procs.push_back(std::move(g));
    graveyard_.clear();
    for (auto& entry : pending_) left.emplace_back(entry.first, std::move(entry.second));
    pending_.clear();
  }
  procs.clear();
  for (auto& [id, p] : left) {
    capOf(p.stream).give();
    if (p.done) {
      p.done(AppResponse::failed(FailureKind::kShuttingDown, "the pool is shutting down"));
    } else if (p.pipe) {
      p.pipe->fail("SHUTTING_DOWN: the pool stopped during the stream");
    }
  }
}

std::size_t SubprocessBackend::maxModuleBytes() const {
  constexpr std::size_t kFrameRoom = 64 * 1024;  // for the rest of the LoadApp frame
  return options_.maxFrameBytes > 2 * kFrameRoom ? options_.maxFrameBytes - kFrameRoom
                                                 : kFrameRoom;
}

}  // namespace isolane

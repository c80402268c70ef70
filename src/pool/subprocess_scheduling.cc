// SubprocessBackend: where a request goes, read from the workers' status pages without a round
// trip (ipc/status_page.h): around workers wedged in a long turn, away from workers with a
// standing queue, and shed by delay (CoDel's measure) rather than only by count, the app with
// the most requests in flight first.
#include <algorithm>

#include "pool/subprocess_backend.h"
#include "pool/subprocess_state.h"

namespace isolane {

bool SubprocessBackend::wedgedLocked(const Slot& slot) const {
  if (!slot.status || options_.wedgedTurn.count() == 0) return false;
  WorkerLoad load =
      readWorkerLoad(slot.status->page(), std::chrono::steady_clock::now(), options_.wedgedTurn);
  return load.published && load.threads > 0 && load.wedged >= load.threads;
}

// The live worker with the fewest requests in flight per free executor thread that still has
// room, the earliest slot on a tie. A thread inside one synchronous turn for longer than
// wedgedTurn is not free, and a worker with no free thread is skipped (its requests would wait
// behind the turn). A worker with a standing queue (its requests waited longer than shedDelay
// before they started, over a whole interval) comes after every worker without one, and a
// quarantined one (it crashed lately) after every other. Starting
// and dead slots are never picked. Streams are bounded by the stream cap alone, and spread by
// the count of streams.
SubprocessBackend::Pick SubprocessBackend::pickLocked(bool stream, const std::string& app) {
  Pick pick;
  double bestScore = 0;
  Slot* byCounts = nullptr;  // what the in-flight counts alone would pick
  bool byCountsWedged = false;
  SteadyTime now = std::chrono::steady_clock::now();  // the status pages' clock
  SteadyTime clockNow = clock_.now();                 // the pool's (quarantines)
  // With the wedge check off, no turn is long enough to count.
  auto wedgeAfter = options_.wedgedTurn.count() > 0 ? options_.wedgedTurn : std::chrono::hours(24);
  for (auto& s : slots_) {
    if (s->state != SlotState::kReady || !candidateLocked(*s, app, stream)) continue;
    if (stream) {
      if (!pick.slot || s->streams < pick.slot->streams) pick.slot = s.get();
      continue;
    }
    if (s->inFlight >= options_.workerMaxInflight) continue;
    std::uint32_t threads = 1, free = 1;
    bool overloaded = false;
    if (s->status) {
      WorkerLoad load = readWorkerLoad(s->status->page(), now, wedgeAfter);
      if (load.published && load.threads > 0) {
        threads = load.threads;
        free = load.threads - std::min(load.wedged, load.threads);
        overloaded = options_.shedDelay.count() > 0 && load.standingDelay > options_.shedDelay;
      }
    }
    if (!byCounts || s->inFlight < byCounts->inFlight) {
      byCounts = s.get();
      byCountsWedged = free == 0;
    }
    if (free == 0) continue;
    bool quarantined = s->quarantinedUntil > clockNow;
    double score = (quarantined ? 1e15 : 0) + (overloaded ? 1e12 : 0) +
                   static_cast<double>(s->inFlight + 1) * threads / free;
    if (!pick.slot || score < bestScore) {
      pick.slot = s.get();
      pick.overloaded = overloaded;
      pick.quarantined = quarantined;
      bestScore = score;
    }
  }
  if (!stream && byCounts && pick.slot != byCounts) {
    pick.allWedged = pick.slot == nullptr;
    pick.avoidedWedged = pick.slot != nullptr && byCountsWedged;
  }
  return pick;
}

void SubprocessBackend::withdrawFromWedgedLocked(Outbox& outbox) {
  if (options_.wedgedTurn.count() == 0) return;
  std::vector<bool> wedged(slots_.size());
  bool any = false;
  for (const auto& s : slots_) {
    bool w = s->state == SlotState::kReady && wedgedLocked(*s);
    wedged[static_cast<std::size_t>(s->index)] = w;
    any |= w;
  }
  if (!any) return;
  for (auto& [id, p] : pending_) {
    Slot& slot = *slots_[static_cast<std::size_t>(p.slot)];
    if (!wedged[static_cast<std::size_t>(p.slot)] || slot.generation != p.generation) continue;
    if (p.withdrawing || p.clientGone || p.headSeen || p.stream || !p.replay || !p.done) continue;
    auto frame = encodeCancel(id, options_.maxFrameBytes, /*unstartedOnly=*/true);
    if (!frame) continue;
    p.withdrawing = true;
    outbox.emplace_back(slot.proc, std::move(frame.value()));
  }
}

bool SubprocessBackend::overFairShareLocked(const std::string& app) const {
  // Equal shares among the apps with requests in flight.
  std::size_t total = 0, apps = 0, mine = 0;
  for (const auto& [name, n] : appInFlight_) {
    if (n == 0) continue;
    total += n;
    ++apps;
    if (name == app) mine = n;
  }
  // An app with nothing in flight is under any share (and when nothing at all is in flight the
  // queue the figures speak of has drained).
  return mine > 0 && mine * apps >= total;
}

void SubprocessBackend::countAppLocked(const std::string& app, bool up) {
  if (up) {
    ++appInFlight_[app];
    return;
  }
  auto it = appInFlight_.find(app);
  if (it == appInFlight_.end()) return;
  if (--it->second == 0) appInFlight_.erase(it);
}

}  // namespace isolane

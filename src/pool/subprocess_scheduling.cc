// SubprocessBackend: where a request goes, read from the workers' status pages without a round
// trip (ipc/status_page.h): around workers wedged in a long turn, away from workers with a
// standing queue, and shed by delay (CoDel's measure) rather than only by count, the app with
// the most requests in flight first.
#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "pool/scheduler.h"
#include "pool/subprocess_backend.h"
#include "pool/subprocess_state.h"

namespace isolane {

bool SubprocessBackend::wedgedLocked(const Slot& slot) const {
  if (!slot.status || options_.wedgedTurn.count() == 0) return false;
  WorkerLoad load =
      readWorkerLoad(slot.status->page(), std::chrono::steady_clock::now(), options_.wedgedTurn);
  return load.published && load.threads > 0 && load.wedged >= load.threads;
}

// What the scheduler (pool/scheduler.h) is told of each slot, and what it says.
SubprocessBackend::Pick SubprocessBackend::pickLocked(bool stream, const std::string& app) {
  SteadyTime now = std::chrono::steady_clock::now();  // the status pages' clock
  SteadyTime clockNow = clock_.now();                 // the pool's (quarantines)
  // With the wedge check off, no turn is long enough to count.
  auto wedgeAfter = options_.wedgedTurn.count() > 0 ? options_.wedgedTurn : std::chrono::hours(24);
  std::vector<WorkerView>& views = views_;  // kept from pick to pick: no allocation per request
  views.clear();
  std::size_t eligible = 0;
  for (auto& s : slots_) {
    WorkerView& v = views.emplace_back();
    v.slot = s->index;
    v.eligible = s->life.ready() && candidateLocked(*s, app, stream);
    v.inFlight = s->inFlight;
    v.streams = s->streams;
    v.quarantined = s->quarantinedUntil > clockNow;
    eligible += v.eligible;
    if (!v.eligible || stream) continue;
    v.appHere = s->appRequests.has(app);
    if (!s->status) continue;
    WorkerLoad load = readWorkerLoad(s->status->page(), now, wedgeAfter);
    if (load.published && load.threads > 0) {
      v.threads = load.threads;
      v.freeThreads = load.threads - std::min(load.wedged, load.threads);
      v.overloaded = options_.shedDelay.count() > 0 && load.standingDelay > options_.shedDelay;
      // Whose turns they are: the apps in long ones are heavy.
      if (load.wedged > 0) {
        heavy_.observe(s->status->page(), now, wedgeAfter,
                       [&](const std::string& a) { return servesLocked(*s, a); });
      }
    }
  }
  std::size_t heavyLimit = !stream && options_.wedgedTurn.count() > 0 && heavy_.heavy(app, now)
                               ? heavyWorkerLimit(eligible, options_.maxWedgedShare)
                               : 0;
  // With one worker there is nothing to keep free.
  if (eligible <= 1) heavyLimit = 0;
  Placement placement = placeRequest(views, stream, options_.workerMaxInflight, heavyLimit);
  Pick pick;
  if (placement.slot >= 0) pick.slot = slots_[static_cast<std::size_t>(placement.slot)].get();
  pick.avoidedWedged = placement.avoidedWedged;
  pick.allWedged = placement.allWedged;
  pick.overloaded = placement.overloaded;
  pick.quarantined = placement.quarantined;
  pick.confined = placement.confined;
  pick.at = now;
  return pick;
}

std::uint32_t SubprocessBackend::pickThreadLocked(const Slot& slot) const {
  std::size_t threads = slot.threadInFlight.size();  // its sockets
  if (threads <= 1) return 0;
  // The master's own counts, and from the page (a hint: a worker cannot send a request to a
  // thread it has no socket for) which threads are wedged.
  std::array<ThreadView, StatusPage::kMaxThreads> views{};
  std::size_t n = std::min<std::size_t>(threads, views.size());
  std::int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
  for (std::size_t i = 0; i < n; ++i) {
    views[i].inFlight = slot.threadInFlight[i];
    views[i].wedged = slot.status && options_.wedgedTurn.count() > 0 &&
                      inLongTurn(slot.status->page().thread[i], nowNs, options_.wedgedTurn);
  }
  return static_cast<std::uint32_t>(placeThread(std::span<const ThreadView>(views.data(), n)));
}

void SubprocessBackend::withdrawFromWedgedLocked(Outbox& outbox) {
  if (options_.wedgedTurn.count() == 0) return;
  std::vector<bool> wedged(slots_.size());
  bool any = false;
  for (const auto& s : slots_) {
    bool w = s->life.ready() && wedgedLocked(*s);
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
    outbox.push_back({slot.proc, std::move(frame.value()), p.thread});
  }
}

}  // namespace isolane

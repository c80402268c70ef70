#include "pool/scheduler.h"

#include <algorithm>

namespace isolane {

std::size_t heavyWorkerLimit(std::size_t workers, double share) {
  if (workers <= 1) return 1;
  auto byShare = static_cast<std::size_t>(static_cast<double>(workers) * std::clamp(share, 0.0, 1.0));
  return std::clamp<std::size_t>(byShare, 1, workers - 1);
}

std::size_t placeThread(std::span<const ThreadView> threads) {
  std::size_t best = 0;
  bool found = false;
  for (bool takeWedged : {false, true}) {
    for (std::size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].wedged && !takeWedged) continue;
      if (!found || threads[i].inFlight < threads[best].inFlight) best = i;
      found = true;
    }
    if (found) break;
  }
  return best;
}

Placement placeRequest(std::span<const WorkerView> workers, bool stream,
                       std::size_t workerMaxInflight, std::size_t heavyLimit) {
  Placement placement;
  // A heavy app that already has requests on as many workers as it may use goes to those only.
  bool confined = false;
  if (!stream && heavyLimit > 0) {
    std::size_t here = 0;
    for (const WorkerView& w : workers) here += w.eligible && w.appHere;
    confined = here >= heavyLimit;
  }
  const WorkerView* best = nullptr;
  double bestScore = 0;
  // Of the workers scored, and of those not quarantined: a request goes to a quarantined worker
  // only when no other can take it, so only those others say whether it is shed.
  bool everyOverloaded = true, everyHealthyOverloaded = true;
  const WorkerView* byCounts = nullptr;  // what the in-flight counts alone would pick
  bool byCountsWedged = false;
  bool excluded = false;  // a worker it could use otherwise was left out by the confinement
  for (const WorkerView& w : workers) {
    if (!w.eligible) continue;
    if (confined && !w.appHere) {
      excluded = true;
      continue;
    }
    if (stream) {
      if (!best || w.streams < best->streams) best = &w;
      continue;
    }
    if (w.inFlight >= workerMaxInflight) continue;
    if (!byCounts || w.inFlight < byCounts->inFlight) {
      byCounts = &w;
      byCountsWedged = w.freeThreads == 0;
    }
    if (w.freeThreads == 0) continue;
    everyOverloaded = everyOverloaded && w.overloaded;
    if (!w.quarantined) everyHealthyOverloaded = everyHealthyOverloaded && w.overloaded;
    double score = (w.quarantined ? 1e15 : 0) + (w.overloaded ? 2.0 : 1.0) *
                                                    static_cast<double>(w.inFlight + 1) *
                                                    w.threads / w.freeThreads;
    if (!best || score < bestScore) {
      best = &w;
      bestScore = score;
    }
  }
  if (best) {
    placement.slot = best->slot;
    placement.overloaded =
        !stream && (best->quarantined ? everyOverloaded : everyHealthyOverloaded);
    placement.quarantined = !stream && best->quarantined;
  }
  if (!stream && byCounts && best != byCounts) {
    placement.allWedged = best == nullptr;
    placement.avoidedWedged = best != nullptr && byCountsWedged;
  }
  placement.confined = best == nullptr && excluded;
  return placement;
}

}  // namespace isolane

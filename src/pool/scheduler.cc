#include "pool/scheduler.h"

namespace isolane {

Placement placeRequest(std::span<const WorkerView> workers, bool stream,
                       std::size_t workerMaxInflight) {
  Placement placement;
  const WorkerView* best = nullptr;
  double bestScore = 0;
  const WorkerView* byCounts = nullptr;  // what the in-flight counts alone would pick
  bool byCountsWedged = false;
  for (const WorkerView& w : workers) {
    if (!w.eligible) continue;
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
    double score = (w.quarantined ? 1e15 : 0) + (w.overloaded ? 1e12 : 0) +
                   static_cast<double>(w.inFlight + 1) * w.threads / w.freeThreads;
    if (!best || score < bestScore) {
      best = &w;
      bestScore = score;
    }
  }
  if (best) {
    placement.slot = best->slot;
    placement.overloaded = !stream && best->overloaded;
    placement.quarantined = !stream && best->quarantined;
  }
  if (!stream && byCounts && best != byCounts) {
    placement.allWedged = best == nullptr;
    placement.avoidedWedged = best != nullptr && byCountsWedged;
  }
  return placement;
}

}  // namespace isolane

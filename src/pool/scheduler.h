#pragma once
// The scheduler: where a request goes, as a pure function of what the pool knows of each worker
// (its counts, and what its status page says of its executor threads: ipc/status_page.h). The
// pool gathers a WorkerView per slot under its lock and asks placeRequest; the rules live here
// alone, tested from tables (tests/scheduler_test.cc) without processes.
//
// A short request goes to the eligible worker with the fewest requests in flight per free
// executor thread that still has room, the earliest slot on a tie. A thread inside one
// synchronous turn longer than wedged_turn_ms is not free, and a worker with no free thread is
// skipped (its requests would wait behind the turn). A worker with a standing queue counts its
// requests in flight twice: it takes less than its share, not nothing (a standing queue is
// known a pass or two late, from its requests' waits, while the counts are current: a worker
// shunned whole for it would drain while every request went to the next, which would then be
// shunned in turn, and the two would never stand at once, which is when new requests are shed).
// A quarantined worker comes after every other. A stream goes to the
// eligible worker with the fewest streams (streams are bounded by the stream cap alone).
//
// An app that lately held a thread in a long turn (a "heavy" app: pool/heavy_apps.h) is
// confined: its short requests go only to the workers it already has requests on once those
// number `heavyLimit` (by default every worker but one), so that a flood of long turns never
// holds every thread while another app waits; the rest of its requests wait in its own queue.
//
// Within the chosen worker, a request goes to the executor thread with the fewest of the master's
// requests in flight that is not wedged (placeThread): the worker's threads each read their own
// socket, so the master picks the thread as well as the worker.
//
// Thread rule: pure; any thread.

#include <cstddef>
#include <cstdint>
#include <span>

namespace isolane {

struct WorkerView {
  int slot = 0;
  bool eligible = false;          // ready, and of the request's group and lane
  std::size_t inFlight = 0;       // short requests sent to it and not finished
  std::size_t streams = 0;        // streamed responses in flight on it
  std::uint32_t threads = 1;      // its executor threads (1 when its page says nothing yet)
  std::uint32_t freeThreads = 1;  // of them, not inside a long turn
  bool overloaded = false;        // its requests wait longer than shed_delay_ms to start
  bool quarantined = false;       // it crashed lately: the last choice
  bool appHere = false;           // the request's app has short requests in flight on it
};

struct Placement {
  int slot = -1;               // -1: none may take it now
  bool avoidedWedged = false;  // by counts alone it would have gone to a wedged worker
  bool allWedged = false;      // none: every worker with room is wedged
  bool overloaded = false;     // every worker it could go to has a standing queue
  bool quarantined = false;    // the chosen worker is quarantined (every other was unfit)
  bool confined = false;       // none: the app is heavy and every worker it may use is unfit
};

// `heavyLimit`: the workers the request's app may have requests on (0: any number, it is not
// heavy).
Placement placeRequest(std::span<const WorkerView> workers, bool stream,
                       std::size_t workerMaxInflight, std::size_t heavyLimit = 0);

// One executor thread of the chosen worker, each of which reads a socket of its own from the
// master: what the master sent it and has not had answered, and whether its status page shows
// it inside one turn longer than wedged_turn_ms.
struct ThreadView {
  std::size_t inFlight = 0;
  bool wedged = false;
};
// The thread that takes a request on that worker: the one with the fewest requests in flight of
// those not wedged, the lowest on a tie (so that a light load stays on one thread and its
// isolates); of all of them when every one is wedged. 0 for an empty span.
std::size_t placeThread(std::span<const ThreadView> threads);

// How many workers a heavy app may use: all but one, at most `share` of them (0-1), at least 1.
std::size_t heavyWorkerLimit(std::size_t workers, double share);

}  // namespace isolane

#pragma once
// The state SubprocessBackend keeps per slot, per request in flight and per queued request, shared
// by the files that make up the backend (subprocess_*.cc). Internal to pool/.
//
// Thread rule: every field is guarded by SubprocessBackend::mu_.

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/body_pipe.h"
#include "ipc/status_page.h"
#include "ipc/stream_blocks.h"
#include "pool/app_counts.h"
#include "pool/subprocess_backend.h"
#include "pool/worker_lifecycle.h"

namespace isolane {

struct SubprocessBackend::Slot {
  int index = 0;
  // The app whose own process this slot runs (PoolOptions::ownApps); "" for the shared workers,
  // which run every other app.
  std::string group;
  // Its process's state, heartbeats and deadlines, and why it last died (pool/worker_lifecycle.h).
  // Kept across respawns: a respawn is a new process in the same slot.
  WorkerLifecycle life{LifecycleOptions{}, nullptr};
  std::shared_ptr<WorkerChannel> proc;
  std::unique_ptr<StatusPageFile> status;  // what its executor threads are doing (may be null)
  // The memory its streamed pieces cross in (may be null); pieces still on their way to a client
  // keep an earlier process's alive.
  std::shared_ptr<StreamBlocksFile> blocks;
  std::uint64_t generation = 0;  // frames and deaths of an older process are ignored
  std::size_t inFlight = 0;      // short requests: the ones workerMaxInflight bounds
  // Requests (short and streamed) sent to each executor thread's socket and not finished: one
  // count per socket its workers get, sized when the slot is made.
  std::vector<std::size_t> threadInFlight;
  std::size_t streams = 0;  // requests streaming their body (or of an app marked streaming)
  AppCounts appRequests;    // inFlight, by app
  std::size_t appsLoaded = 0;
  std::string loadError;
  std::string engineKey;  // from its Hello (sent before any app's code ran in it): caches' key
  // The loads it was sent and has not answered, by app name: the module hash it was offered (the
  // only one it may report a code cache for, once) and whether a cache went with it. And the
  // app it loaded first, before any other app's code ran in it: only that app's code cache is
  // believed (a worker that an app compromised while it loaded could otherwise hand the master a
  // forged cache for the apps after it); the other loads go out once that one is answered, so
  // none of their code runs while its answer may still be in the worker. The load order turns
  // with each process, so each app is someone's first.
  struct Load {
    std::string sha256;
    bool cacheOffered = false;
  };
  std::unordered_map<std::string, Load> loadsOutstanding;
  std::vector<std::string> laterLoads;  // frames sent once the first load is answered
  std::string firstApp;
  bool loadsSent = false;  // its apps went out (it is ready once each is answered)
  CrashBudget budget;
  // Until then its process (this one or the next) gets requests only when no other can: it
  // crashed, or was killed as a last resort, lately. Kept across respawns.
  SteadyTime quarantinedUntil{};
  // The floor's backoff (the last live slot of its lane spent its crash budget).
  FloorBackoff backoff;
  std::uint64_t rssBytes = 0, heapUsedBytes = 0, heapLimitBytes = 0, executions = 0;
  std::uint64_t isolates = 0;
  std::uint64_t isolatesRecycled = 0;
  std::uint64_t consoleDropped = 0;
  std::shared_ptr<const Egress::Reply> egressReply;  // how its fetches' events reach it
};

struct SubprocessBackend::Pending {
  int slot;
  std::uint64_t generation;
  // Empty once the client has its answer (the head of a streamed body, or a refusal).
  std::function<void(AppResponse)> done;
  AppResponse response;
  bool headSeen = false;
  SteadyTime hangDeadline;
  std::string app, requestId;
  std::string discard;  // non-empty: drop the body as it arrives and answer with this error
  // Which cap holds it: the stream cap (an app marked streaming, or once its head said the body
  // streams) or the short-request cap.
  bool stream = false;
  std::shared_ptr<BodyPipe> pipe = {};         // a streamed body on its way to the front
  std::shared_ptr<BodyPipe> requestBody = {};  // a streamed request body on its way to the worker
  // A GET or HEAD, kept until its head arrives: if its worker dies under it (another app's fatal
  // error, say), it is sent once more, to whichever worker is ready, instead of failing.
  std::shared_ptr<const AppRequest> replay = {};
  SteadyTime arrived{};
  // Its worker was asked to give it back unstarted (the worker is wedged): a WITHDRAWN failure
  // then sends it to another worker instead of to its client.
  bool withdrawing = false;
  bool clientGone = false;  // cancel() was called: never moved, never sent again
  // A whole answer's body as it arrives, charged to the client budget (PoolOptions).
  ByteCharge bodyCharge = {};
  // The executor thread whose socket it went on: its body, cancel and credit follow it there.
  std::uint32_t thread = 0;
};

inline std::string slotName(int i) { return std::to_string(i); }

}  // namespace isolane

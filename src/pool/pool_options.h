#pragma once
// Every number of the subprocess pool, with its default. The README's configuration reference
// lists each with its ISOLANE_* variable and config key.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ipc/frame_codec.h"
#include "pool/crash_budget.h"
#include "pool/worker_channel.h"
#include "util/byte_budget.h"

namespace isolane {

class Reactor;

// The number of cores, clamped to 1-16.
inline std::size_t defaultPoolSize() {
  std::size_t n = std::thread::hardware_concurrency();
  return n < 1 ? 1 : (n > 16 ? 16 : n);
}

// What the master may hold for its clients by default (config client_buffer_mb).
inline constexpr std::size_t kDefaultClientBufferBytes = std::size_t{512} << 20;

struct PoolOptions {
  std::size_t size = defaultPoolSize();  // workers of the shared group, 1-16
  // Apps with worker processes of their own (config process = "own"), and how many: each has
  // slots that load it alone, after the shared ones; the shared workers do not load it.
  std::vector<std::pair<std::string, std::size_t>> ownApps;
  std::size_t maxInflight = 1024;       // global cap, 1-4096
  std::size_t workerMaxInflight = 512;  // per-worker cap
  std::size_t maxQueue = 0;             // requests waiting for room; 0: shed at once
  // Streamed responses (SSE, streamed SSR) have their own cap, so that long-lived streams never
  // take the room of short requests; a stream over it is refused with 503 before its head.
  std::size_t streamMaxInflight = 10'000;
  // A streamed body that sends nothing for this long while its client is ready for more is ended
  // by its worker; the master's last resort counts from its last chunk (see hangGrace).
  std::chrono::milliseconds streamIdleTimeout{60'000};
  // Strict lanes: the last N slots take only requests of apps marked streaming, the others only
  // the rest; nothing spills from one lane to the other. 0: one shared lane (the caps above
  // still keep streams from taking the room of short requests). At most size - 1.
  std::size_t streamingLane = 0;
  std::chrono::milliseconds queueTimeout{1'000};  // a queued request waits at most this
  // A worker thread inside one synchronous JavaScript turn for longer than this is wedged: new
  // requests go to workers with a thread free of one (read from each worker's status page, with
  // no round trip). Every thread of every worker wedged: requests wait in the queue (up to
  // queue_timeout_ms) for one to come free instead of queueing behind a render of seconds.
  // 0: the scheduler ignores the status pages (counts only).
  std::chrono::milliseconds wedgedTurn{50};
  // An app seen inside such a turn lately is heavy: its short requests go to at most this share
  // of the workers (and never all of them, when there are two or more), so its long turns
  // never hold every thread while another app waits; the rest of its requests wait in its own
  // queue, shed as "app-overloaded" once that queue stands longer than shedDelay. 0-1.
  double maxWedgedShare = 1.0;
  // With one executor thread in the whole pool (size 1, executor_threads 1; or the in-process
  // backend with one thread), nothing can be kept free of a heavy app: a reserve thread is
  // started beside it, which takes a request only when the other is inside a long turn of
  // another app (the OS time-slices the two). false: none.
  bool reserveThread = true;
  // A worker's executor threads (executor_threads), each reading a socket of its own: the
  // scheduler picks the thread as well as the worker (pool/scheduler.h placeThread).
  std::size_t executorThreads = 1;
  // Admission by delay (CoDel's measure): when the requests of every worker have waited longer
  // than this before their first turn, over a whole 100 ms interval (a standing queue, not a
  // burst), new short requests are shed with 503 and `x-isolane-shed: overloaded`, those of the
  // apps holding at least an equal share of the requests in flight: the flood, not its
  // neighbours. An I/O-bound load (requests awaiting, short turns) never builds one. 0: off.
  std::chrono::milliseconds shedDelay{50};

  // Bytes held for clients (whole answers arriving from workers, and the front's own: see
  // front/http_server.h), shared with the HTTP front; past it an answer is shed with 503.
  // Null: the backend makes one of kDefaultClientBufferBytes.
  std::shared_ptr<ByteBudget> clientBuffers;

  std::chrono::milliseconds spawnTimeout{10'000};  // first heartbeat must arrive within
  // Where the master keeps the V8 code caches of the apps' modules (pool/code_cache_store.h);
  // empty: none are kept.
  std::string codeCacheDir;
  std::chrono::milliseconds heartbeatInterval{5'000};
  std::chrono::milliseconds heartbeatTimeout{2'000};
  // A request still unanswered this long after the worker's own request timeout means the worker
  // is wedged beyond what its in-V8 deadlines can reach: SIGKILL, as a last resort.
  std::chrono::milliseconds requestTimeout{60'000};
  // A request may wait behind another's synchronous turn of up to this much CPU before it starts.
  std::chrono::milliseconds requestCpuLimit{2'000};
  std::chrono::milliseconds hangGrace{5'000};
  std::chrono::milliseconds shutdownGrace{2'000};  // after Shutdown, before SIGKILL
  // A slot whose worker crashed or was killed is used only when no other worker can take the
  // request, for this long (its next process included).
  std::chrono::milliseconds quarantine{5'000};
  // Deaths a slot may have within a window before it rests for the cooldown; the last live slot
  // of a lane never rests: it respawns after a backoff from 500 ms, doubling up to the cooldown.
  CrashBudgetOptions crashBudget;

  // Workers enter the sandbox (worker/sandbox.h) once started: no network, no writes, no exec.
  bool sandbox = true;

  std::size_t maxFrameBytes = kDefaultMaxFrameBytes;
  // The worker executable and its arguments; the pool appends `--slot N`. The child finds its
  // socket on descriptor 3.
  std::vector<std::string> workerCommand;
  // How a worker is started: null, a process (spawnWorkerProcess); tests give an in-memory one
  // (tests/fake_channel.h).
  WorkerSpawner spawnWorker;
  // Where the workers' sockets are read (ipc/reactor.h): the server's, shared with the HTTP
  // front, so an answer goes from the worker to its client on one thread. Null: the pool makes
  // its own, of one thread. It must outlive the pool.
  Reactor* reactor = nullptr;
};

}  // namespace isolane

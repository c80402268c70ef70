#pragma once
// StatusPage: what a worker's executor threads are doing, in a page of memory the worker writes
// and the master reads without a round trip. The scheduler reads it on every dispatch: a thread
// inside one synchronous JavaScript turn for long is wedged, and new work goes elsewhere.
//
// The master makes one page per spawn (a memfd, sealed so the worker can neither shrink nor grow
// it: a shrunk mapping would fault the master on read) and maps it read-only; the worker maps it
// read-write from the descriptor it inherits. Nothing read from it is trusted: the master clamps
// every figure (a worker could write anything there) and uses them only to place work.
//
// Thread rule: every field is a lock-free atomic, written by one executor thread (or its
// watchdog) and read by anyone, in this process or the other.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "util/result.h"

namespace isolane {

// One executor thread. Times are steady-clock nanoseconds (CLOCK_MONOTONIC: the same clock in
// every process of the machine); 0 means "not now".
struct ThreadStatus {
  std::atomic<std::int64_t> passSinceNs{0};  // woke for the pass it is in; 0 while parked
  std::atomic<std::int64_t> turnSinceNs{0};  // entered the synchronous turn it is in
  std::atomic<std::uint64_t> turnApp{0};  // appTag() of the app of its last turn (0: none yet)
  // The last turn that lasted longer than kLongTurnMark (wall time): its app, and when it ended.
  std::atomic<std::uint64_t> longTurnApp{0};
  std::atomic<std::int64_t> longTurnEndNs{0};
  std::atomic<std::uint64_t> pending{0};     // requests submitted to it, not answered
  std::atomic<std::uint64_t> cpuNs{0};       // CPU time its turns have used in all
  // The least time a request waited before its first turn, over the last whole interval of
  // kDelayInterval in which requests started (a standing queue when it is large: CoDel's
  // measure), and when that interval ended.
  std::atomic<std::int64_t> standingDelayNs{0};
  std::atomic<std::int64_t> standingDelayAtNs{0};
};
// CoDel's interval: a queue is standing when no request of a whole interval got through faster
// than the target.
inline constexpr std::chrono::milliseconds kDelayInterval{100};
// A turn longer than this is recorded as long when it ends (ThreadStatus::longTurnApp).
inline constexpr std::chrono::milliseconds kLongTurnMark{20};
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

struct StatusPage {
  static constexpr std::uint32_t kMagic = 0x69736c31;  // "isl1"
  static constexpr std::uint32_t kMaxThreads = 64;     // `isolane worker --threads` at most
  std::atomic<std::uint32_t> magic{0};
  std::atomic<std::uint32_t> threads{0};
  // Of them, the last `reserve` are reserve threads (worker/executor_set.h): free for other
  // apps while the others are in long turns, they count as threads but not in the standing
  // delay (an idle reserve would hide every standing queue).
  std::atomic<std::uint32_t> reserve{0};
  ThreadStatus thread[kMaxThreads];
};

// Whether a thread is inside one turn for longer than `wedgeAfter` at `nowNs` (steady-clock
// nanoseconds). A turn that began in the future (a lying or racing worker) is not.
inline bool inLongTurn(const ThreadStatus& t, std::int64_t nowNs,
                       std::chrono::milliseconds wedgeAfter) {
  std::int64_t since = t.turnSinceNs.load(std::memory_order_relaxed);
  return since > 0 && nowNs - since > std::chrono::nanoseconds(wedgeAfter).count();
}
inline std::int64_t steadyNs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// What the master makes of a page at `now`, every figure clamped.
struct WorkerLoad {
  bool published = false;     // the worker has written the page (its executors run)
  std::uint32_t threads = 0;  // executor threads
  std::uint32_t wedged = 0;   // threads inside one turn for longer than the threshold
  std::chrono::milliseconds longestTurn{0};  // the longest turn in progress
  // The longest pass in progress (a thread working since it woke; 0: every thread waits). A
  // worker whose one thread reads its socket itself answers a heartbeat when its pass ends.
  std::chrono::milliseconds longestPass{0};
  std::uint64_t pending = 0;                 // requests the threads hold, summed
  std::uint64_t cpuNs = 0;                   // CPU used by turns, summed
  // The least standing delay of its threads (a request sent there waits at least about this
  // long); figures older than two intervals count as none.
  std::chrono::milliseconds standingDelay{0};
};
WorkerLoad readWorkerLoad(const StatusPage& page, std::chrono::steady_clock::time_point now,
                          std::chrono::milliseconds wedgeAfter);

// What names an app on the page: FNV-1a of its name, never 0 (the same in every process).
std::uint64_t appTag(std::string_view app);
// The appTag of the app each wedged thread is in (as the page says: a hint for placing work,
// never trusted beyond it), written to `out`; returns how many.
std::size_t wedgedAppTags(const StatusPage& page, std::chrono::steady_clock::time_point now,
                          std::chrono::milliseconds wedgeAfter,
                          std::uint64_t (&out)[StatusPage::kMaxThreads]);

// The master's side: the page of one worker process.
class StatusPageFile {
 public:
  static Result<std::unique_ptr<StatusPageFile>> create();
  ~StatusPageFile();
  StatusPageFile(const StatusPageFile&) = delete;
  StatusPageFile& operator=(const StatusPageFile&) = delete;

  // The descriptor to hand to the child (close it once the child has its copy: closeFd()).
  int fd() const { return fd_; }
  void closeFd();
  const StatusPage& page() const { return *page_; }

 private:
  StatusPageFile(int fd, const StatusPage* page) : fd_(fd), page_(page) {}
  int fd_;
  const StatusPage* page_;
};

// The worker's side: maps the page the master passed on `fd` (then closes it). Error when `fd`
// is not a page of the right size.
Result<StatusPage*> mapStatusPage(int fd);

}  // namespace isolane

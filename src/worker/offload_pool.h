#pragma once
// OffloadPool: one helper thread per event loop for slow host work that touches no V8 (RSA key
// generation, PBKDF2 with many iterations), so that it runs off the executor thread: the
// request's CPU budget counts the executor thread's time, and other requests of the thread keep
// running meanwhile. Jobs run in the order posted; each finished one waits in a queue until the
// executor collects it, and the executor's doorbell is rung.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <thread>
#include <utility>

#include "runtime/host_ops.h"
#include "util/doorbell.h"
#include "util/guarded.h"

namespace isolane {

class OffloadPool {
 public:
  explicit OffloadPool(Doorbell& wake) : wake_(wake) {}
  // Waits for the job running now (each is bounded: see the natives' limits); queued jobs are
  // dropped.
  ~OffloadPool();
  OffloadPool(const OffloadPool&) = delete;
  OffloadPool& operator=(const OffloadPool&) = delete;

  // Executor thread. The thread starts with the first job.
  void post(std::uint64_t op, OffloadWork work);
  // Executor thread: the job of operation `op` will not run, if it has not started (its
  // request ended). Unknown ops are ignored.
  void drop(std::uint64_t op);
  // Safe from any thread.
  bool hasDone() const { return state_.lock()->doneCount != 0; }
  // Executor thread: the finished jobs, oldest first.
  std::deque<std::pair<std::uint64_t, OffloadResult>> collect();

 private:
  void run();

  struct State {
    std::deque<std::pair<std::uint64_t, OffloadWork>> queue;
    std::deque<std::pair<std::uint64_t, OffloadResult>> done;
    std::size_t doneCount = 0;
    bool stop = false;
  };
  Doorbell& wake_;
  mutable Guarded<State> state_;
  std::condition_variable cv_;  // waits on state_'s mutex: a job was posted, or stop
  std::thread thread_;
};

}  // namespace isolane

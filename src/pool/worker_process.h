#pragma once
// WorkerProcess: one child process of the pool and the master's end of its socketpair. It spawns
// the child, reads its frames on a reader thread (verified, never trusted) and, on the same
// thread, its output (logged by pool/worker_output.h), writes frames to it without ever blocking
// the sender (a FrameOutbox), and reaps it: no zombies and no leaked descriptors, whatever the
// order of deaths.
//
// Thread rule: send(), kill() and pid() are safe from any thread. The frame and death callbacks
// run on the reader thread. The destructor must not run on the reader thread.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ipc/frame_codec.h"
#include "ipc/frame_outbox.h"
#include "pool/worker_channel.h"
#include "util/result.h"

namespace isolane {

class WorkerProcess final : public WorkerChannel {
 public:
  using FrameHandler = std::function<void(const wire::Frame& frame)>;
  // Called once when the child is gone (exit, signal, end of socket, or a malformed frame, after
  // which the child is killed). It has been reaped by then.
  using DeathHandler = std::function<void(const std::string& reason)>;

  // `argv[0]` is the executable; the child gets its end of the socketpair as descriptor 3, and
  // `statusFd` (a status page, ipc/status_page.h), when there is one, as descriptor 4.
  static Result<std::unique_ptr<WorkerProcess>> spawn(const std::vector<std::string>& argv,
                                                      std::size_t maxFrameBytes,
                                                      FrameHandler onFrame, DeathHandler onDeath,
                                                      int statusFd = -1);
  ~WorkerProcess() override;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Safe from any thread; never blocks. Fails when the child is gone. A child that stops reading
  // altogether (its queue past FrameOutbox::kMaxQueuedBytes) is killed.
  Status send(const std::string& frame) override;
  // Safe from any thread. Signals the child unless it has been reaped.
  void kill(int signal) override;
  pid_t pid() const override { return pid_; }
  bool alive() const override { return !reaped_.load(); }
  // Waits until the child has been reaped or `deadline` passes (woken by the reaping, not
  // polled); true when it has been. Not from the reader thread (the death callback).
  bool waitExit(std::chrono::steady_clock::time_point deadline) override;

 private:
  WorkerProcess(pid_t pid, int fd, int outputFd, std::size_t maxFrameBytes, FrameHandler onFrame,
                DeathHandler onDeath);
  void readLoop();
  std::string reap();

  const pid_t pid_;
  const int fd_;
  const int outputFd_;  // the read end of its stdout and stderr (pool/worker_output.h)
  const std::size_t maxFrameBytes_;
  FrameHandler onFrame_;
  DeathHandler onDeath_;
  std::unique_ptr<FrameOutbox> out_;
  std::mutex reapMutex_;              // kill() never signals a reaped (possibly reused) pid
  std::condition_variable reapedCv_;  // waitExit() waits on it, under reapMutex_
  std::atomic<bool> reaped_{false};
  std::atomic<bool> silenced_{false};  // set by the destructor: no death callback then
  std::thread reader_;
};

}  // namespace isolane

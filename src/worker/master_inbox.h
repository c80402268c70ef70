#pragma once
// MasterInbox: what the master sends a worker, read from their socket and handed to the
// worker's executor threads (requests, their bodies and credit, cancels, tool answers, fetch
// events, app loads, heartbeats); what the threads answer goes back through the FrameOutbox.
//
// It is read one of two ways. Each executor thread has a socket of its own (the master picks the
// thread as it picks the worker) and reads it between its passes (an ExecutorInbox): a request
// wakes the thread that runs it, once, with no hand-off between threads. While that thread is
// inside a long turn, a stand-in thread reads for it (busy()), so that heartbeats are answered,
// queued requests withdrawn and new ones queued; an app load it leaves for the executor thread,
// and everything after it. A worker started without a socket per thread (by hand, or without a
// status page), or with a reserve thread, reads its one socket on a thread of its own
// (readUntilDone) and hands each request to the thread ExecutorSet picks.
//
// Thread rule: drain() on the executor thread that reads it and busy() on its watchdog's, or
// readUntilDone() on one thread; not both. waitForEnd() from any other thread.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ipc/frame_codec.h"
#include "ipc/frame_outbox.h"
#include "obs/console_log.h"
#include "worker/executor_inbox.h"
#include "worker/executor_set.h"
#include "worker/wire_egress.h"

namespace isolane {

class StreamBlocks;

class MasterInbox final : public ExecutorInbox {
 public:
  struct Parts {
    FrameOutbox& out;
    ExecutorSet& executor;
    WireEgressHub& egress;
    ConsoleLog& console;
    std::size_t maxFrameBytes;
    // The process's own figures for a heartbeat's answer (resident memory, CPU time).
    std::function<void(wire::HeartbeatAckT&)> processFigures;
    // The memory shared with the master that streamed pieces cross in (null: none, pieces go
    // through the socket).
    StreamBlocks* blocks = nullptr;
    // The executor thread that reads this socket: the master chose it for the requests it sends
    // here, and they run there. -1: the socket is the worker's only one, and ExecutorSet picks.
    int thread = -1;
  };
  MasterInbox(int fd, Parts parts);
  ~MasterInbox() override;  // stops the stand-in
  MasterInbox(const MasterInbox&) = delete;
  MasterInbox& operator=(const MasterInbox&) = delete;

  int fd() const override { return fd_; }
  // Reads what the socket holds now, without blocking, up to kDrainBytes, and hands on each
  // whole frame. False once the worker is to end (waitForEnd() then returns its exit status).
  bool drain() override;
  // Starts the stand-in reading (until the next drain()).
  void busy(Doorbell& wake) override;
  // A load left by the stand-in, or a stand-in still reading: the next drain() takes over.
  bool holding() const override { return holding_.load() || standIn_.load(); }
  // The executor thread's answers, through this socket's outbox (FrameOutbox::hold).
  void holdAnswers() override { parts_.out.hold(); }
  void releaseAnswers() override { parts_.out.release(); }
  bool answersDue(std::chrono::steady_clock::time_point now) override {
    return parts_.out.flushHeldSince(now - kAnswerHold);
  }
  void flushAnswers() override { parts_.out.flushHeld(); }

  // Reads with blocking reads until the worker is to end; returns its exit status.
  int readUntilDone();

  // Waits until drain() has said false; returns the worker's exit status: 0 when the master
  // said Shutdown or went away, 3 when it sent a frame that is not one.
  int waitForEnd() { return end_.get_future().get(); }

  // What one drain() reads at most: the thread's pass goes on, and the rest waits for the next.
  static constexpr std::size_t kDrainBytes = std::size_t{256} * 1024;
  // One read: at least 64 KiB (what the reader has room for), and the rest of a larger frame
  // under way.
  static constexpr std::size_t kReadBytes = std::size_t{64} * 1024;

 private:
  // Reads what the socket holds now (up to kDrainBytes) and hands it on. `aside`: on the stand-in,
  // which stops at an app load. Under mu_.
  void readNow(bool aside);
  // One read without blocking, and the frames it completed: the bytes read (0: none now), and
  // the exit status once the worker is to end (0 when the master is gone). Under mu_.
  struct Read {
    std::size_t bytes = 0;
    std::optional<int> end;
  };
  Read readOnce(bool aside);
  // Hands on every whole frame read so far (on the stand-in, up to an app load, kept in
  // deferredLoad_); the exit status when the worker is to end. Under mu_.
  std::optional<int> handleFrames(bool aside);
  std::optional<int> handle(const wire::Frame& frame, std::string_view trailer);
  void standInLoop();
  void startRequest(const wire::Request& m, std::string_view body);
  void loadApp(AppSpec spec);
  void answerHeartbeat(const wire::Heartbeat& m);
  void startExecution(const wire::Execute& m);
  void finish(int status);

  const int fd_;
  Parts parts_;
  // The reading, by the executor thread or the stand-in, one at a time.
  std::mutex mu_;
  FrameReader reader_;
  std::optional<AppSpec> deferredLoad_;  // met by the stand-in: the executor thread loads it
  std::atomic<bool> holding_{false};     // deferredLoad_ is set
  bool ended_ = false;
  std::promise<int> end_;

  // The stand-in: started by the first busy(), it reads while standIn_ holds.
  std::atomic<bool> standIn_{false};
  std::atomic<Doorbell*> wake_{nullptr};  // the executor thread's, from busy()
  std::mutex standInMu_;
  std::condition_variable standInWake_;
  bool closing_ = false;  // under standInMu_
  std::thread standInThread_;
};

}  // namespace isolane

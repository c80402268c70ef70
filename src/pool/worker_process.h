#pragma once
// WorkerProcess: one child process of the pool and the master's end of its socketpair. It spawns
// the child; reads its frames (verified, never trusted) and its output (logged by
// pool/worker_output.h) on a reactor (ipc/reactor.h), the one the HTTP front runs on in `serve`,
// so that no thread of its own wakes for a frame; writes frames to it there too, gathered, without
// ever blocking the sender (ipc/socket_writer.h); and reaps it when its pidfd says it has exited: no zombies and no
// leaked descriptors, whatever the order of deaths.
//
// Thread rule: send(), kill() and pid() are safe from any thread. The frame and death callbacks
// run on the reactor, one at a time (a strand of the worker's). The destructor, from any thread
// but the reactor's, returns once no callback runs or will; on the reactor's, it silences them.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ipc/frame_codec.h"
#include "pool/worker_channel.h"
#include "util/result.h"

namespace boost::asio {
class io_context;
}

namespace isolane {

class WorkerProcess final : public WorkerChannel {
 public:
  // A verified frame and its trailer (frame_codec.h), valid during the call.
  using FrameHandler = std::function<void(const wire::Frame& frame, std::string_view trailer)>;
  // Called once when the child is gone (exit, signal, end of socket, or a malformed frame, after
  // which the child is killed). It has been reaped by then.
  using DeathHandler = std::function<void(const std::string& reason)>;

  // At most this many sockets (executor threads: StatusPage::kMaxThreads).
  static constexpr std::size_t kMaxSockets = 64;
  // The descriptor the child gets for the socket of its executor thread `thread`: 3 for the
  // first, 6 onwards for the others (after the status page's 4 and the blocks' 5).
  static constexpr int socketFd(std::size_t thread) {
    return thread == 0 ? 3 : 5 + static_cast<int>(thread);
  }
  // `argv[0]` is the executable; the child gets `sockets` socketpairs, one per executor thread:
  // its end of the first as descriptor 3 and of the others as 6, 7, ...; `statusFd` (a status
  // page, ipc/status_page.h), when there is one, as descriptor 4, and `blocksFd` (its stream
  // blocks, ipc/stream_blocks.h), when there are, as 5. Its frames (on every socket), output and
  // exit are waited for on `io`.
  static Result<std::unique_ptr<WorkerProcess>> spawn(boost::asio::io_context& io,
                                                      const std::vector<std::string>& argv,
                                                      std::size_t maxFrameBytes,
                                                      FrameHandler onFrame, DeathHandler onDeath,
                                                      int statusFd = -1, int blocksFd = -1,
                                                      std::size_t sockets = 1);
  ~WorkerProcess() override;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Safe from any thread; never blocks (the frame leaves from the reactor). Fails when the child
  // is gone. A child that stops reading altogether (past SocketWriter::kMaxQueuedBytes) is killed.
  Status send(std::string frame) override;
  Status send(std::string head, std::string trailer) override;
  Status sendTo(std::size_t thread, std::string frame) override;
  Status sendTo(std::size_t thread, std::string head, std::string trailer) override;
  // Safe from any thread. Signals the child unless it has been reaped.
  void kill(int signal) override;
  pid_t pid() const override;
  bool alive() const override;
  // Waits until the child has been reaped or `deadline` passes (woken by the reaping, not
  // polled); true when it has been. On the reactor's thread it cannot wait (the reaping runs
  // there): it says whether the child has been reaped.
  bool waitExit(std::chrono::steady_clock::time_point deadline) override;

 private:
  struct Link;  // what the reactor's handlers share with this object (worker_process.cc)
  explicit WorkerProcess(std::shared_ptr<Link> link);

  std::shared_ptr<Link> link_;
};

}  // namespace isolane

#pragma once
// WorkerChannel: the master's end of one worker, as the pools (SubprocessBackend, ExecPool) use
// it: send it frames, signal it, wait for its end. WorkerProcess (pool/worker_process.h) is the
// real one, a child process and its socketpair; tests give the pools an in-memory one
// (tests/fake_channel.h) through a WorkerSpawner, and drive supervision with no process.
//
// Thread rule: every member is safe from any thread; waitExit() not from the thread that runs
// the channel's callbacks.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/frame_codec.h"
#include "util/result.h"

namespace boost::asio {
class io_context;
}

namespace isolane {

class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  // Never blocks. Fails when the worker is gone. On the socket of its first executor thread,
  // which also carries what is not a request's (loads, heartbeats, shutdown, fetch events).
  virtual Status send(std::string frame) = 0;
  // A frame's head and its trailer apart (frame_codec.h), so that a body is written from where
  // it is instead of copied behind the head; the padding is added here.
  virtual Status send(std::string head, std::string trailer) {
    return send(appendTrailer(std::move(head), trailer).value());
  }
  // The same on the socket of executor thread `thread` (< WorkerSpawn::sockets; past it: the
  // first): a request and everything of it (its body, cancel, credit) go on its thread's socket,
  // in order. A channel with one socket sends every frame on it.
  virtual Status sendTo(std::size_t thread, std::string frame) {
    (void)thread;
    return send(std::move(frame));
  }
  virtual Status sendTo(std::size_t thread, std::string head, std::string trailer) {
    (void)thread;
    return send(std::move(head), std::move(trailer));
  }
  // Signals the worker unless it is gone (its death callback follows a SIGKILL).
  virtual void kill(int signal) = 0;
  virtual pid_t pid() const = 0;
  virtual bool alive() const = 0;
  // Waits until the worker is gone or `deadline` passes; true when it is gone.
  virtual bool waitExit(std::chrono::steady_clock::time_point deadline) = 0;
};

// What a pool gives the spawner: the worker's command line, its frame ceiling, and the
// callbacks for its frames (verified; with their trailers) and its death (once, after which it
// is gone).
struct WorkerSpawn {
  std::vector<std::string> argv;
  std::size_t maxFrameBytes = kDefaultMaxFrameBytes;
  std::function<void(const wire::Frame& frame, std::string_view trailer)> onFrame;
  std::function<void(const std::string& reason)> onDeath;
  int statusFd = -1;  // a status page for it (ipc/status_page.h), or -1
  int blocksFd = -1;  // the memory its streamed pieces cross in (ipc/stream_blocks.h), or -1
  // Where its frames, output and exit are waited for: the pool's reactor (ipc/reactor.h).
  boost::asio::io_context* io = nullptr;
  // Its executor threads, each with a socket of its own: descriptor 3 for the first, 6, 7, ...
  // for the others (the worker is told with --thread-fds). Frames come back on any of them.
  std::size_t sockets = 1;
};
// Called with the pool's lock held: it must not run the callbacks before it returns.
using WorkerSpawner = std::function<Result<std::unique_ptr<WorkerChannel>>(WorkerSpawn spawn)>;

// The real spawner: a WorkerProcess.
Result<std::unique_ptr<WorkerChannel>> spawnWorkerProcess(WorkerSpawn spawn);

// Ends workers that were asked to exit (sent a Shutdown frame): each has until `deadline` to
// exit by itself, then gets SIGKILL; returns once every one is gone. Not from a thread that runs
// one of their callbacks.
void endWorkers(const std::vector<std::shared_ptr<WorkerChannel>>& workers,
                std::chrono::steady_clock::time_point deadline);

}  // namespace isolane

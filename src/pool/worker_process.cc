#include "pool/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "ipc/socket_writer.h"
#include "obs/log.h"
#include "pool/worker_output.h"
#include "util/environment.h"

extern char** environ;

namespace isolane {

namespace asio = boost::asio;

namespace {
// Each end's send buffer: four streamed pieces (ipc/body_pipe.h) and their frames (which the
// kernel doubles for its own bookkeeping).
constexpr int kSocketBufferBytes = 4 * (64 << 10) + 4096;
}  // namespace

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(asio::io_context& io,
                                                            const std::vector<std::string>& argv,
                                                            std::size_t maxFrameBytes,
                                                            FrameHandler onFrame,
                                                            DeathHandler onDeath, int statusFd,
                                                            int blocksFd) {
  if (argv.empty()) return Error{"no worker command"};
  int fds[2];
  // CLOEXEC on both ends: no other child inherits them. The child's end becomes descriptor 3
  // through dup2, which clears CLOEXEC on the copy only.
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Error{std::string("socketpair failed: ") + std::strerror(errno)};
  }
  // Room for a few streamed pieces in flight each way, so that a worker's executor writes its
  // pieces itself instead of queueing them for its flusher while the master reads the last
  // ones. The kernel caps the size at net.core.wmem_max (a best effort: nothing depends on it).
  for (int fd : fds) {
    int bytes = kSocketBufferBytes;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  // Its stdout and stderr: a pipe of its own, read and logged by the master (pool/worker_output.h).
  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    return Error{std::string("pipe failed: ") + std::strerror(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 3);
  posix_spawn_file_actions_adddup2(&actions, output[1], 1);
  posix_spawn_file_actions_adddup2(&actions, output[1], 2);
  // Out of the way first: the page's and the blocks' descriptors may be 3 (then the dup2 above
  // would replace it before it is copied), 4 or 5.
  int status = statusFd >= 0 ? fcntl(statusFd, F_DUPFD_CLOEXEC, 10) : -1;
  int blocks = blocksFd >= 0 ? fcntl(blocksFd, F_DUPFD_CLOEXEC, 10) : -1;
  if ((statusFd >= 0 && status < 0) || (blocksFd >= 0 && blocks < 0)) {
    std::string e = std::strerror(errno);
    for (int fd : {fds[0], fds[1], output[0], output[1], status, blocks}) {
      if (fd >= 0) close(fd);
    }
    posix_spawn_file_actions_destroy(&actions);
    return Error{"cannot pass the shared memory: " + e};
  }
  if (status >= 0) posix_spawn_file_actions_adddup2(&actions, status, 4);
  if (blocks >= 0) posix_spawn_file_actions_adddup2(&actions, blocks, 5);
  // The worker holds its socket (3), its status page (4), its stream blocks (5) and its output
  // pipe (1, 2), nothing else of the master's: no listener, no client connection, no upstream
  // socket it could write a forged answer to, not the master's own stderr. stdin reads nothing.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (status < 0 && blocks >= 0) posix_spawn_file_actions_addopen(&actions, 4, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, blocks >= 0 ? 6 : status >= 0 ? 5 : 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal handling and nothing blocked, whatever the server
  // blocked for its own sigwait.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Nothing of the master's environment but what the engine needs (util/environment.h): no
  // secret, no NODE_OPTIONS, no service manager's NOTIFY_SOCKET.
  std::vector<std::string> env = workerEnvironment();
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  close(output[1]);
  if (status >= 0) close(status);
  if (blocks >= 0) close(blocks);
  if (rc != 0) {
    close(fds[0]);
    close(output[0]);
    return Error{"cannot start worker " + argv[0] + ": " + std::strerror(rc)};
  }
  // Readable once it has exited: its end is awaited on the reactor, like its frames. (It cannot
  // have been reaped yet, so the pid is still its own.)
  int pidFd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  auto link = std::make_shared<Link>(io, pid, fds[0], output[0], pidFd, maxFrameBytes,
                                     std::move(onFrame), std::move(onDeath));
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(std::move(link)));
}

// What the reactor's handlers share with the WorkerProcess: the worker's sockets, its reader
// state and the callbacks. Every handler runs on `strand`; it lives until the last of them has
// run, so a handler never reaches a WorkerProcess that is gone.
struct WorkerProcess::Link : std::enable_shared_from_this<Link> {
  Link(asio::io_context& context, pid_t child, int socketFd, int outputFd, int pidFd,
       std::size_t maxFrameBytes, FrameHandler frameHandler, DeathHandler deathHandler)
      : io(context),
        strand(asio::make_strand(context)),
        pid(child),
        fd(socketFd),
        socket(strand),
        output(strand),
        exited(strand),
        frames(maxFrameBytes),
        lines(child),
        onFrame(std::move(frameHandler)),
        onDeath(std::move(deathHandler)),
        writer(strand, socket,
               [this](const std::string& why) {
                 if (silenced) return;
                 logEvent(Level::kError, "cannot write to a worker; killing it",
                          {{"pid", static_cast<std::int64_t>(pid)}, {"reason", why}});
                 kill(SIGKILL);  // its death (seen on the reactor) answers for its requests
               }),
        outputBuffer(std::size_t{16} * 1024, '\0') {
    socket.assign(asio::local::stream_protocol(), socketFd);
    output.assign(outputFd);
    if (pidFd >= 0) exited.assign(pidFd);
  }

  void start() {
    asio::post(strand, [self = shared_from_this()] {
      self->readFrames();
      self->readOutput();
    });
  }

  // Frames, as they come, read straight into the frame reader; one read per turn of the
  // reactor (of what the reader has room for: at least 64 KiB and the rest of a larger frame
  // under way; the socket's buffer bounds it), so one chatty worker never keeps the others (or
  // the HTTP front) waiting.
  void readFrames() {
    std::span<char> room = frames.room(kReadBytes);
    socket.async_read_some(
        asio::buffer(room.data(), room.size()),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (ec) return self->socketEnded("");
          self->frames.commit(n);
          const wire::Frame* frame = nullptr;
          std::string error;
          FrameReader::Next next;
          try {
            while ((next = self->frames.next(&frame, &error)) == FrameReader::Next::kFrame) {
              if (!self->silenced) self->onFrame(*frame, self->frames.trailer());
            }
          } catch (const std::exception& e) {
            // Handling what this worker sent failed in a way nothing checked for (out of
            // memory, a bug): the worker goes, as on a protocol error, and the master stays.
            next = FrameReader::Next::kError;
            error = std::string("unexpected failure handling its frame: ") + e.what();
          }
          if (next == FrameReader::Next::kError)
            return self->socketEnded("protocol error: " + error);
          self->readFrames();
        });
  }

  // Its output, logged as it comes (its last lines before it died too).
  void readOutput() {
    output.async_read_some(
        asio::buffer(outputBuffer),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (!self->outputOpen) return;
          if (ec) {
            self->lines.finish();
            self->outputOpen = false;
            return;
          }
          self->lines.feed(self->outputBuffer.data(), n);
          self->readOutput();
        });
  }

  // The child can no longer talk to us: make sure it is gone, then reap it once it has exited.
  void socketEnded(std::string why) {
    reason = std::move(why);
    kill(SIGKILL);
    if (exited.is_open()) {
      exited.async_wait(
          asio::posix::stream_descriptor::wait_read,
          [self = shared_from_this()](const boost::system::error_code&) { self->onExited(); });
      return;
    }
    // No pidfd (a kernel before 5.3): a thread of its own waits for the exit, without reaping.
    std::thread([self = shared_from_this()] {
      siginfo_t info{};
      while (waitid(P_PID, static_cast<id_t>(self->pid), &info, WEXITED | WNOWAIT) < 0 &&
             errno == EINTR) {
      }
      asio::post(self->strand, [self] { self->onExited(); });
    }).detach();
  }

  void onExited() {
    std::string exit = reap();
    // What it wrote last (a fatal error's message) is logged before its death is.
    if (outputOpen) {
      outputOpen = false;
      boost::system::error_code ec;
      output.non_blocking(true, ec);
      std::size_t got;
      while (!ec && (got = output.read_some(asio::buffer(outputBuffer), ec)) > 0) {
        lines.feed(outputBuffer.data(), got);
      }
      lines.finish();
      output.close(ec);
    }
    boost::system::error_code ignored;
    exited.close(ignored);
    if (!silenced) {
      try {
        onDeath(reason.empty() ? exit : reason + " (worker " + exit + ")");
      } catch (const std::exception& e) {
        logEvent(Level::kError, "unexpected failure handling a worker's death",
                 {{"pid", static_cast<std::int64_t>(pid)}, {"error", e.what()}});
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
    }
    changed.notify_all();
  }

  std::string reap() {
    int status = 0;
    pid_t r;
    {
      // Under the lock: kill() must never signal this pid once it is reaped (it may be reused).
      std::lock_guard<std::mutex> lock(mutex);
      do {
        r = waitpid(pid, &status, 0);
      } while (r < 0 && errno == EINTR);
      reaped = true;
    }
    changed.notify_all();
    if (r != pid) return "exited (status unknown)";
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      const char* name = sigabbrev_np(sig);
      return std::string("killed by signal ") +
             (name ? std::string("SIG") + name : std::to_string(sig));
    }
    return "exited";
  }

  void kill(int signal) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!reaped) ::kill(pid, signal);
  }

  // True on the reactor's thread, where nothing may wait for the reactor's own handlers.
  bool cannotWait() const { return io.stopped() || io.get_executor().running_in_this_thread(); }

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  const pid_t pid;
  // The socket's descriptor: closed with `socket`, when the last handler is done.
  const int fd;
  asio::local::stream_protocol::socket socket;
  asio::posix::stream_descriptor output;  // the read end of its stdout and stderr
  asio::posix::stream_descriptor exited;  // its pidfd: readable once it has exited
  FrameReader frames;
  WorkerOutput lines;
  const FrameHandler onFrame;
  const DeathHandler onDeath;
  SocketWriter writer;  // its frames to the child, gathered on `strand`
  static constexpr std::size_t kReadBytes = std::size_t{64} * 1024;
  std::string outputBuffer;
  bool outputOpen = true;
  std::string reason;  // why the master stopped listening, when it was the master's choice

  std::mutex mutex;                 // guards `reaped` against kill(), and `finished`
  std::condition_variable changed;  // reaped or finished
  std::atomic<bool> reaped{false};
  bool finished = false;              // the death was handled: no callback will run again
  std::atomic<bool> silenced{false};  // set by the destructor: no callback then
};

WorkerProcess::WorkerProcess(std::shared_ptr<Link> link) : link_(std::move(link)) {
  link_->start();
}

WorkerProcess::~WorkerProcess() {
  link_->silenced = true;
  link_->kill(SIGKILL);
  ::shutdown(link_->fd, SHUT_RDWR);  // the read ends: the child is awaited and reaped
  link_->writer.silence();           // what is still queued is dropped
  std::unique_lock<std::mutex> lock(link_->mutex);
  // Until the reactor has handled its end, a callback may still be running. On the reactor's
  // own thread (or once it stopped) the callbacks are silenced instead: the link ends alone.
  while (!link_->finished && !link_->cannotWait()) {
    link_->changed.wait_for(lock, std::chrono::seconds(1));
  }
}

pid_t WorkerProcess::pid() const { return link_->pid; }

bool WorkerProcess::alive() const { return !link_->reaped.load(); }

Status WorkerProcess::send(std::string frame) {
  if (link_->reaped || !link_->writer.send(std::move(frame), link_)) {
    return Error{"the worker is gone"};
  }
  return Status::success();
}

Status WorkerProcess::send(std::string head, std::string trailer) {
  if (link_->reaped || !link_->writer.send(std::move(head), std::move(trailer), link_)) {
    return Error{"the worker is gone"};
  }
  return Status::success();
}

void WorkerProcess::kill(int signal) { link_->kill(signal); }

bool WorkerProcess::waitExit(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(link_->mutex);
  if (link_->cannotWait()) return link_->reaped.load();
  auto reaped = [this] { return link_->reaped.load(); };
  if (deadline == std::chrono::steady_clock::time_point::max()) {  // (no overflow in a timespec)
    link_->changed.wait(lock, reaped);
    return true;
  }
  return link_->changed.wait_until(lock, deadline, reaped);
}

Result<std::unique_ptr<WorkerChannel>> spawnWorkerProcess(WorkerSpawn spawn) {
  if (spawn.io == nullptr) return Error{"no reactor to run the worker's socket on"};
  auto proc =
      WorkerProcess::spawn(*spawn.io, spawn.argv, spawn.maxFrameBytes, std::move(spawn.onFrame),
                           std::move(spawn.onDeath), spawn.statusFd, spawn.blocksFd);
  if (!proc) return Error{proc.error()};
  return std::unique_ptr<WorkerChannel>(std::move(proc.value()));
}

void endWorkers(const std::vector<std::shared_ptr<WorkerChannel>>& procs,
                std::chrono::steady_clock::time_point deadline) {
  for (const auto& p : procs) {
    if (!p->waitExit(deadline)) p->kill(SIGKILL);
  }
  // SIGKILL cannot be ignored: each is reaped on the reactor once the kernel has ended it.
  for (const auto& p : procs) p->waitExit(std::chrono::steady_clock::time_point::max());
}

}  // namespace isolane

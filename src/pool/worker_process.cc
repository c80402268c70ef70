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

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(
    asio::io_context& io, const std::vector<std::string>& argv, std::size_t maxFrameBytes,
    FrameHandler onFrame, DeathHandler onDeath, int statusFd, int blocksFd, std::size_t sockets) {
  if (argv.empty()) return Error{"no worker command"};
  if (sockets == 0 || sockets > kMaxSockets) return Error{"a worker has 1 to 64 sockets"};
  // One socketpair per executor thread: ours[i] is the master's end, theirs[i] the child's.
  std::vector<int> ours, theirs;
  int output[2] = {-1, -1};
  auto closeAll = [&] {
    for (int fd : ours) close(fd);
    for (int fd : theirs) close(fd);
    for (int fd : output) {
      if (fd >= 0) close(fd);
    }
  };
  for (std::size_t i = 0; i < sockets; ++i) {
    int fds[2];
    // CLOEXEC on both ends: no other child inherits them. The child's end takes its number
    // through dup2, which clears CLOEXEC on the copy only.
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      std::string e = std::strerror(errno);
      closeAll();
      return Error{"socketpair failed: " + e};
    }
    // Room for a few streamed pieces in flight each way, so that a worker's executor writes its
    // pieces itself instead of queueing them for its flusher while the master reads the last
    // ones. The kernel caps the size at net.core.wmem_max (a best effort: nothing depends on it).
    for (int fd : fds) {
      int bytes = kSocketBufferBytes;
      (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    }
    ours.push_back(fds[0]);
    theirs.push_back(fds[1]);
  }
  // Its stdout and stderr: a pipe of its own, read and logged by the master (pool/worker_output.h).
  if (pipe2(output, O_CLOEXEC) != 0) {
    std::string e = std::strerror(errno);
    closeAll();
    return Error{"pipe failed: " + e};
  }
  // The child's descriptors: its first socket 3, its status page 4, its stream blocks 5, its
  // other sockets 6 onwards. Every one the child gets is first moved past them all (`top`), so
  // that no dup2 below replaces a descriptor another one has yet to copy.
  const int top = std::max(socketFd(sockets - 1), 5) + 1;
  auto lift = [top](int fd) { return fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, top) : -1; };
  {
    int moved = lift(output[1]);
    close(output[1]);
    output[1] = moved;
  }
  for (int& fd : theirs) {
    int moved = lift(fd);
    close(fd);
    fd = moved;
  }
  // The page and the blocks are the caller's: copies, closed once the child has its own.
  int status = lift(statusFd);
  int blocks = lift(blocksFd);
  bool lifted = output[1] >= 0 && (statusFd < 0 || status >= 0) && (blocksFd < 0 || blocks >= 0);
  for (int fd : theirs) lifted = lifted && fd >= 0;
  if (!lifted) {
    std::string e = std::strerror(errno);
    closeAll();
    for (int fd : {status, blocks}) {
      if (fd >= 0) close(fd);
    }
    return Error{"cannot pass the worker its descriptors: " + e};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (std::size_t i = 0; i < sockets; ++i) {
    posix_spawn_file_actions_adddup2(&actions, theirs[i], socketFd(i));
  }
  posix_spawn_file_actions_adddup2(&actions, output[1], 1);
  posix_spawn_file_actions_adddup2(&actions, output[1], 2);
  if (status >= 0) posix_spawn_file_actions_adddup2(&actions, status, 4);
  if (blocks >= 0) posix_spawn_file_actions_adddup2(&actions, blocks, 5);
  // The worker holds its sockets (3, 6...), its status page (4), its stream blocks (5) and its
  // output pipe (1, 2), nothing else of the master's: no listener, no client connection, no
  // upstream socket it could write a forged answer to, not the master's own stderr. stdin reads
  // nothing, and a gap below its last descriptor is /dev/null.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int last = sockets > 1 ? socketFd(sockets - 1) : blocks >= 0 ? 5 : status >= 0 ? 4 : 3;
  if (status < 0 && last > 4)
    posix_spawn_file_actions_addopen(&actions, 4, "/dev/null", O_RDONLY, 0);
  if (blocks < 0 && last > 5)
    posix_spawn_file_actions_addopen(&actions, 5, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, last + 1);
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
  for (int& fd : theirs) close(fd);
  theirs.clear();
  close(output[1]);
  output[1] = -1;
  if (status >= 0) close(status);
  if (blocks >= 0) close(blocks);
  if (rc != 0) {
    closeAll();
    return Error{"cannot start worker " + argv[0] + ": " + std::strerror(rc)};
  }
  // Readable once it has exited: its end is awaited on the reactor, like its frames. (It cannot
  // have been reaped yet, so the pid is still its own.)
  int pidFd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  auto link = std::make_shared<Link>(io, pid, std::move(ours), output[0], pidFd, maxFrameBytes,
                                     std::move(onFrame), std::move(onDeath));
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(std::move(link)));
}

// What the reactor's handlers share with the WorkerProcess: the worker's sockets, their reader
// state and the callbacks. Every handler runs on `strand`; it lives until the last of them has
// run, so a handler never reaches a WorkerProcess that is gone.
struct WorkerProcess::Link : std::enable_shared_from_this<Link> {
  // The master's end of one executor thread's socket: its frames read, and written gathered.
  struct Socket {
    Socket(Link& link, int socketFd, std::size_t maxFrameBytes)
        : fd(socketFd),
          socket(link.strand),
          frames(maxFrameBytes),
          writer(link.strand, socket, [&link](const std::string& why) {
            if (link.silenced) return;
            logEvent(Level::kError, "cannot write to a worker; killing it",
                     {{"pid", static_cast<std::int64_t>(link.pid)}, {"reason", why}});
            link.kill(SIGKILL);  // its death (seen on the reactor) answers for its requests
          }) {
      socket.assign(asio::local::stream_protocol(), socketFd);
    }
    // The descriptor: closed with `socket`, when the last handler is done.
    const int fd;
    asio::local::stream_protocol::socket socket;
    FrameReader frames;
    SocketWriter writer;  // its frames to the child, gathered on `strand`
  };

  Link(asio::io_context& context, pid_t child, std::vector<int> socketFds, int outputFd, int pidFd,
       std::size_t maxFrameBytes, FrameHandler frameHandler, DeathHandler deathHandler)
      : io(context),
        strand(asio::make_strand(context)),
        pid(child),
        output(strand),
        exited(strand),
        lines(child),
        onFrame(std::move(frameHandler)),
        onDeath(std::move(deathHandler)),
        outputBuffer(std::size_t{16} * 1024, '\0') {
    for (int fd : socketFds) sockets.push_back(std::make_unique<Socket>(*this, fd, maxFrameBytes));
    output.assign(outputFd);
    if (pidFd >= 0) exited.assign(pidFd);
  }

  void start() {
    asio::post(strand, [self = shared_from_this()] {
      for (auto& s : self->sockets) self->readFrames(*s);
      self->readOutput();
    });
  }

  // The socket a frame for executor thread `thread` goes on.
  Socket& socketOf(std::size_t thread) { return *sockets[thread < sockets.size() ? thread : 0]; }

  // Frames, as they come, read straight into the socket's frame reader; one read per turn of
  // the reactor (of what the reader has room for: at least 64 KiB and the rest of a larger frame
  // under way; the socket's buffer bounds it), so one chatty worker never keeps the others (or
  // the HTTP front) waiting. Every socket's frames go to the same handler.
  void readFrames(Socket& s) {
    std::span<char> room = s.frames.room(kReadBytes);
    s.socket.async_read_some(
        asio::buffer(room.data(), room.size()),
        [self = shared_from_this(), &s](const boost::system::error_code& ec, std::size_t n) {
          if (ec) return self->socketEnded("");
          s.frames.commit(n);
          const wire::Frame* frame = nullptr;
          std::string error;
          FrameReader::Next next;
          try {
            while ((next = s.frames.next(&frame, &error)) == FrameReader::Next::kFrame) {
              if (!self->silenced) self->onFrame(*frame, s.frames.trailer());
            }
          } catch (const std::exception& e) {
            // Handling what this worker sent failed in a way nothing checked for (out of
            // memory, a bug): the worker goes, as on a protocol error, and the master stays.
            next = FrameReader::Next::kError;
            error = std::string("unexpected failure handling its frame: ") + e.what();
          }
          if (next == FrameReader::Next::kError)
            return self->socketEnded("protocol error: " + error);
          self->readFrames(s);
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
  // Once: any of its sockets ending ends it (the others end with it).
  void socketEnded(std::string why) {
    if (ending) return;
    ending = true;
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
  std::vector<std::unique_ptr<Socket>> sockets;  // one per executor thread; never empty
  asio::posix::stream_descriptor output;         // the read end of its stdout and stderr
  asio::posix::stream_descriptor exited;         // its pidfd: readable once it has exited
  WorkerOutput lines;
  const FrameHandler onFrame;
  const DeathHandler onDeath;
  static constexpr std::size_t kReadBytes = std::size_t{64} * 1024;
  std::string outputBuffer;
  bool outputOpen = true;
  bool ending = false;  // socketEnded ran (on the strand)
  std::string reason;   // why the master stopped listening, when it was the master's choice

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
  for (auto& s : link_->sockets) {
    ::shutdown(s->fd, SHUT_RDWR);  // the reads end: the child is awaited and reaped
    s->writer.silence();           // what is still queued is dropped
  }
  std::unique_lock<std::mutex> lock(link_->mutex);
  // Until the reactor has handled its end, a callback may still be running. On the reactor's
  // own thread (or once it stopped) the callbacks are silenced instead: the link ends alone.
  while (!link_->finished && !link_->cannotWait()) {
    link_->changed.wait_for(lock, std::chrono::seconds(1));
  }
}

pid_t WorkerProcess::pid() const { return link_->pid; }

bool WorkerProcess::alive() const { return !link_->reaped.load(); }

Status WorkerProcess::send(std::string frame) { return sendTo(0, std::move(frame)); }

Status WorkerProcess::send(std::string head, std::string trailer) {
  return sendTo(0, std::move(head), std::move(trailer));
}

Status WorkerProcess::sendTo(std::size_t thread, std::string frame) {
  if (link_->reaped || !link_->socketOf(thread).writer.send(std::move(frame), link_)) {
    return Error{"the worker is gone"};
  }
  return Status::success();
}

Status WorkerProcess::sendTo(std::size_t thread, std::string head, std::string trailer) {
  if (link_->reaped ||
      !link_->socketOf(thread).writer.send(std::move(head), std::move(trailer), link_)) {
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
                           std::move(spawn.onDeath), spawn.statusFd, spawn.blocksFd, spawn.sockets);
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

#include "pool/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "obs/log.h"
#include "pool/worker_output.h"
#include "util/environment.h"

extern char** environ;

namespace isolane {

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(const std::vector<std::string>& argv,
                                                            std::size_t maxFrameBytes,
                                                            FrameHandler onFrame,
                                                            DeathHandler onDeath, int statusFd) {
  if (argv.empty()) return Error{"no worker command"};
  int fds[2];
  // CLOEXEC on both ends: no other child inherits them. The child's end becomes descriptor 3
  // through dup2, which clears CLOEXEC on the copy only.
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Error{std::string("socketpair failed: ") + std::strerror(errno)};
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
  // Out of the way first: the page's descriptor may be 3 (then the dup2 above would replace it
  // before it is copied) or 4.
  int status = statusFd >= 0 ? fcntl(statusFd, F_DUPFD_CLOEXEC, 10) : -1;
  if (statusFd >= 0 && status < 0) {
    close(fds[0]);
    close(fds[1]);
    close(output[0]);
    close(output[1]);
    posix_spawn_file_actions_destroy(&actions);
    return Error{std::string("cannot pass the status page: ") + std::strerror(errno)};
  }
  if (status >= 0) posix_spawn_file_actions_adddup2(&actions, status, 4);
  // The worker holds its socket (3), its status page (4) and its output pipe (1, 2), nothing else
  // of the master's: no listener, no client connection, no upstream socket it could write a
  // forged answer to, not the master's own stderr. stdin reads nothing.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, status >= 0 ? 5 : 4);
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
  if (rc != 0) {
    close(fds[0]);
    close(output[0]);
    return Error{"cannot start worker " + argv[0] + ": " + std::strerror(rc)};
  }
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, fds[0], output[0], maxFrameBytes,
                                                          std::move(onFrame), std::move(onDeath)));
}

WorkerProcess::WorkerProcess(pid_t pid, int fd, int outputFd, std::size_t maxFrameBytes,
                             FrameHandler onFrame, DeathHandler onDeath)
    : pid_(pid),
      fd_(fd),
      outputFd_(outputFd),
      maxFrameBytes_(maxFrameBytes),
      onFrame_(std::move(onFrame)),
      onDeath_(std::move(onDeath)) {
  out_ = std::make_unique<FrameOutbox>(fd_, [this](const std::string& why) {
    logEvent(Level::kError, "cannot write to a worker; killing it",
             {{"pid", static_cast<std::int64_t>(pid_)}, {"reason", why}});
    kill(SIGKILL);  // its death (seen by the reader) answers for its requests
  });
  reader_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "isolane-wread");
    readLoop();
  });
}

WorkerProcess::~WorkerProcess() {
  silenced_ = true;
  kill(SIGKILL);
  ::shutdown(fd_, SHUT_RDWR);  // wakes the reader, which reaps
  if (reader_.joinable()) reader_.join();
  out_.reset();  // after shutdown: what it still holds fails at once
  close(fd_);
  close(outputFd_);
}

Status WorkerProcess::send(const std::string& frame) {
  if (reaped_) return Error{"the worker is gone"};
  out_->sendBytes(frame);
  return Status::success();
}

void WorkerProcess::kill(int signal) {
  std::lock_guard<std::mutex> lock(reapMutex_);
  if (!reaped_) ::kill(pid_, signal);
}

bool WorkerProcess::waitExit(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(reapMutex_);
  if (deadline == std::chrono::steady_clock::time_point::max()) {  // (no overflow in a timespec)
    reapedCv_.wait(lock, [this] { return reaped_.load(); });
    return true;
  }
  return reapedCv_.wait_until(lock, deadline, [this] { return reaped_.load(); });
}

Result<std::unique_ptr<WorkerChannel>> spawnWorkerProcess(WorkerSpawn spawn) {
  auto proc = WorkerProcess::spawn(spawn.argv, spawn.maxFrameBytes, std::move(spawn.onFrame),
                                   std::move(spawn.onDeath), spawn.statusFd);
  if (!proc) return Error{proc.error()};
  return std::unique_ptr<WorkerChannel>(std::move(proc.value()));
}

void endWorkers(const std::vector<std::shared_ptr<WorkerChannel>>& procs,
                std::chrono::steady_clock::time_point deadline) {
  for (const auto& p : procs) {
    if (!p->waitExit(deadline)) p->kill(SIGKILL);
  }
  // SIGKILL cannot be ignored: each is reaped by its reader once the kernel has ended it.
  for (const auto& p : procs) p->waitExit(std::chrono::steady_clock::time_point::max());
}

std::string WorkerProcess::reap() {
  // Wait for the exit without reaping first: until reaped_ is set under the lock, kill() may
  // still signal this pid, which must not have been reused by then.
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  int status = 0;
  pid_t r;
  {
    std::lock_guard<std::mutex> lock(reapMutex_);
    do {
      r = waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    reaped_ = true;
  }
  reapedCv_.notify_all();
  if (r != pid_) return "exited (status unknown)";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return std::string("killed by signal ") +
           (name ? std::string("SIG") + name : std::to_string(sig));
  }
  return "exited";
}

void WorkerProcess::readLoop() {
  FrameReader reader(maxFrameBytes_);
  WorkerOutput output(pid_);
  std::string buffer(std::size_t{64} * 1024, '\0');
  std::string reason;
  bool outputOpen = true;
  bool socketOpen = true;
  while (socketOpen) {
    // Its output, when some is waiting: logged as it comes (its last lines before it died too).
    pollfd fds[2] = {{fd_, POLLIN, 0}, {outputOpen ? outputFd_ : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) {
      ssize_t got = ::read(outputFd_, buffer.data(), buffer.size());
      if (got > 0) {
        output.feed(buffer.data(), static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        output.finish();
        outputOpen = false;
      }
    }
    if (fds[0].revents == 0) continue;
    // Frames, for as long as they come without a wait (up to 32 reads, then its output gets a
    // look again): under load one poll serves many reads.
    for (int reads = 0; reads < 32; ++reads) {
      ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        socketOpen = false;
        break;
      }
      reader.append(buffer.data(), static_cast<std::size_t>(n));
      const wire::Frame* frame = nullptr;
      std::string error;
      FrameReader::Next next;
      try {
        while ((next = reader.next(&frame, &error)) == FrameReader::Next::kFrame) {
          onFrame_(*frame);
        }
      } catch (const std::exception& e) {
        // Handling what this worker sent failed in a way nothing checked for (out of memory, a
        // bug): the worker goes, as on a protocol error, and the master stays.
        next = FrameReader::Next::kError;
        error = std::string("unexpected failure handling its frame: ") + e.what();
      }
      if (next == FrameReader::Next::kError) {
        reason = "protocol error: " + error;
        socketOpen = false;
        break;
      }
    }
  }
  // The child can no longer talk to us: make sure it is gone, then reap it. What it wrote last
  // (a fatal error's message) is logged before its death is.
  kill(SIGKILL);
  std::string exit = reap();
  if (outputOpen) {
    int flags = fcntl(outputFd_, F_GETFL);
    fcntl(outputFd_, F_SETFL, flags | O_NONBLOCK);
    ssize_t got;
    while ((got = ::read(outputFd_, buffer.data(), buffer.size())) > 0) {
      output.feed(buffer.data(), static_cast<std::size_t>(got));
    }
    output.finish();
  }
  if (!silenced_) onDeath_(reason.empty() ? exit : reason + " (worker " + exit + ")");
}

}  // namespace isolane

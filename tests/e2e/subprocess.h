#pragma once
// Runs the real `isolane` binary for command-line tests: output captured, exit status returned.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace isolane::test {

class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> args) {
    int out[2], err[2];
    pipe2(out, O_CLOEXEC);
    pipe2(err, O_CLOEXEC);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }

  // Reads stderr until it contains `needle` or `limit` passes. Returns what was read.
  std::string waitForStderr(const std::string& needle, std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (stderr_.find(needle) == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollOnce(50);
      if (exitedNow()) break;
    }
    return stderr_;
  }

  void signal(int sig) { kill(pid_, sig); }
  pid_t pid() const { return pid_; }

  // Waits for exit (reading output meanwhile); returns the exit status, or -1 on timeout.
  int wait(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      pollOnce(50);
      if (exitedNow()) {
        while (pollOnce(0)) {
        }
        return status_;
      }
    }
    return -1;
  }

  const std::string& out() const { return stdout_; }
  const std::string& err() const { return stderr_; }

 private:
  bool pollOnce(int ms) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (poll(fds, 2, ms) <= 0) return false;
    bool any = false;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP)) {
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          (i == 0 ? stdout_ : stderr_).append(buf, static_cast<std::size_t>(n));
          any = true;
        }
      }
    }
    return any;
  }
  bool exitedNow() {
    if (exited_) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return exited_;
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool exited_ = false;
  int status_ = -1;
  std::string stdout_, stderr_;
};

}  // namespace isolane::test

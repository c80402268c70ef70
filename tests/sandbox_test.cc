// The worker sandbox (worker/sandbox.h), entered by a child process that then tries each thing a
// worker must not do: every refusal is EPERM and a log line naming the call, and what a worker
// needs (reading files, signalling itself) still works.

#include "worker/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>

namespace isolane {
namespace {

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// Runs the probe in a sandboxed child: "name=errno" per attempt on `results`, the sandbox's log
// lines on `log`.
struct Probe {
  std::map<std::string, int> results;
  std::string log;
};

Probe runProbe() {
  int out[2], err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    bool wasRoot = geteuid() == 0;
    if (Status s = enterSandbox(SandboxOptions{"/tmp", 64, true}); !s) _exit(3);
    FILE* report = fdopen(out[1], "w");
    auto note = [&](const char* name, int rc) {
      std::fprintf(report, "%s=%d\n", name, rc < 0 ? errno : 0);
    };
    note("socket", socket(AF_INET, SOCK_STREAM, 0));
    int pair[2];
    note("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    note("execve", execve("/bin/true", argv, environ));
    note("ptrace", static_cast<int>(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)));
    note("mount", mount("none", "/mnt", "tmpfs", 0, nullptr));
    note("open-write", open("/tmp/isolane-sandbox-probe", O_WRONLY | O_CREAT, 0600));
    note("open-rdwr", open("/etc/hostname", O_RDWR));
    note("unlink", unlink("/tmp/isolane-sandbox-probe"));
    note("mkdir", mkdir("/tmp/isolane-sandbox-probe-dir", 0700));
    note("kill-parent", kill(getppid(), 0));
    note("kill-group", kill(0, 0));
    // What it may still do.
    note("open-read", open("/etc/hostname", O_RDONLY));
    note("kill-self", kill(getpid(), 0));
    note("dumpable", prctl(PR_GET_DUMPABLE) == 0 ? 0 : -1);
    rlimit core{};
    getrlimit(RLIMIT_CORE, &core);
    note("no-core", core.rlim_cur == 0 ? 0 : -1);
    note("relative-open", open("anything", O_RDONLY));  // the working directory is gone
    note("not-root", !wasRoot || geteuid() == 65534 ? 0 : -1);
    std::fclose(report);
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  Probe probe;
  std::string text = readAll(out[0]);
  probe.log = readAll(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << probe.log;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t eol = text.find('\n', at);
    std::string line = text.substr(at, eol - at);
    std::size_t eq = line.find('=');
    probe.results[line.substr(0, eq)] = std::stoi(line.substr(eq + 1));
    at = eol + 1;
  }
  return probe;
}

TEST(Sandbox, EveryRefusalIsEpermAndALogLineNamingTheCall) {
  Probe probe = runProbe();
  for (const char* refused : {"socket", "socketpair", "execve", "ptrace", "mount", "open-write",
                              "open-rdwr", "unlink", "mkdir", "kill-parent", "kill-group"}) {
    EXPECT_EQ(probe.results[refused], EPERM) << refused << "\n" << probe.log;
  }
  for (const char* name : {"\"socket\"", "\"socketpair\"", "\"execve\"", "\"ptrace\"", "\"mount\"",
                           "\"openat\"", "\"unlink\"", "\"mkdir\"", "\"kill\""}) {
    EXPECT_NE(probe.log.find(std::string("\"syscall\":") + name), std::string::npos) << name << "\n"
                                                                                     << probe.log;
  }
}

TEST(Sandbox, WhatAWorkerNeedsStillWorks) {
  Probe probe = runProbe();
  EXPECT_EQ(probe.results["open-read"], 0);
  EXPECT_EQ(probe.results["kill-self"], 0);
  EXPECT_EQ(probe.results["dumpable"], 0);
  EXPECT_EQ(probe.results["no-core"], 0);
  EXPECT_EQ(probe.results["not-root"], 0);
  // Nothing is reachable from the working directory: it is gone (or, once root was dropped, not
  // even enterable).
  int relative = probe.results["relative-open"];
  EXPECT_TRUE(relative == ENOENT || relative == EACCES) << relative;
}

}  // namespace
}  // namespace isolane

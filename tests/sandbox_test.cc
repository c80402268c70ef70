// The worker sandbox (worker/sandbox.h), entered by a child process that then tries each thing a
// compromised worker would: reach the network, start programs or processes, make namespaces,
// reach its parent (standing for the master and the other workers) by signal, pidfd, ptrace,
// limits or /proc, open files, use io_uring. Every refusal is checked with its error (EPERM and a
// log line naming the call; EACCES and no line for file lookups; ENOSYS for what callers fall
// back from), and what a worker needs (threads, signalling itself, its own limits) still works.

#include "worker/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>

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

long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  return syscall(nr, a, b, c, d, e);
}

Probe runProbe() {
  int out[2], err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    bool wasRoot = geteuid() == 0;
    std::string environ_ = "/proc/" + std::to_string(parent) + "/environ";
    std::string mem = "/proc/" + std::to_string(parent) + "/mem";
    if (Status s = enterSandbox(SandboxOptions{"/tmp", 64, true}); !s) _exit(3);
    FILE* report = fdopen(out[1], "w");
    auto note = [&](const char* name, long rc) {
      std::fprintf(report, "%s=%d\n", name, rc < 0 ? errno : 0);
      std::fflush(report);
    };
    // The network.
    note("socket", socket(AF_INET, SOCK_STREAM, 0));
    int pair[2];
    note("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    // Programs and processes.
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    note("execve", execve("/bin/true", argv, environ));
    note("fork", sys(SYS_fork));
    note("vfork", sys(SYS_vfork));
    note("clone-process", sys(SYS_clone, SIGCHLD));
    note("clone-newuser", sys(SYS_clone, CLONE_NEWUSER | SIGCHLD));
    note("clone-thread-newns", sys(SYS_clone, CLONE_THREAD | CLONE_VM | CLONE_SIGHAND | CLONE_NEWNS));
    note("clone3", sys(SYS_clone3, 0, 0));
    note("unshare", unshare(CLONE_NEWUSER));
    // io_uring: a ring would reach files and sockets past every rule here.
    note("io_uring_setup", sys(SYS_io_uring_setup, 8, 0));
    note("io_uring_enter", sys(SYS_io_uring_enter, 0, 0, 0, 0, 0));
    // Another process: the parent stands for the master and the sibling workers.
    note("kill-parent", kill(parent, 0));
    note("kill-group", kill(0, 0));
    note("tgkill-parent", sys(SYS_tgkill, parent, parent, 0));
    siginfo_t info{};
    info.si_code = SI_QUEUE;
    note("rt_sigqueueinfo", sys(SYS_rt_sigqueueinfo, parent, SIGTERM, reinterpret_cast<long>(&info)));
    note("pidfd_open", sys(SYS_pidfd_open, parent, 0));
    note("pidfd_send_signal", sys(SYS_pidfd_send_signal, 0, SIGTERM, 0, 0));
    note("pidfd_getfd", sys(SYS_pidfd_getfd, 0, 0, 0));
    rlimit limit{};
    note("prlimit-parent", sys(SYS_prlimit64, parent, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&limit)));
    note("ptrace", static_cast<int>(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)));
    char byte;
    iovec local{&byte, 1}, remote{&byte, 1};
    note("process_vm_readv", process_vm_readv(parent, &local, 1, &remote, 1, 0));
    // The kernel and privileges.
    note("mount", mount("none", "/mnt", "tmpfs", 0, nullptr));
    note("seccomp", sys(SYS_seccomp, 0, 0, 0));
    note("set-dumpable", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
    note("tiocsti", ioctl(STDERR_FILENO, TIOCSTI, "x"));
    note("memfd_create", sys(SYS_memfd_create, reinterpret_cast<long>("x"), 0));
    // Files: made, removed, and (quietly) opened or looked at.
    note("unlink", unlink("/tmp/isolane-sandbox-probe"));
    note("mkdir", mkdir("/tmp/isolane-sandbox-probe-dir", 0700));
    note("open-write", open("/tmp/isolane-sandbox-probe", O_WRONLY | O_CREAT, 0600));
    note("open-read", open("/etc/hostname", O_RDONLY));
    note("open-master-environ", open(environ_.c_str(), O_RDONLY));
    note("open-master-mem", open(mem.c_str(), O_RDONLY));
    struct stat st {};
    note("stat", stat("/etc/passwd", &st));
    note("relative-open", open("anything", O_RDONLY));
    // What it may still do.
    note("fstat", fstat(STDERR_FILENO, &st));
    note("kill-self", kill(getpid(), 0));
    note("prlimit-self", sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&limit)));
    int threadRan = 0;
    std::thread([&] { threadRan = 1; }).join();
    note("thread", threadRan == 1 ? 0 : (errno = EINVAL, -1));
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    note("mprotect-exec", mprotect(page, 4096, PROT_READ | PROT_EXEC));
    note("dumpable", prctl(PR_GET_DUMPABLE) == 0 ? 0 : (errno = EINVAL, -1));
    rlimit core{};
    getrlimit(RLIMIT_CORE, &core);
    note("no-core", core.rlim_cur == 0 ? 0 : (errno = EINVAL, -1));
    note("not-root", !wasRoot || geteuid() == 65534 ? 0 : (errno = EINVAL, -1));
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

class Sandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { probe_ = new Probe(runProbe()); }
  static void TearDownTestSuite() { delete probe_; }
  int result(const char* name) {
    auto it = probe_->results.find(name);
    return it == probe_->results.end() ? -1 : it->second;
  }
  bool logged(const char* syscall) {
    return probe_->log.find(std::string("\"syscall\":\"") + syscall + "\"") != std::string::npos;
  }
  static Probe* probe_;
};
Probe* Sandbox::probe_ = nullptr;

TEST_F(Sandbox, EveryRefusalIsEpermAndALogLineNamingTheCall) {
  std::map<const char*, const char*> refused = {
      {"socket", "socket"},
      {"socketpair", "socketpair"},
      {"execve", "execve"},
      {"fork", "fork"},
      {"vfork", "vfork"},
      {"clone-process", "clone"},
      {"clone-newuser", "clone"},
      {"clone-thread-newns", "clone"},
      {"unshare", "unshare"},
      {"kill-parent", "kill"},
      {"kill-group", "kill"},
      {"tgkill-parent", "tgkill"},
      {"rt_sigqueueinfo", "rt_sigqueueinfo"},
      {"pidfd_open", "pidfd_open"},
      {"pidfd_send_signal", "pidfd_send_signal"},
      {"pidfd_getfd", "pidfd_getfd"},
      {"prlimit-parent", "prlimit64"},
      {"ptrace", "ptrace"},
      {"process_vm_readv", "process_vm_readv"},
      {"mount", "mount"},
      {"seccomp", "seccomp"},
      {"set-dumpable", "prctl"},
      {"tiocsti", "ioctl"},
      {"memfd_create", "memfd_create"},
      {"unlink", "unlink"},
      {"mkdir", "mkdir"},
  };
  for (const auto& [probe, syscall] : refused) {
    EXPECT_EQ(result(probe), EPERM) << probe << "\n" << probe_->log;
    EXPECT_TRUE(logged(syscall)) << syscall << "\n" << probe_->log;
  }
}

TEST_F(Sandbox, IoUringAndClone3AreMissingSoCallersFallBack) {
  for (const char* probe : {"io_uring_setup", "io_uring_enter", "clone3"}) {
    EXPECT_EQ(result(probe), ENOSYS) << probe;
  }
}

TEST_F(Sandbox, NoFileCanBeOpenedOrLookedAtNotEvenTheMastersProcFiles) {
  for (const char* probe : {"open-write", "open-read", "open-master-environ", "open-master-mem",
                            "stat", "relative-open"}) {
    EXPECT_EQ(result(probe), EACCES) << probe;
  }
  EXPECT_FALSE(logged("openat")) << "file lookups are refused quietly\n" << probe_->log;
}

TEST_F(Sandbox, WhatAWorkerNeedsStillWorks) {
  for (const char* probe : {"fstat", "kill-self", "prlimit-self", "thread", "mprotect-exec",
                            "dumpable", "no-core", "not-root"}) {
    EXPECT_EQ(result(probe), 0) << probe << "\n" << probe_->log;
  }
}

}  // namespace
}  // namespace isolane

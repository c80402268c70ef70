#include "worker/sandbox_probe.h"

#include <errno.h>
#include <fcntl.h>
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
#include <unistd.h>

#include <cstring>
#include <thread>

extern char** environ;

namespace isolane {
namespace {

long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  return syscall(nr, a, b, c, d, e);
}

// The errno of a call's result (0 when it succeeded). A descriptor it made is closed.
int outcome(long rc) {
  if (rc < 0) return errno;
  return 0;
}

int closing(long fd) {
  int got = outcome(fd);
  if (fd >= 0) close(static_cast<int>(fd));
  return got;
}

}  // namespace

std::vector<SandboxProbe> probeSandbox(pid_t other) {
  std::vector<SandboxProbe> out;
  auto probe = [&](const char* name, const char* family, int expected, const char* syscall,
                   int got) { out.push_back(SandboxProbe{name, family, expected, got, syscall}); };
  std::string proc = "/proc/" + std::to_string(other);

  // The network.
  probe("socket", "network", EPERM, "socket", closing(socket(AF_INET, SOCK_STREAM, 0)));
  int pair[2];
  probe("socketpair", "network", EPERM, "socketpair", outcome(socketpair(AF_UNIX, SOCK_STREAM, 0, pair)));

  // Programs and processes.
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  probe("execve", "processes", EPERM, "execve", outcome(execve("/bin/true", argv, environ)));
  probe("fork", "processes", EPERM, "fork", outcome(sys(SYS_fork)));
  probe("vfork", "processes", EPERM, "vfork", outcome(sys(SYS_vfork)));
  probe("clone-process", "processes", EPERM, "clone", outcome(sys(SYS_clone, SIGCHLD)));
  probe("clone-newuser", "processes", EPERM, "clone",
        outcome(sys(SYS_clone, CLONE_NEWUSER | SIGCHLD)));
  probe("clone-thread-newns", "processes", EPERM, "clone",
        outcome(sys(SYS_clone, CLONE_THREAD | CLONE_VM | CLONE_SIGHAND | CLONE_NEWNS)));
  probe("clone3", "processes", ENOSYS, "", outcome(sys(SYS_clone3, 0, 0)));
  probe("unshare", "processes", EPERM, "unshare", outcome(unshare(CLONE_NEWUSER)));
  // io_uring: a ring reaches files and sockets past every rule of the filter.
  probe("io_uring_setup", "kernel", ENOSYS, "", closing(sys(SYS_io_uring_setup, 8, 0)));
  probe("io_uring_enter", "kernel", ENOSYS, "", outcome(sys(SYS_io_uring_enter, 0, 0, 0, 0, 0)));

  // Another process of the server (the master, the sibling workers).
  probe("kill-other", "other processes", EPERM, "kill", outcome(kill(other, 0)));
  probe("kill-group", "other processes", EPERM, "kill", outcome(kill(0, 0)));
  probe("kill-every", "other processes", EPERM, "kill", outcome(kill(-1, 0)));
  probe("tgkill-other", "other processes", EPERM, "tgkill", outcome(sys(SYS_tgkill, other, other, 0)));
  siginfo_t info{};
  info.si_code = SI_QUEUE;
  probe("rt_sigqueueinfo", "other processes", EPERM, "rt_sigqueueinfo",
        outcome(sys(SYS_rt_sigqueueinfo, other, SIGTERM, reinterpret_cast<long>(&info))));
  probe("pidfd_open", "other processes", EPERM, "pidfd_open",
        closing(sys(SYS_pidfd_open, other, 0)));
  probe("pidfd_send_signal", "other processes", EPERM, "pidfd_send_signal",
        outcome(sys(SYS_pidfd_send_signal, 0, SIGTERM, 0, 0)));
  probe("pidfd_getfd", "other processes", EPERM, "pidfd_getfd",
        closing(sys(SYS_pidfd_getfd, 0, 0, 0)));
  rlimit limit{};
  probe("prlimit-other", "other processes", EPERM, "prlimit64",
        outcome(sys(SYS_prlimit64, other, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&limit))));
  probe("ptrace", "other processes", EPERM, "ptrace",
        outcome(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)));
  char byte = 0;
  iovec local{&byte, 1}, remote{&byte, 1};
  probe("process_vm_readv", "other processes", EPERM, "process_vm_readv",
        outcome(process_vm_readv(other, &local, 1, &remote, 1, 0)));
  // A descriptor that signals a process of the worker's choosing when it is ready.
  int pipeFds[2] = {-1, -1};
  if (pipe2(pipeFds, O_CLOEXEC) == 0) {
    probe("fcntl-setown", "other processes", EPERM, "fcntl",
          outcome(fcntl(pipeFds[0], F_SETOWN, other)));
    probe("fcntl-setsig", "other processes", EPERM, "fcntl",
          outcome(fcntl(pipeFds[0], F_SETSIG, SIGKILL)));
    probe("fcntl-async", "other processes", EPERM, "fcntl",
          outcome(fcntl(pipeFds[0], F_SETFL, O_ASYNC | O_NONBLOCK)));
    probe("fcntl-nonblock", "needed", 0, "", outcome(fcntl(pipeFds[0], F_SETFL, O_NONBLOCK)));
    close(pipeFds[0]);
    close(pipeFds[1]);
  }
  probe("open-other-environ", "other processes", EACCES, "",
        closing(open((proc + "/environ").c_str(), O_RDONLY)));
  probe("open-other-mem", "other processes", EACCES, "",
        closing(open((proc + "/mem").c_str(), O_RDONLY)));

  // The kernel, and what the sandbox set.
  probe("mount", "kernel", EPERM, "mount", outcome(mount("none", "/mnt", "tmpfs", 0, nullptr)));
  probe("seccomp", "kernel", EPERM, "seccomp", outcome(sys(SYS_seccomp, 0, 0, 0)));
  probe("set-dumpable", "kernel", EPERM, "prctl", outcome(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)));
  probe("tiocsti", "kernel", EPERM, "ioctl", outcome(ioctl(STDERR_FILENO, TIOCSTI, "x")));
  probe("memfd_create", "kernel", EPERM, "memfd_create",
        closing(sys(SYS_memfd_create, reinterpret_cast<long>("x"), 0)));
  char oob = 'x';
  probe("send-oob", "kernel", EPERM, "sendto", outcome(send(STDERR_FILENO, &oob, 1, MSG_OOB)));

  // Files: made or removed (refused, logged), opened or looked at (refused quietly).
  probe("unlink", "files", EPERM, "unlink", outcome(unlink("/tmp/isolane-sandbox-probe")));
  probe("mkdir", "files", EPERM, "mkdir", outcome(mkdir("/tmp/isolane-sandbox-probe-dir", 0700)));
  probe("open-write", "files", EACCES, "",
        closing(open("/tmp/isolane-sandbox-probe", O_WRONLY | O_CREAT, 0600)));
  probe("open-read", "files", EACCES, "", closing(open("/etc/hostname", O_RDONLY)));
  struct stat st {};
  probe("stat", "files", EACCES, "", outcome(stat("/etc/passwd", &st)));
  // AT_EMPTY_PATH with a path still looks the path up: only an empty one is fstat.
  probe("stat-empty-path-flag", "files", EACCES, "",
        outcome(sys(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>("/etc/passwd"),
                    reinterpret_cast<long>(&st), AT_EMPTY_PATH)));
  char statxBuffer[512];
  probe("statx", "files", EACCES, "",
        outcome(sys(SYS_statx, AT_FDCWD, reinterpret_cast<long>("/etc/passwd"), 0, 0x7ff,
                    reinterpret_cast<long>(statxBuffer))));
  probe("relative-open", "files", EACCES, "", closing(open("anything", O_RDONLY)));

  // What a worker needs.
  probe("fstat", "needed", 0, "", outcome(fstat(STDERR_FILENO, &st)));
  probe("kill-self", "needed", 0, "", outcome(kill(getpid(), 0)));
  probe("prlimit-self", "needed", 0, "",
        outcome(sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&limit))));
  int threadRan = 0;
  int threadError = 0;
  try {
    std::thread([&] { threadRan = 1; }).join();
  } catch (const std::system_error& e) {
    threadError = e.code().value();
  }
  probe("thread", "needed", 0, "", threadRan == 1 ? 0 : (threadError ? threadError : EINVAL));
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  probe("mprotect-exec", "needed", 0, "",
        page == MAP_FAILED ? errno : outcome(mprotect(page, 4096, PROT_READ | PROT_EXEC)));
  if (page != MAP_FAILED) munmap(page, 4096);
  probe("not-dumpable", "needed", 0, "", prctl(PR_GET_DUMPABLE) == 0 ? 0 : EINVAL);
  rlimit core{};
  getrlimit(RLIMIT_CORE, &core);
  probe("no-core-dumps", "needed", 0, "", core.rlim_cur == 0 ? 0 : EINVAL);
  probe("not-root", "needed", 0, "", geteuid() != 0 ? 0 : EINVAL);
  return out;
}

std::string describeProbe(const SandboxProbe& p) {
  auto name = [](int e) { return e == 0 ? std::string("ok") : std::string(strerrorname_np(e)); };
  return "{\"probe\":\"" + p.name + "\",\"family\":\"" + p.family + "\",\"expected\":\"" +
         name(p.expected) + "\",\"got\":\"" + name(p.got) + "\",\"held\":" +
         (p.held() ? "true" : "false") + "}";
}

}  // namespace isolane

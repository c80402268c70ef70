#include "worker/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

namespace isolane {
namespace {

// The allowlist: what node, V8 and the engine call once the worker runs, found by tracing
// workers under every test of the suite (strace -f) and by the refusals the handler logs. Anything
// not named here is refused. Names libseccomp does not know on this architecture are skipped.
const char* const kAllowed[] = {
    // memory (V8's heap and JIT code need mprotect to make pages executable)
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "mlock",
    "munlock", "pkey_alloc", "pkey_free", "pkey_mprotect", "membarrier",
    // threads, waiting, time
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
    "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "getpriority", "nanosleep",
    "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time", "times",
    "getrusage", "exit", "exit_group", "restart_syscall",
    // signals of its own (rt_sigreturn ends every handler, the sandbox's own included)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
    "rt_sigtimedwait", "sigaltstack",
    // its descriptors: the master's socket, its status page, pipes and event descriptors node and
    // libuv made, its output
    "read", "readv", "pread64", "preadv", "preadv2", "write", "writev", "pwrite64", "pwritev",
    "pwritev2", "close", "close_range", "dup", "dup2", "dup3", "lseek", "fstat", "fstatfs",
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "pipe", "pipe2",
    "timerfd_create", "timerfd_settime", "timerfd_gettime", "shutdown", "getsockopt",
    "getsockname", "getpeername", "fsync", "fdatasync", "fadvise64",
    // facts about itself and the machine
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "getgroups", "getpgrp", "getcwd", "uname", "sysinfo", "getcpu", "getrandom",
    "capget", "getrlimit", "arch_prctl", nullptr};

// Refused with ENOSYS rather than EPERM, and without a log line: callers that find them missing
// fall back to what is allowed (glibc's pthread_create to clone, libuv to epoll).
const char* const kMissing[] = {"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
                                nullptr};

// Looking at the filesystem: refused with EACCES, and without a log line. The libraries in the
// process probe files as they go (glibc reads /sys/devices/system/cpu/online each time V8 asks
// how many cores there are, and /proc/sys/vm/overcommit_memory once; ICU looks for the time zone
// file) and fall back to what they can learn otherwise; a line per probe would bury the log. A
// worker opens nothing: the master hands it every module as bytes.
const char* const kQuietlyRefused[] = {"open",     "openat",     "openat2",  "stat",
                                       "lstat",    "access",     "faccessat", "faccessat2",
                                       "readlink", "readlinkat", "getdents", "getdents64",
                                       nullptr};

// Refused outright, whatever the allowlist: each named so that the log line and the tests (and
// the README) can say so. The allowlist already refuses them; they are listed to be named.
const char* const kRefused[] = {
    // network
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    // new programs and processes, other processes' memory, descriptors and signals
    "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "tkill", "kcmp", "process_madvise", "process_mrelease", "migrate_pages", "move_pages",
    "ioprio_set", "setpgid", "setsid",
    // privileges, namespaces, the kernel
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "init_module",
    "finit_module", "delete_module", "kexec_load", "bpf", "perf_event_open", "keyctl", "add_key",
    "request_key", "userfaultfd", "reboot", "swapon", "swapoff", "acct", "quotactl", "seccomp",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "capset", "personality", "chdir", "fchdir",
    // the filesystem: the master hands a worker every module as bytes, so it opens nothing
    // (open and its kin are refused quietly: kQuietlyRefused)
    "creat", "mknod", "mknodat", "link", "linkat", "symlink",
    "symlinkat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
    "rmdir", "truncate", "ftruncate", "chmod", "fchmod", "fchmodat", "chown", "fchown",
    "fchownat", "lchown", "utimes", "utimensat", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "memfd_create", nullptr};

// Filled before the filter is loaded: the SIGSYS handler may not allocate or look anything up.
struct Named {
  int nr;
  const char* name;
};
Named gNames[512];
int gNameCount = 0;

void remember(int nr, const char* name) {
  for (int i = 0; i < gNameCount; ++i) {
    if (gNames[i].nr == nr) return;
  }
  if (gNameCount < static_cast<int>(sizeof gNames / sizeof gNames[0])) {
    gNames[gNameCount++] = Named{nr, name};
  }
}

#if defined(__x86_64__)
#define ISOLANE_SYSCALL_ARG(uc, i)                                                         \
  ((i) == 0 ? (uc)->uc_mcontext.gregs[REG_RDI]                                             \
   : (i) == 1 ? (uc)->uc_mcontext.gregs[REG_RSI]                                           \
   : (i) == 2 ? (uc)->uc_mcontext.gregs[REG_RDX]                                           \
              : (uc)->uc_mcontext.gregs[REG_R10])
#define ISOLANE_SYSCALL_RESULT(uc) ((uc)->uc_mcontext.gregs[REG_RAX])
#elif defined(__aarch64__)
#define ISOLANE_SYSCALL_ARG(uc, i) ((uc)->uc_mcontext.regs[i])
#define ISOLANE_SYSCALL_RESULT(uc) ((uc)->uc_mcontext.regs[0])
#endif

// newfstatat(fd, "", buf, AT_EMPTY_PATH), glibc's fstat, done as fstat(fd, buf), which looks
// nothing up; with a path, refused (EACCES, quietly, as the other file lookups). True when the
// call was newfstatat. The path is read here, in the worker's own memory: a worker that lies
// about it only reaches the fstat of one of its own descriptors.
bool emulateFstat(int nr, void* context) {
#if defined(__x86_64__) || defined(__aarch64__)
  if (nr != SYS_newfstatat) return false;
  auto* uc = static_cast<ucontext_t*>(context);
  auto fd = static_cast<long>(ISOLANE_SYSCALL_ARG(uc, 0));
  const auto* path = reinterpret_cast<const char*>(ISOLANE_SYSCALL_ARG(uc, 1));
  auto buf = static_cast<long>(ISOLANE_SYSCALL_ARG(uc, 2));
  auto flags = static_cast<long>(ISOLANE_SYSCALL_ARG(uc, 3));
  long result = -EACCES;
  if ((flags & AT_EMPTY_PATH) && path != nullptr && path[0] == '\0') {
    int saved = errno;
    long rc = syscall(SYS_fstat, fd, buf);
    result = rc < 0 ? -errno : rc;
    errno = saved;
  }
  ISOLANE_SYSCALL_RESULT(uc) =
      static_cast<std::remove_reference_t<decltype(ISOLANE_SYSCALL_RESULT(uc))>>(result);
  return true;
#else
  (void)nr;
  (void)context;
  return false;
#endif
}

// A refused call: one log line naming it, and EPERM for the caller.
void onRefused(int, siginfo_t* info, void* context) {
  int nr = info->si_syscall;
  if (emulateFstat(nr, context)) return;
  const char* name = "unknown";
  for (int i = 0; i < gNameCount; ++i) {
    if (gNames[i].nr == nr) name = gNames[i].name;
  }
  char line[256];
  int n = std::snprintf(line, sizeof line,
                        "{\"level\":\"error\",\"msg\":\"the worker sandbox refused a system "
                        "call\",\"syscall\":\"%s\",\"nr\":%d,\"pid\":%d}\n",
                        name, nr, static_cast<int>(getpid()));
  if (n > 0) {
    ssize_t ignored = ::write(STDERR_FILENO, line, static_cast<std::size_t>(n));
    (void)ignored;
  }
#if defined(__x86_64__)
  static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  static_cast<ucontext_t*>(context)->uc_mcontext.regs[0] = static_cast<unsigned long>(-EPERM);
#else
  (void)context;
#endif
}

#if defined(__x86_64__) || defined(__aarch64__)
constexpr std::uint32_t kRefuse = SCMP_ACT_TRAP;
#else
constexpr std::uint32_t kRefuse = SCMP_ACT_ERRNO(EPERM);  // no log line: no known register layout
#endif

// Adds `action` for the call `name` (when `count` conditions are given, only when they all hold).
Status rule(scmp_filter_ctx ctx, std::uint32_t action, const char* name, unsigned count = 0,
            const scmp_arg_cmp* args = nullptr) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return Status::success();  // not on this architecture
  remember(nr, name);
  int rc = count ? seccomp_rule_add_array(ctx, action, nr, count, args)
                 : seccomp_rule_add(ctx, action, nr, 0);
  if (rc < 0) return Error{std::string("seccomp rule for ") + name + ": " + std::strerror(-rc)};
  return Status::success();
}

Status allowWhen(scmp_filter_ctx ctx, const char* name, std::initializer_list<scmp_arg_cmp> args) {
  return rule(ctx, SCMP_ACT_ALLOW, name, static_cast<unsigned>(args.size()), args.begin());
}

// The calls allowed only with some arguments: threads but no processes, signals and limits only
// for itself, the descriptor and terminal requests node makes.
Status addConditionalRules(scmp_filter_ctx ctx) {
  // clone: a thread of this process (CLONE_THREAD), never a process or a namespace.
  const scmp_datum_t kCloneMask = CLONE_THREAD | CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID |
                                  CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP |
                                  CLONE_PARENT | CLONE_PIDFD | CLONE_PTRACE;
  if (Status s = allowWhen(ctx, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneMask, CLONE_THREAD)});
      !s) {
    return s;
  }
  // Signals, limits, scheduling: only itself (pid 0 means the caller for these).
  auto self = static_cast<scmp_datum_t>(getpid());
  for (const char* name : {"kill", "tgkill"}) {
    if (Status s = allowWhen(ctx, name, {SCMP_A0(SCMP_CMP_EQ, self)}); !s) return s;
  }
  for (const char* name : {"prlimit64", "sched_setaffinity", "sched_setscheduler",
                           "sched_setparam", "sched_getattr", "sched_setattr"}) {
    if (Status s = allowWhen(ctx, name, {SCMP_A0(SCMP_CMP_EQ, 0)}); !s) return s;
    if (Status s = allowWhen(ctx, name, {SCMP_A0(SCMP_CMP_EQ, self)}); !s) return s;
  }
  // setpriority(PRIO_PROCESS, 0 or a thread of its own): V8 lowers its helper threads. A thread
  // id cannot be told from another process's here, so only 0 (the calling thread).
  if (Status s = allowWhen(ctx, "setpriority",
                           {SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS), SCMP_A1(SCMP_CMP_EQ, 0)});
      !s) {
    return s;
  }
  // prctl: naming its threads and its memory, reading its own state. Never PR_SET_DUMPABLE (it
  // made itself not dumpable), PR_SET_PTRACER, PR_SET_SECCOMP or PR_SET_NO_NEW_PRIVS's undoing.
  for (int option : {PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_VMA, PR_GET_SECCOMP,
                     PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ, PR_GET_TIMERSLACK}) {
    if (Status s = allowWhen(ctx, "prctl", {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(option))});
        !s) {
      return s;
    }
  }
  // glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH), which a filter cannot tell from a look
  // at any path (it sees the path's address, not its text): trapped, and done by the handler as
  // fstat when the path is empty (onTrapped). statx is libuv's, which the worker does not use.
  // (newfstatat has no rule: the default action, the trap, is its.)
  if (Status s = rule(ctx, SCMP_ACT_ERRNO(EACCES), "statx"); !s) return s;
  // fcntl: descriptor and status flags, duplicates, pipe size and seals. Never F_SETOWN or
  // F_SETSIG (the kernel would signal a process of the worker's choosing, a sibling worker or the
  // master, whenever a descriptor is ready), nor O_ASYNC, which arms that signal.
  for (int cmd : {F_GETFD, F_SETFD, F_GETFL, F_DUPFD, F_DUPFD_CLOEXEC, F_GETPIPE_SZ, F_GET_SEALS}) {
    if (Status s = allowWhen(ctx, "fcntl", {SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd))});
        !s) {
      return s;
    }
  }
  if (Status s = allowWhen(ctx, "fcntl",
                           {SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(F_SETFL)),
                            SCMP_A2(SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(O_ASYNC), 0)});
      !s) {
    return s;
  }
  // Messages on the descriptors it has, never out of band (MSG_OOB on a Unix socket reaches
  // kernel code that has been exploited from other sandboxes).
  for (auto [name, flags] : {std::pair{"sendto", 3}, std::pair{"recvfrom", 3},
                             std::pair{"sendmsg", 2}, std::pair{"recvmsg", 2}}) {
    scmp_arg_cmp inBand = {static_cast<unsigned>(flags), SCMP_CMP_MASKED_EQ,
                           static_cast<scmp_datum_t>(MSG_OOB), 0};
    if (Status s = rule(ctx, SCMP_ACT_ALLOW, name, 1, &inBand); !s) return s;
  }
  // ioctl: non-blocking mode, close-on-exec, bytes waiting, and whether its output is a terminal.
  // Never TIOCSTI (keystrokes into a terminal the master's output may be) or any other.
  for (unsigned long request : {FIONBIO, FIOCLEX, FIONCLEX, FIONREAD, TCGETS, TIOCGWINSZ}) {
    if (Status s = allowWhen(ctx, "ioctl",
                             {SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(request))});
        !s) {
      return s;
    }
  }
  return Status::success();
}

Status installFilter() {
  struct sigaction sa {};
  sa.sa_sigaction = &onRefused;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return Error{"cannot install the SIGSYS handler"};

  scmp_filter_ctx ctx = seccomp_init(kRefuse);
  if (!ctx) return Error{"seccomp_init failed"};
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  // Every thread node already runs gets the filter too; the filter sets no_new_privs.
  if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) < 0 ||
      seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) < 0) {
    return Error{"seccomp attributes refused"};
  }
  for (const char* const* name = kAllowed; *name; ++name) {
    if (Status s = rule(ctx, SCMP_ACT_ALLOW, *name); !s) return s;
  }
  for (const char* const* name = kMissing; *name; ++name) {
    if (Status s = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), *name); !s) return s;
  }
  for (const char* const* name = kQuietlyRefused; *name; ++name) {
    if (Status s = rule(ctx, SCMP_ACT_ERRNO(EACCES), *name); !s) return s;
  }
  for (const char* const* name = kRefused; *name; ++name) {
    int nr = seccomp_syscall_resolve_name(*name);
    if (nr != __NR_SCMP_ERROR) remember(nr, *name);  // refused by default: named for the log
  }
  if (Status s = addConditionalRules(ctx); !s) return s;
  // Every other call the kernel has is refused: named for the log line where libseccomp knows it.
  for (int nr = 0; nr < 512; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name) remember(nr, name);  // kept for the life of the process: the handler reads it
  }
  int rc = seccomp_load(ctx);
  if (rc < 0) return Error{std::string("seccomp_load: ") + std::strerror(-rc)};
  return Status::success();
}

}  // namespace

const char* const* sandboxRefusedCalls() { return kRefused; }
const char* const* sandboxQuietlyRefusedCalls() { return kQuietlyRefused; }

Status enterSandbox(const SandboxOptions& options) {
  // A working directory nothing can be found or made in: a fresh one, removed at once.
  if (!options.emptyDir.empty()) {
    std::string tmpl = options.emptyDir + "/isolane-worker-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      return Error{"cannot make an empty directory in " + options.emptyDir};
    if (chdir(tmpl.c_str()) != 0) return Error{"cannot enter " + tmpl};
    rmdir(tmpl.c_str());
  }
  if (options.dropPrivileges && geteuid() == 0) {
    constexpr uid_t kNobody = 65534;
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) {
      return Error{std::string("cannot drop root privileges: ") + std::strerror(errno)};
    }
  }
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_cur, options.maxDescriptors);
    files.rlim_max = std::min<rlim_t>(files.rlim_max, options.maxDescriptors);
    setrlimit(RLIMIT_NOFILE, &files);
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return installFilter();
}

}  // namespace isolane

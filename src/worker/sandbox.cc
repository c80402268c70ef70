#include "worker/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace isolane {
namespace {

// Refused outright. Names libseccomp does not know on this architecture are skipped.
const char* const kRefused[] = {
    // network
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    // new programs, other processes' memory, privileges, namespaces
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
    "pivot_root", "chroot", "unshare", "setns", "init_module", "finit_module", "delete_module",
    "kexec_load", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "tkill",
    // the filesystem, beyond reading
    "creat", "openat2", "mknod", "mknodat", "link", "linkat", "symlink", "symlinkat", "unlink",
    "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "truncate", "chmod",
    "fchmod", "fchmodat", "chown", "fchown", "fchownat", "lchown", "utimes", "utimensat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", nullptr};

// Filled before the filter is loaded: the SIGSYS handler may not allocate or look anything up.
struct Named {
  int nr;
  const char* name;
};
Named gNames[128];
int gNameCount = 0;

void remember(int nr, const char* name) {
  if (gNameCount < static_cast<int>(sizeof gNames / sizeof gNames[0])) {
    gNames[gNameCount++] = Named{nr, name};
  }
}

// A refused call: one log line naming it, and EPERM for the caller.
void onRefused(int, siginfo_t* info, void* context) {
  int nr = info->si_syscall;
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

Status refuse(scmp_filter_ctx ctx, const char* name, unsigned count = 0,
              const scmp_arg_cmp* args = nullptr) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return Status::success();  // not on this architecture
  remember(nr, name);
#if defined(__x86_64__) || defined(__aarch64__)
  const std::uint32_t action = SCMP_ACT_TRAP;
#else
  const std::uint32_t action = SCMP_ACT_ERRNO(EPERM);  // no log line: no known register layout
#endif
  int rc = count ? seccomp_rule_add_array(ctx, action, nr, count, args)
                 : seccomp_rule_add(ctx, action, nr, 0);
  if (rc < 0) return Error{std::string("seccomp rule for ") + name + ": " + std::strerror(-rc)};
  return Status::success();
}

Status installFilter() {
  struct sigaction sa {};
  sa.sa_sigaction = &onRefused;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return Error{"cannot install the SIGSYS handler"};

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
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
  for (const char* const* name = kRefused; *name; ++name) {
    if (Status s = refuse(ctx, *name); !s) return s;
  }
  // Opening for writing, creating or truncating: open's flags are its second argument, openat's
  // its third.
  for (unsigned flag :
       {unsigned(O_WRONLY), unsigned(O_RDWR), unsigned(O_CREAT), unsigned(O_TRUNC)}) {
    scmp_arg_cmp open[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag)};
    scmp_arg_cmp openat[] = {SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag)};
    if (Status s = refuse(ctx, "open", 1, open); !s) return s;
    if (Status s = refuse(ctx, "openat", 1, openat); !s) return s;
  }
  // Signals: only to itself (node raises its own; the master and its peers are out of reach).
  auto self = static_cast<scmp_datum_t>(getpid());
  scmp_arg_cmp notSelf[] = {SCMP_A0(SCMP_CMP_NE, self)};
  if (Status s = refuse(ctx, "kill", 1, notSelf); !s) return s;
  if (Status s = refuse(ctx, "tgkill", 1, notSelf); !s) return s;
  int rc = seccomp_load(ctx);
  if (rc < 0) return Error{std::string("seccomp_load: ") + std::strerror(-rc)};
  return Status::success();
}

}  // namespace

const char* const* sandboxRefusedCalls() { return kRefused; }

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

#pragma once
// The worker sandbox: what a worker process gives up once it has started, as defence in depth
// behind V8 (an isolate alone is not a sandbox, and node's V8 runs without V8's own sandbox). The
// worker is assumed compromised (DESIGN rule 14). After enterSandbox():
// - a seccomp allowlist: only the system calls node, V8 and the engine make while they run
//   (sandbox.cc: memory, threads, time, its own signals, reading and writing the descriptors it
//   has). Everything else is refused, among them: the network (socket, connect, bind, listen,
//   accept); new programs and processes (execve, fork, vfork, clone without CLONE_THREAD, clone
//   with a namespace flag; clone3 and io_uring say ENOSYS, so glibc and libuv fall back);
//   reaching any other process (ptrace, process_vm_*, pidfd_*, kill, tgkill, prlimit64,
//   sched_setaffinity other than at itself, rt_sigqueueinfo, kcmp); namespaces, mounts, module
//   loading, bpf, keyctl, seccomp; every call that makes, removes, renames or re-permissions a
//   file; ioctl but for FIONBIO, FIOCLEX, FIONCLEX, FIONREAD, TCGETS, TIOCGWINSZ (never TIOCSTI);
//   prctl but for naming threads and reading its own state;
// - no file access: open, openat, stat and readlink by path fail with EACCES (the master hands
//   the worker every module as bytes; what the worker itself reads, it reads before this);
// - not dumpable (no ptrace attach, no /proc/PID/mem for its peers), no core dumps, a descriptor
//   limit, its working directory an empty directory, and, started as root, the uid and gid of
//   `nobody`.
// A refused call fails with EPERM and writes one log line naming it (SIGSYS handler), except the
// file lookups, which fail with EACCES quietly (libraries probe files and fall back). The filter
// (Debian's libseccomp) is synchronized to every thread that exists (node's) and inherited by
// every thread made later.
//
// Thread rule: call once, from any thread of the process.

#include <string>

#include "util/result.h"

namespace isolane {

struct SandboxOptions {
  std::string emptyDir;  // becomes the working directory; empty: "/" is not used, kept
  unsigned long maxDescriptors = 1024;
  bool dropPrivileges = true;  // when running as root: become nobody
};

Status enterSandbox(const SandboxOptions& options);

// The system calls enterSandbox refuses with a log line, and those it refuses quietly, by name
// (for tests and the README; every call not allowed is refused, these are named).
const char* const* sandboxRefusedCalls();
const char* const* sandboxQuietlyRefusedCalls();

}  // namespace isolane

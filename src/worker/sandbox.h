#pragma once
// The worker sandbox: what a worker process gives up once it has started, as defence in depth
// behind V8 (an isolate alone is not a sandbox). After enterSandbox():
// - no network: socket, connect, bind, listen, accept are refused (its fetches go through the
//   master, worker/wire_egress.h);
// - no new programs or privileges: execve, execveat, ptrace, process_vm_*, mount and namespace
//   calls, module loading, bpf, keyctl are refused; PR_SET_NO_NEW_PRIVS is set;
// - no writes to the filesystem: opening a file for writing or creating, and every call that
//   makes, removes, renames or re-permissions a file is refused (it reads its apps' modules);
// - no signals to other processes: kill and tgkill are allowed only at itself;
// - not dumpable (no ptrace attach, no /proc/PID/mem for its peers), no core dumps, a descriptor
//   limit, its working directory an empty directory, and, started as root, the uid and gid of
//   `nobody`.
// A refused call fails with EPERM and writes one log line naming it (SIGSYS handler); the
// worker goes on. The seccomp filter (Debian's libseccomp) is synchronized to every thread that
// exists (node's) and inherited by every thread made later.
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

// The system calls enterSandbox refuses, by name (for tests and the README).
const char* const* sandboxRefusedCalls();

}  // namespace isolane

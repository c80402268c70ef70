#pragma once
// The worker sandbox, checked from inside: each thing a worker taken over by an app would try
// (reach the network, start a program or a process, make a namespace, reach another process by
// signal, pidfd, trace, limits or its /proc files, open or look at a file, use io_uring, change
// what the sandbox set), and each thing a worker needs (threads, executable memory, signalling
// itself), tried in this process, with the error each must get. `isolane sandbox-check` runs it
// in a real worker, spawned as `serve` spawns one (so an operator can see the sandbox hold on
// their kernel); tests/sandbox_test.cc runs it in a sandboxed child.
//
// Thread rule: any thread, in a process that has entered the sandbox (the probes that must
// succeed would fail outside it only where noted).

#include <sys/types.h>

#include <string>
#include <vector>

namespace isolane {

struct SandboxProbe {
  std::string name;     // "socket", "kill-master", "open-read", ...
  std::string family;   // "network", "processes", "other processes", "files", "kernel", "needed"
  int expected = 0;     // the errno it must fail with; 0: it must succeed
  int got = 0;          // what it did: 0 (succeeded) or its errno
  std::string syscall;  // the call a refusal's log line names ("" for quiet refusals)
  bool held() const { return got == expected; }
};

// Runs every probe; `other` stands for another process of the server (the master: a worker's
// parent).
std::vector<SandboxProbe> probeSandbox(pid_t other);

// One probe as a JSON object (for `isolane worker --probe-sandbox`'s output).
std::string describeProbe(const SandboxProbe& probe);

}  // namespace isolane

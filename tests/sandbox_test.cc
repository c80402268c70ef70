// The worker sandbox (worker/sandbox.h), entered by a child process that then runs every probe of
// worker/sandbox_probe.h: each thing a compromised worker would try (reach the network, start
// programs or processes, make namespaces, reach its parent, standing for the master and the
// other workers, by signal, pidfd, ptrace, limits or /proc, open files, use io_uring), with the
// error each must get (EPERM and a log line naming the call; EACCES and no line for file
// lookups; ENOSYS for what callers fall back from), and what a worker needs (threads, signalling
// itself, its own limits, executable memory). Inside a real worker, the same probes run in
// Cli.SandboxCheckProbesARealWorker (isolane sandbox-check).

#include "worker/sandbox.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "worker/sandbox_probe.h"

namespace isolane {
namespace {

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// The probes' results (one line each: name, expected errno, errno got, logged call) and the
// sandbox's log lines, from a sandboxed child.
struct Outcome {
  std::vector<SandboxProbe> probes;
  std::string log;
};

Outcome runProbes() {
  int out[2], err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    if (Status s = enterSandbox(SandboxOptions{"/tmp", 64, true}); !s) _exit(3);
    for (const SandboxProbe& p : probeSandbox(parent)) {
      std::string line = p.name + " " + p.family + " " + std::to_string(p.expected) + " " +
                         std::to_string(p.got) + " " + (p.syscall.empty() ? "-" : p.syscall) +
                         "\n";
      if (write(out[1], line.data(), line.size()) < 0) _exit(4);
    }
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  Outcome outcome;
  std::string text = readAll(out[0]);
  outcome.log = readAll(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << outcome.log;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t eol = text.find('\n', at);
    std::istringstream line(text.substr(at, eol - at));
    SandboxProbe p;
    line >> p.name >> p.family;
    if (p.family == "other") {  // "other processes"
      std::string rest;
      line >> rest;
      p.family += " " + rest;
    }
    line >> p.expected >> p.got >> p.syscall;
    if (p.syscall == "-") p.syscall.clear();
    outcome.probes.push_back(p);
    at = eol + 1;
  }
  return outcome;
}

class Sandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { outcome_ = new Outcome(runProbes()); }
  static void TearDownTestSuite() { delete outcome_; }
  static Outcome* outcome_;
};
Outcome* Sandbox::outcome_ = nullptr;

TEST_F(Sandbox, EveryProbeGetsItsError) {
  ASSERT_GT(outcome_->probes.size(), 40u);
  for (const SandboxProbe& p : outcome_->probes) {
    EXPECT_EQ(p.got, p.expected) << p.name << " (" << p.family << "): expected "
                                 << (p.expected ? strerrorname_np(p.expected) : "success")
                                 << ", got " << (p.got ? strerrorname_np(p.got) : "success");
  }
}

TEST_F(Sandbox, EveryLoudRefusalLogsALineNamingTheCall) {
  for (const SandboxProbe& p : outcome_->probes) {
    if (p.syscall.empty()) continue;
    EXPECT_NE(outcome_->log.find("\"syscall\":\"" + p.syscall + "\""), std::string::npos)
        << p.name << ": no line for " << p.syscall << "\n"
        << outcome_->log;
  }
}

TEST_F(Sandbox, FileLookupsAreRefusedQuietly) {
  EXPECT_EQ(outcome_->log.find("\"syscall\":\"openat\""), std::string::npos) << outcome_->log;
  EXPECT_EQ(outcome_->log.find("\"syscall\":\"newfstatat\""), std::string::npos) << outcome_->log;
}

}  // namespace
}  // namespace isolane

#include "worker/worker_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "ipc/frame_codec.h"
#include "ipc/frame_outbox.h"
#include "ipc/status_page.h"
#include "ipc/stream_blocks.h"
#include "obs/console_log.h"
#include "obs/log.h"
#include "runtime/engine_key.h"
#include "web/runtime_snapshot.h"
#include "worker/master_inbox.h"
#include "worker/sandbox_probe.h"
#include "worker/wire_egress.h"

namespace isolane {
namespace {

// /proc/self/statm, opened before the sandbox refuses every open; read again for each heartbeat.
int gStatm = -1;

void openResidentCounter() { gStatm = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC); }

std::uint64_t residentBytes() {
  char text[128];
  ssize_t n = gStatm >= 0 ? ::pread(gStatm, text, sizeof text - 1, 0) : -1;
  if (n <= 0) return 0;
  text[n] = '\0';
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(text, "%llu %llu", &size, &resident) != 2) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::uint64_t cpuTimeMicros() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto us = [](const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000 + static_cast<std::uint64_t>(t.tv_usec);
  };
  return us(usage.ru_utime) + us(usage.ru_stime);
}

}  // namespace

int runWorkerProcess(const WorkerProcessOptions& options) {
  signal(SIGPIPE, SIG_IGN);
  // Mapped before the sandbox closes the door: where the executor threads publish what they do.
  StatusPage* page = nullptr;
  if (options.statusFd >= 0) {
    auto mapped = mapStatusPage(options.statusFd);
    if (!mapped) {
      logEvent(Level::kError, "cannot map the status page; exiting", {{"error", mapped.error()}});
      return 4;
    }
    page = mapped.value();
  }
  // And the memory streamed pieces cross in, both ways. The master that passed it sends pieces of
  // request bodies in it: a worker that cannot map it could not read them.
  std::unique_ptr<StreamBlocks> blocks;
  if (options.blocksFd >= 0) {
    auto mapped = StreamBlocks::map(options.blocksFd);
    if (!mapped) {
      logEvent(Level::kError, "cannot map the shared blocks; exiting", {{"error", mapped.error()}});
      return 4;
    }
    blocks = std::move(mapped.value());
  }
  // What the worker reads from files, read before the sandbox refuses every open: node's command
  // line (the engine's key), the runtime's startup snapshot (mapped), its own memory figures.
  engineKey();
  runtimeSnapshot();
  openResidentCounter();
  tzset();  // the C library's time zone (TZ's file), for log timestamps
  // Before any app's code is read: what the worker may do from here on (worker/sandbox.h).
  if (options.sandbox) {
    if (Status s = enterSandbox(options.sandboxOptions); !s) {
      logEvent(Level::kError, "cannot enter the worker sandbox; exiting", {{"error", s.error()}});
      return 4;
    }
  }
  if (options.probeSandbox) {
    bool held = options.sandbox;
    for (const SandboxProbe& probe : probeSandbox(getppid())) {
      std::string line = describeProbe(probe) + "\n";
      ssize_t ignored = ::write(STDOUT_FILENO, line.data(), line.size());
      (void)ignored;
      held = held && probe.held();
    }
    return held ? 0 : 1;
  }
  const std::size_t max = options.maxFrameBytes ? options.maxFrameBytes : kDefaultMaxFrameBytes;
  // The master is gone or no longer reads: nothing left to serve.
  FrameOutbox out(options.fd, [](const std::string& why) {
    logEvent(Level::kError, "cannot write to the master; exiting", {{"reason", why}});
    _exit(0);
  });
  out.send(encodeHello(static_cast<std::int32_t>(getpid()), max, engineKey()));

  ConsoleLog console;
  // Outbound fetches go to the master, which performs them outside this sandbox.
  WireEgressHub egress(out, max);
  ExecutorOptions executorOptions = options.executor;
  executorOptions.egress = [&egress](Doorbell& wake) { return egress.channel(wake); };
  // The master sees only whole workers wedged: a request this process put behind one thread's
  // long turn is moved to another thread here.
  ExecutorSet executor(options.threads, executorOptions, console, SystemClock::instance(), page,
                       options.reserveThread, /*moveQueued=*/true);
  auto figures = [](wire::HeartbeatAckT& ack) {
    ack.rss_bytes = residentBytes();
    ack.cpu_time_us = cpuTimeMicros();
  };
  // Each executor thread reads a socket of its own, between its passes (the master picks the
  // thread, and reads the status page, which tells it that a heartbeat answered late waited
  // behind a pass): the first thread `fd`, which also carries loads, heartbeats and fetch events,
  // the others `threadFds`. A worker with one socket for several threads (started by hand), one
  // with no page, or one with a reserve thread, has this thread read it for them: the reserve's
  // rule (ExecutorSet::pick) decides for each request as it arrives, which it could not do for a
  // request left in the socket of a thread inside a long turn. (A request's wait counts from the
  // master's send either way: wire.fbs Request.sent_ns.)
  if (!options.threadFds.empty() &&
      (options.threadFds.size() + 1 != executor.size() || executor.hasReserve())) {
    // Requests the master puts on a socket no thread reads would wait there for ever.
    logEvent(Level::kError, "the thread sockets do not match the executor threads; exiting",
             {{"sockets", options.threadFds.size() + 1}, {"threads", executor.size()}});
    executor.stop();
    return 4;
  }
  const bool perThread = !options.threadFds.empty() ||
                         (page != nullptr && !executor.hasReserve() && executor.size() == 1);
  MasterInbox inbox(
      options.fd, {out, executor, egress, console, max, figures, blocks.get(), perThread ? 0 : -1});
  std::vector<std::unique_ptr<FrameOutbox>> threadOuts;
  std::vector<std::unique_ptr<MasterInbox>> threadInboxes;
  if (perThread) {
    for (std::size_t i = 1; i < executor.size(); ++i) {
      int fd = options.threadFds[i - 1];
      threadOuts.push_back(std::make_unique<FrameOutbox>(fd, [](const std::string& why) {
        logEvent(Level::kError, "cannot write to the master; exiting", {{"reason", why}});
        _exit(0);
      }));
      threadInboxes.push_back(std::make_unique<MasterInbox>(
          fd, MasterInbox::Parts{*threadOuts.back(), executor, egress, console, max, figures,
                                 blocks.get(), static_cast<int>(i)}));
      executor.attachInbox(i, threadInboxes.back().get());
    }
    executor.attachInbox(0, &inbox);
  }
  int status = perThread ? inbox.waitForEnd() : inbox.readUntilDone();
  executor.stop();  // answers what still runs with SHUTTING_DOWN (before the inboxes go)
  return status;
}

}  // namespace isolane

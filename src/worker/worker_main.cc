#include "worker/worker_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "ipc/exec_codec.h"
#include "ipc/fetch_codec.h"
#include "ipc/frame_codec.h"
#include "ipc/frame_outbox.h"
#include "ipc/status_page.h"
#include "obs/console_log.h"
#include "obs/log.h"
#include "runtime/engine_key.h"
#include "web/runtime_snapshot.h"
#include "worker/execution_job.h"
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

// A streamed body, as frames: each piece a BodyChunk, then End, or a Failure that makes the master
// cut the response.
class FrameStreamSink final : public StreamSink {
 public:
  FrameStreamSink(FrameOutbox& out, std::uint64_t id, std::size_t max)
      : out_(out), id_(id), max_(max) {}
  void piece(std::string_view bytes) override { out_.send(encodeBodyChunk(id_, bytes, max_)); }
  void end() override { out_.send(encodeEnd(id_, max_)); }
  void abort(FailureKind kind, const std::string& detail) override {
    out_.send(encodeFailure(id_, kind, detail, max_));
  }

 private:
  FrameOutbox& out_;
  const std::uint64_t id_;
  const std::size_t max_;
};

// Head, chunks and end go out in one write: one syscall for a small response, not three. The
// head of a streamed body goes alone; its pieces follow through FrameStreamSink.
void sendResponse(FrameOutbox& out, std::uint64_t id, const AppResponse& r, std::size_t max) {
  if (r.failure == FailureKind::kNone && r.body.size() > kMaxResponseBodyBytes) {
    out.send(encodeFailure(id, FailureKind::kInternal,
                           "response body of " + std::to_string(r.body.size()) +
                               " bytes exceeds the limit of " +
                               std::to_string(kMaxResponseBodyBytes) + " bytes",
                           max));
    return;
  }
  if (r.failure != FailureKind::kNone) {
    out.send(encodeFailure(id, r.failure, r.failureDetail, max));
    return;
  }
  Result<std::string> head = encodeResponseHead(id, r, max);
  if (!head) {
    out.send(encodeFailure(id, FailureKind::kInternal, "response head: " + head.error(), max));
    return;
  }
  if (r.streamed) {
    out.sendBytes(std::move(head.value()));
    return;
  }
  std::string batch = std::move(head.value());
  std::string_view body(r.body);
  for (std::size_t at = 0; at < body.size(); at += kBodyChunkBytes) {
    Result<std::string> chunk = encodeBodyChunk(id, body.substr(at, kBodyChunkBytes), max);
    if (!chunk) {  // cannot happen below the ceiling; never leave the request half-answered
      out.send(encodeFailure(id, FailureKind::kInternal, chunk.error(), max));
      return;
    }
    batch += chunk.value();
    if (batch.size() >= kBodyChunkBytes) {
      out.sendBytes(std::move(batch));
      batch.clear();
    }
  }
  batch += encodeEnd(id, max).value();
  out.sendBytes(std::move(batch), r.bodyHold);  // the body's charge ends once all is written
}

// Code mode: starts the execution an Execute frame carries; its tool calls and its outcome go
// back as frames. What the master sent is checked like anything else that arrives.
void startExecution(ExecutorSet& executor, FrameOutbox& out, const wire::Execute& m,
                    std::size_t max) {
  std::uint64_t id = m.id();
  ExecutionSpec spec = decodeExecute(m);
  auto refuse = [&](ExecErrorCode code, const std::string& message) {
    out.send(encodeExecResult(id, ExecutionOutcome::failed(code, message), max));
  };
  if (auto problem = validateExecutionSpec(spec)) {
    refuse(ExecErrorCode::kInternal, "the execution was refused: " + *problem);
    return;
  }
  // A tool call's frame carries its arguments: they must fit under the ceiling with room left.
  std::uint32_t ceiling = static_cast<std::uint32_t>(max / 2);
  if (spec.payloadLimit == 0 || spec.payloadLimit > ceiling) spec.payloadLimit = ceiling;
  if (spec.resultLimit == 0 || spec.resultLimit > ceiling) spec.resultLimit = ceiling;
  if (spec.consoleLimit > ceiling / 4) spec.consoleLimit = ceiling / 4;
  RequestJob job = makeExecutionJob(
      id, std::move(spec),
      [&out, id, max](std::uint64_t call, const std::string& provider, const std::string& tool,
                      const std::string& args) {
        out.send(encodeToolCall(id, call, provider, tool, args, max));
      },
      [&out, id, max](ExecutionOutcome outcome) {
        out.sendBytes(encodeExecResult(id, outcome, max));
      });
  if (!executor.submit(job)) {
    refuse(ExecErrorCode::kQueueOverflow, "the worker's queue is full");
  }
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
  FrameReader reader(max);
  std::string buffer(std::size_t{64} * 1024, '\0');
  for (;;) {
    ssize_t n = ::read(options.fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the master is gone
    reader.append(buffer.data(), static_cast<std::size_t>(n));
    const wire::Frame* frame = nullptr;
    std::string error;
    for (;;) {
      FrameReader::Next next = reader.next(&frame, &error);
      if (next == FrameReader::Next::kNeedMore) break;
      if (next == FrameReader::Next::kError) {
        logEvent(Level::kError, "bad frame from the master", {{"error", error}});
        return 3;
      }
      switch (frame->message_type()) {
        case wire::Message::LoadApp: {
          AppSpec spec = decodeLoadApp(*frame->message_as_LoadApp());
          AppLoadReport report;
          Status s = executor.loadApp(spec, &report);
          if (report.producedCache.size() > kMaxCodeCacheBytes) report.producedCache.clear();
          Result<std::string> loaded =
              encodeAppLoaded(spec.name, s.ok(), s.ok() ? "" : s.error(), max, report);
          if (!loaded && !report.producedCache.empty()) {  // over the frame ceiling: no cache
            report.producedCache.clear();
            loaded = encodeAppLoaded(spec.name, s.ok(), s.ok() ? "" : s.error(), max, report);
          }
          out.send(loaded);
          break;
        }
        case wire::Message::Request: {
          const wire::Request* m = frame->message_as_Request();
          std::uint64_t id = m->id();
          auto str = [](const flatbuffers::String* s) { return s ? s->str() : std::string(); };
          AppRequest request{str(m->app()), str(m->request_id()),      str(m->method()),
                             str(m->url()), headersFrom(m->headers()), ""};
          if (m->body()) request.body.assign(m->body()->begin(), m->body()->end());
          RequestJob job{std::move(request),
                         [&out, id, max](const AppResponse& r) { sendResponse(out, id, r, max); },
                         id};
          job.sink = std::make_shared<FrameStreamSink>(out, id, max);
          if (m->body_streamed()) {
            job.bodyStreamed = true;
            job.bodyConsumed = [&out, id, max](std::size_t bytes) {
              out.send(encodeBodyCredit(id, static_cast<std::uint32_t>(bytes), max));
            };
          }
          if (!executor.submit(job)) {
            out.send(encodeFailure(id, FailureKind::kOverloaded, "worker queue is full", max));
          }
          break;
        }
        case wire::Message::Heartbeat: {
          Executor::Stats stats = executor.stats();  // over every thread
          wire::HeartbeatAckT ack;
          ack.seq = frame->message_as_Heartbeat()->seq();
          ack.rss_bytes = residentBytes();
          ack.heap_used_bytes = stats.heapUsedBytes;
          ack.heap_limit_bytes = stats.heapLimitBytes;
          ack.in_flight = static_cast<std::uint32_t>(executor.pending());
          ack.executions = stats.executions;
          ack.cpu_time_us = cpuTimeMicros();
          ack.isolates = static_cast<std::uint32_t>(stats.isolates);
          ack.isolates_recycled = stats.recycled;
          ack.console_dropped_lines = console.droppedLines();
          out.send(encodeHeartbeatAck(ack, max));
          break;
        }
        case wire::Message::RequestBody: {
          const wire::RequestBody* m = frame->message_as_RequestBody();
          std::string piece;
          if (m->data()) piece.assign(m->data()->begin(), m->data()->end());
          executor.requestBody(m->id(), std::move(piece), m->end(),
                               m->error() ? m->error()->str() : std::string());
          break;
        }
        case wire::Message::Credit: {
          const wire::Credit* m = frame->message_as_Credit();
          executor.credit(m->id(), m->bytes());
          break;
        }
        case wire::Message::FetchEvent:
          egress.deliver(decodeFetchEvent(*frame->message_as_FetchEvent()));
          break;
        case wire::Message::Execute:
          startExecution(executor, out, *frame->message_as_Execute(), max);
          break;
        case wire::Message::ToolAnswer: {
          const wire::ToolAnswer* m = frame->message_as_ToolAnswer();
          executor.toolAnswer(m->id(), m->call(), m->ok(),
                              m->text() ? m->text()->str() : std::string());
          break;
        }
        case wire::Message::Cancel: {
          const wire::Cancel* m = frame->message_as_Cancel();
          if (m->unstarted_only()) {
            executor.withdraw(m->id());
          } else {
            executor.cancel(m->id());
          }
          break;
        }
        case wire::Message::Shutdown:
          executor.stop();  // answers what still runs with SHUTTING_DOWN
          return 0;
        default:
          logEvent(Level::kError, "unexpected frame from the master",
                   {{"type", wire::EnumNameMessage(frame->message_type())}});
          return 3;
      }
    }
  }
  executor.stop();
  return 0;
}

}  // namespace isolane

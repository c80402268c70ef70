#include "worker/master_inbox.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "ipc/exec_codec.h"
#include "ipc/fetch_codec.h"
#include "ipc/stream_blocks.h"
#include "obs/log.h"
#include "worker/execution_job.h"

namespace isolane {
namespace {

// A streamed body, as frames: each piece a BodyChunk, then End, or a Failure that makes the master
// cut the response. A piece goes in a shared block when one is free (ipc/stream_blocks.h): one
// copy, and a frame of a few dozen bytes; otherwise it is the frame's trailer.
class FrameStreamSink final : public StreamSink {
 public:
  FrameStreamSink(FrameOutbox& out, StreamBlocks* blocks, std::uint64_t id, std::size_t max)
      : out_(out), blocks_(blocks), id_(id), max_(max) {}
  void piece(std::string_view bytes) override {
    if (blocks_ && !bytes.empty() && bytes.size() <= kStreamBlockBytes) {
      if (std::optional<std::uint32_t> block = blocks_->claim()) {
        std::memcpy(blocks_->data(*block), bytes.data(), bytes.size());
        Result<std::string> frame =
            encodeSharedBodyChunk(id_, *block, static_cast<std::uint32_t>(bytes.size()), max_);
        if (frame) return out_.sendBytes(std::move(frame.value()));
        blocks_->unclaim(*block);
      }
    }
    // The trailer is written from where the app's bytes are.
    Result<std::string> head = encodeBodyChunkHead(id_, bytes.size(), max_);
    if (!head) return out_.send(head);
    out_.sendFrame(std::move(head.value()), bytes);
  }
  void end() override { out_.send(encodeEnd(id_, max_)); }
  void abort(FailureKind kind, const std::string& detail) override {
    out_.send(encodeFailure(id_, kind, detail, max_));
  }

 private:
  FrameOutbox& out_;
  StreamBlocks* const blocks_;
  const std::uint64_t id_;
  const std::size_t max_;
};

// A body that fits in one chunk goes whole, in its head's frame. A larger one goes as head, chunks
// and end, in as few writes as the chunks allow. The head of a streamed body goes alone; its pieces
// follow through FrameStreamSink.
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
  if (!r.streamed && r.body.size() <= kBodyChunkBytes) {  // most answers: one frame
    Result<std::string> whole = encodeWholeResponse(id, r, max);
    if (!whole) {
      out.send(encodeFailure(id, FailureKind::kInternal, "response: " + whole.error(), max));
      return;
    }
    out.sendBytes(std::move(whole.value()), r.bodyHold);
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

}  // namespace

MasterInbox::MasterInbox(int fd, Parts parts)
    : fd_(fd), parts_(std::move(parts)), reader_(parts_.maxFrameBytes) {}

MasterInbox::~MasterInbox() {
  {
    std::lock_guard<std::mutex> lock(standInMu_);
    closing_ = true;
    standIn_.store(false);
  }
  standInWake_.notify_one();
  if (standInThread_.joinable()) standInThread_.join();
}

bool MasterInbox::drain() {
  standIn_.store(false);  // the executor thread is between passes: it reads for itself
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return false;
  if (deferredLoad_) {  // the stand-in stopped there: the load, then what came after it
    AppSpec spec = std::move(*deferredLoad_);
    deferredLoad_.reset();
    holding_.store(false);
    loadApp(std::move(spec));
    if (std::optional<int> status = handleFrames(false)) finish(*status);
  }
  if (!ended_) readNow(false);
  return !ended_;
}

MasterInbox::Read MasterInbox::readOnce(bool aside) {
  for (;;) {
    std::span<char> room = reader_.room(kReadBytes);  // read in place: no copy
    ssize_t n = ::recv(fd_, room.data(), room.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {};
    if (n <= 0) return {0, 0};  // the master is gone
    reader_.commit(static_cast<std::size_t>(n));
    return {static_cast<std::size_t>(n), handleFrames(aside)};
  }
}

void MasterInbox::readNow(bool aside) {
  for (std::size_t total = 0; total < kDrainBytes;) {
    if (aside && deferredLoad_) return;
    Read read = readOnce(aside);
    if (read.end) return finish(*read.end);
    if (read.bytes == 0) return;  // nothing more now
    total += read.bytes;
  }
}

int MasterInbox::readUntilDone() {
  for (;;) {
    // Waits without the lock, then reads under it.
    pollfd readable{fd_, POLLIN, 0};
    if (::poll(&readable, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (std::optional<int> end = readOnce(false).end) return *end;
  }
}

void MasterInbox::finish(int status) {
  ended_ = true;
  standIn_.store(false);
  end_.set_value(status);
}

void MasterInbox::busy(Doorbell& wake) {
  std::lock_guard<std::mutex> lock(standInMu_);
  if (closing_ || holding_.load()) return;  // a load waits for the thread: nothing to read
  wake_.store(&wake);
  standIn_.store(true);
  if (!standInThread_.joinable()) standInThread_ = std::thread([this] { standInLoop(); });
  standInWake_.notify_one();
}

void MasterInbox::standInLoop() {
  pthread_setname_np(pthread_self(), "isolane-inbox");
  std::unique_lock<std::mutex> lock(standInMu_);
  for (;;) {
    standInWake_.wait(lock, [this] { return closing_ || standIn_.load(); });
    if (closing_) return;
    lock.unlock();
    // Until the executor thread drains again (or the stand-in meets a load, or the end).
    while (standIn_.load() && !holding_.load()) {
      pollfd readable{fd_, POLLIN, 0};
      if (::poll(&readable, 1, 10) <= 0) continue;
      std::unique_lock<std::mutex> reading(mu_, std::try_to_lock);
      if (!reading) {
        // The executor thread is reading (between turns, or loading an app in one): not for
        // long, or not something the socket's next bytes may overtake.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (!ended_) readNow(/*aside=*/true);
    }
    lock.lock();
  }
}

std::optional<int> MasterInbox::handleFrames(bool aside) {
  for (;;) {
    if (aside && deferredLoad_) return std::nullopt;
    const wire::Frame* frame = nullptr;
    std::string error;
    FrameReader::Next next = reader_.next(&frame, &error);
    if (next == FrameReader::Next::kNeedMore) return std::nullopt;
    if (next == FrameReader::Next::kError) {
      logEvent(Level::kError, "bad frame from the master", {{"error", error}});
      return 3;
    }
    if (aside && frame->message_type() == wire::Message::LoadApp) {
      // A load waits for the thread's isolates: the executor thread does it, and what follows.
      deferredLoad_ = decodeLoadApp(*frame->message_as_LoadApp());
      holding_.store(true);
      standIn_.store(false);
      if (Doorbell* wake = wake_.load()) wake->ring();  // the socket may say nothing more
      return std::nullopt;
    }
    if (std::optional<int> status = handle(*frame, reader_.trailer())) return status;
  }
}

std::optional<int> MasterInbox::handle(const wire::Frame& frame, std::string_view trailer) {
  ExecutorSet& executor = parts_.executor;
  switch (frame.message_type()) {
    case wire::Message::LoadApp:
      loadApp(decodeLoadApp(*frame.message_as_LoadApp()));
      return std::nullopt;
    case wire::Message::Request:
      startRequest(*frame.message_as_Request(), trailer);
      return std::nullopt;
    case wire::Message::Heartbeat:
      answerHeartbeat(*frame.message_as_Heartbeat());
      return std::nullopt;
    case wire::Message::RequestBody: {
      const wire::RequestBody* m = frame.message_as_RequestBody();
      std::string piece(trailer);
      if (m->shared()) {  // the piece is in one of the request blocks (ipc/stream_blocks.h)
        Result<std::string> read = parts_.blocks
                                       ? parts_.blocks->readRequestPiece(m->block(), m->size())
                                       : Result<std::string>(Error{"no shared blocks"});
        if (!read) {
          logEvent(Level::kError, "a request body piece the master named cannot be read",
                   {{"error", read.error()}});
          return 3;
        }
        piece = std::move(read.value());
      }
      executor.requestBody(m->id(), std::move(piece), m->end(),
                           m->error() ? m->error()->str() : std::string());
      return std::nullopt;
    }
    case wire::Message::Credit: {
      const wire::Credit* m = frame.message_as_Credit();
      executor.credit(m->id(), m->bytes());
      return std::nullopt;
    }
    case wire::Message::FetchEvent:
      parts_.egress.deliver(decodeFetchEvent(*frame.message_as_FetchEvent(), trailer));
      return std::nullopt;
    case wire::Message::Execute:
      startExecution(*frame.message_as_Execute());
      return std::nullopt;
    case wire::Message::ToolAnswer: {
      const wire::ToolAnswer* m = frame.message_as_ToolAnswer();
      executor.toolAnswer(m->id(), m->call(), m->ok(),
                          m->text() ? m->text()->str() : std::string());
      return std::nullopt;
    }
    case wire::Message::Cancel: {
      const wire::Cancel* m = frame.message_as_Cancel();
      if (m->unstarted_only()) {
        executor.withdraw(m->id());
      } else {
        executor.cancel(m->id());
      }
      return std::nullopt;
    }
    case wire::Message::Shutdown:
      return 0;  // the caller stops the executors, which answer what still runs SHUTTING_DOWN
    default:
      logEvent(Level::kError, "unexpected frame from the master",
               {{"type", wire::EnumNameMessage(frame.message_type())}});
      return 3;
  }
}

void MasterInbox::loadApp(AppSpec spec) {
  const std::size_t max = parts_.maxFrameBytes;
  // What the thread holds leaves first: a load may wait for the worker's other threads.
  parts_.out.flushHeld();
  AppLoadReport report;
  Status s = parts_.executor.loadApp(spec, &report);
  if (report.producedCache.size() > kMaxCodeCacheBytes) report.producedCache.clear();
  Result<std::string> loaded =
      encodeAppLoaded(spec.name, s.ok(), s.ok() ? "" : s.error(), max, report);
  if (!loaded && !report.producedCache.empty()) {  // over the frame ceiling: no cache
    report.producedCache.clear();
    loaded = encodeAppLoaded(spec.name, s.ok(), s.ok() ? "" : s.error(), max, report);
  }
  parts_.out.send(loaded);
}

namespace {
// When a request reached this worker: when the master sent it (the machine's monotonic clock, the
// same in both processes), so that its wait in this thread's socket, behind the turns before it,
// counts as waiting (worker/delay_monitor.h); read between turns, the first request of each pass
// would otherwise look as if it had not waited at all, and a standing queue would never show.
// Never later than now; now when the master did not say.
std::chrono::steady_clock::time_point receivedAt(std::uint64_t sentNs) {
  const auto now = std::chrono::steady_clock::now();
  if (sentNs == 0) return now;
  const std::chrono::steady_clock::time_point sent{std::chrono::nanoseconds(sentNs)};
  return std::min(sent, now);
}
}  // namespace

void MasterInbox::startRequest(const wire::Request& m, std::string_view body) {
  const std::size_t max = parts_.maxFrameBytes;
  FrameOutbox& out = parts_.out;
  std::uint64_t id = m.id();
  auto str = [](const flatbuffers::String* s) { return s ? s->str() : std::string(); };
  AppRequest request{str(m.app()), str(m.request_id()),      str(m.method()),
                     str(m.url()), headersFrom(m.headers()), ""};
  request.body.assign(body);
  RequestJob job{std::move(request),
                 [&out, id, max](const AppResponse& r) { sendResponse(out, id, r, max); }, id};
  job.sink = std::make_shared<FrameStreamSink>(out, parts_.blocks, id, max);
  job.received = receivedAt(m.sent_ns());
  if (m.body_streamed()) {
    job.bodyStreamed = true;
    job.bodyConsumed = [&out, id, max](std::size_t bytes) {
      out.send(encodeBodyCredit(id, static_cast<std::uint32_t>(bytes), max));
    };
  }
  bool queued = parts_.thread >= 0
                    ? parts_.executor.submitTo(static_cast<std::size_t>(parts_.thread), job)
                    : parts_.executor.submit(job);
  if (!queued) {
    out.send(encodeFailure(id, FailureKind::kOverloaded, "worker queue is full", max));
  }
}

void MasterInbox::answerHeartbeat(const wire::Heartbeat& m) {
  Executor::Stats stats = parts_.executor.stats();  // over every thread
  wire::HeartbeatAckT ack;
  ack.seq = m.seq();
  if (parts_.processFigures) parts_.processFigures(ack);
  ack.heap_used_bytes = stats.heapUsedBytes;
  ack.heap_limit_bytes = stats.heapLimitBytes;
  ack.in_flight = static_cast<std::uint32_t>(parts_.executor.pending());
  ack.executions = stats.executions;
  ack.isolates = static_cast<std::uint32_t>(stats.isolates);
  ack.isolates_recycled = stats.recycled;
  ack.console_dropped_lines = parts_.console.droppedLines();
  parts_.out.send(encodeHeartbeatAck(ack, parts_.maxFrameBytes));
  parts_.out.flushHeld();  // not held: the master counts how long its heartbeats take
}

// Code mode: starts the execution an Execute frame carries; its tool calls and its outcome go
// back as frames. What the master sent is checked like anything else that arrives.
void MasterInbox::startExecution(const wire::Execute& m) {
  std::uint64_t id = m.id();
  const std::size_t max = parts_.maxFrameBytes;
  ExecutionSpec spec = decodeExecute(m);
  auto refuse = [&](ExecErrorCode code, const std::string& message) {
    parts_.out.send(encodeExecResult(id, ExecutionOutcome::failed(code, message), max));
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
  ExecutionJob job = makeExecutionJob(
      id, std::move(spec),
      [&out = parts_.out, id, max](std::uint64_t call, const std::string& provider,
                                   const std::string& tool, const std::string& args) {
        out.send(encodeToolCall(id, call, provider, tool, args, max));
      },
      [&out = parts_.out, id, max](ExecutionOutcome outcome) {
        out.sendBytes(encodeExecResult(id, outcome, max));
      });
  if (!parts_.executor.submitExecution(job)) {
    refuse(ExecErrorCode::kQueueOverflow, "the worker's queue is full");
  }
}

}  // namespace isolane

// SubprocessBackend: the frames a worker sends about its requests, checked before use.
#include <signal.h>

#include "ipc/exec_types.h"
#include "ipc/fetch_codec.h"
#include "obs/events.h"
#include "obs/log.h"
#include "pool/subprocess_backend.h"
#include "pool/subprocess_state.h"

namespace isolane {

void SubprocessBackend::onFrame(int index, std::uint64_t generation, const wire::Frame& frame,
                                std::string_view trailer) {
  std::unique_lock<std::mutex> lock(mu_);
  Slot& slot = *slots_[static_cast<std::size_t>(index)];
  if (slot.generation != generation) return;
  // A worker being killed (a violation, a missed heartbeat) is not listened to any more: the
  // frames it sent before the SIGKILL landed, read in the same buffer, would otherwise still
  // count (its readiness among them).
  if (!slot.life.live()) return;
  auto violation = [&](const std::string& what) {
    logEvent(Level::kError, "worker protocol violation",
             {{"slot", index}, {"pid", slot.proc ? slot.proc->pid() : 0}, {"error", what}});
    killLocked(slot, "protocol violation: " + what);
  };
  // Frames about one request: find it, and make sure it is this worker's.
  auto pendingFor = [&](std::uint64_t id) -> Pending* {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.slot != index || it->second.generation != generation) {
      violation(std::string(wire::EnumNameMessage(frame.message_type())) + " for unknown request " +
                std::to_string(id));
      return nullptr;
    }
    return &it->second;
  };
  switch (frame.message_type()) {
    case wire::Message::FetchCall: {
      if (!slot.life.helloSeen()) return violation("FetchCall before Hello");
      // Only for an app it runs: a worker of the shared group never has the allowances of an
      // app of its own process (nor the other way round).
      const wire::FetchCall* m = frame.message_as_FetchCall();
      if (m->action() == wire::FetchAction::Start && m->app() &&
          m->app()->str() != kCodeModeEgressApp && !servesLocked(slot, m->app()->str())) {
        return violation("FetchCall for an app it does not run");
      }
      Result<FetchCall> call = decodeFetchCall(*m, trailer);
      if (!call) return violation(call.error());
      if (!slot.egressReply) slot.egressReply = Egress::replyTo(slot.proc);
      std::shared_ptr<const Egress::Reply> reply = slot.egressReply;
      lock.unlock();
      egress_.call(egressOwner(index, generation), reply, std::move(call.value()));
      return;
    }
    case wire::Message::Hello: {
      const wire::Hello* m = frame.message_as_Hello();
      if (m->version() != kProtocolVersion) {
        return violation("protocol version " + std::to_string(m->version()) + ", expected " +
                         std::to_string(kProtocolVersion));
      }
      std::string key = m->engine_key() ? m->engine_key()->str() : std::string();
      if (key.size() > 4096) return violation("an engine key over 4096 bytes");
      if (auto bad = slot.life.hello(clock_.now())) return violation(*bad);
      slot.engineKey = key;
      lock.unlock();
      // Its apps' frames are made for it (their code caches read from disk): not here, on the
      // reactor.
      offTheReactor([this, index, generation, key] { loadApps(index, generation, key); });
      return;
    }
    case wire::Message::AppLoaded: {
      const wire::AppLoaded* m = frame.message_as_AppLoaded();
      if (!slot.life.helloSeen()) return violation("AppLoaded before Hello");
      // Each load it was sent is answered once, by its name, the first before the others go.
      std::string name = m->name() ? m->name()->str() : "";
      auto load = slot.loadsOutstanding.find(name);
      if (load == slot.loadsOutstanding.end()) {
        return violation("AppLoaded for an app it was not loading (" + std::to_string(name.size()) +
                         "-byte name)");
      }
      Slot::Load offered = std::move(load->second);
      slot.loadsOutstanding.erase(load);
      if (m->ok()) {
        std::string key = slot.engineKey;
        bool first = name == slot.firstApp;
        ++slot.appsLoaded;
        // The first load is answered: the others, and the heartbeat, go now.
        std::vector<std::string> later = std::move(slot.laterLoads);
        slot.laterLoads.clear();
        if (!later.empty()) slot.life.heartbeatSent(clock_.now());
        std::shared_ptr<WorkerChannel> proc = slot.proc;
        lock.unlock();
        for (std::string& f : later) (void)proc->send(std::move(f));
        // What it says of the code cache may be written to disk: not here, on the reactor.
        offTheReactor([this, key, name, report = decodeAppLoadReport(*m),
                       offered = std::move(offered), first] {
          noteCodeCache(key, name, report, offered.sha256, offered.cacheOffered, first);
        });
        return;
      }
      slot.loadError = m->error() ? m->error()->str() : "app failed to load";
      killLocked(slot, "an app failed to load: " + slot.loadError);
      wake_.notify_all();
      return;
    }
    case wire::Message::HeartbeatAck: {
      const wire::HeartbeatAck* m = frame.message_as_HeartbeatAck();
      SteadyTime now = clock_.now();
      slot.rssBytes = m->rss_bytes();
      slot.heapUsedBytes = m->heap_used_bytes();
      slot.heapLimitBytes = m->heap_limit_bytes();
      slot.executions = m->executions();
      slot.isolates = m->isolates();
      // The worker counts since it started: what is new since its last heartbeat.
      if (m->isolates_recycled() > slot.isolatesRecycled) {
        isolateRecycles_.with({}).inc(m->isolates_recycled() - slot.isolatesRecycled);
      }
      slot.isolatesRecycled = m->isolates_recycled();
      if (m->console_dropped_lines() > slot.consoleDropped) {
        consoleDropped_.with({}).inc(m->console_dropped_lines() - slot.consoleDropped);
      }
      slot.consoleDropped = m->console_dropped_lines();
      if (auto rtt = slot.life.heartbeatAnswered(m->seq(), now)) {
        heartbeatRtt_.with({}).observe(std::chrono::duration<double>(*rtt).count());
      }
      // Ready once its loads and the heartbeat sent after them are answered.
      if (slot.loadsSent && slot.loadsOutstanding.empty() && slot.life.markReady(now)) {
        wake_.notify_all();
        lock.unlock();
        drainQueue();
      }
      return;
    }
    case wire::Message::ResponseHead: {
      const wire::ResponseHead* m = frame.message_as_ResponseHead();
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (p->headSeen) return violation("second response head for one request");
      p->headSeen = true;
      p->response.status = m->status();
      p->response.statusText = m->status_text() ? m->status_text()->str() : "";
      p->response.headers = headersFrom(m->headers());
      if (m->complete()) {  // the whole answer, its body with it: no chunk and no end follow
        if (m->streamed()) return violation("a complete response head that says it streams");
        if (trailer.size() > kBodyChunkBytes) {  // the wire's contract: one chunk's worth
          return violation("a complete response head with " + std::to_string(trailer.size()) +
                           " bytes of body, over " + std::to_string(kBodyChunkBytes));
        }
        takeBodyBytesLocked(*p, trailer);
        return completeLocked(m->id(), *p, lock);
      }
      if (!trailer.empty()) return violation("a body in an incomplete head");
      if (m->streamed()) startStreamLocked(m->id(), *p, slot, lock);
      return;
    }
    case wire::Message::BodyChunk: {
      const wire::BodyChunk* m = frame.message_as_BodyChunk();
      // A piece in a shared block is lent from here on: every way out below gives it back.
      BodyPiece shared;
      if (m->shared()) {
        if (!trailer.empty()) return violation("a shared body chunk with a trailer");
        if (!slot.blocks) return violation("a shared body chunk from a worker without blocks");
        Result<BodyPiece> lent = slot.blocks->lend(m->block(), m->size());
        if (!lent) return violation(lent.error());
        shared = std::move(lent.value());
      }
      std::string_view bytes = m->shared() ? shared.bytes() : trailer;
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (!p->headSeen) return violation("body chunk before the response head");
      // The wire's contract, checked before anything is copied: a chunk is at most 256 KiB, and
      // a streamed piece at most 64 KiB.
      if (bytes.size() > (p->pipe ? kStreamPieceBytes : kBodyChunkBytes)) {
        return violation("a body chunk of " + std::to_string(bytes.size()) + " bytes");
      }
      if (p->pipe) {
        // A shared piece goes to the front as it is, written to the client from the block. A
        // trailer is copied once, from the frame reader's buffer to the piece the front writes.
        std::size_t size = bytes.size();
        if (!p->pipe->push(m->shared() ? std::move(shared) : BodyPiece(std::string(trailer)))) {
          return violation("a streamed chunk of " + std::to_string(size) +
                           " bytes beyond the credit it was given");
        }
        (m->shared() ? sharedPieces_ : socketPieces_).inc();
        p->hangDeadline = streamHangDeadline();
        return;
      }
      if (!p->done) return;  // a stream refused at its head: its bytes go nowhere
      // Only a streamed body's pieces cross in blocks: the master's own code never reads them.
      if (m->shared()) return violation("a shared body chunk for an answer that is not streamed");
      if (p->response.body.size() + bytes.size() > kMaxResponseBodyBytes) {
        return violation("response body over " + std::to_string(kMaxResponseBodyBytes) + " bytes");
      }
      takeBodyBytesLocked(*p, bytes);
      return;
    }
    case wire::Message::End: {
      std::uint64_t id = frame.message_as_End()->id();
      Pending* p = pendingFor(id);
      if (!p) return;
      if (!p->headSeen) return violation("end before the response head");
      if (!p->done) {  // a streamed body (or a refused one) is complete
        if (p->pipe) p->pipe->end();
        forgetLocked(id);
        lock.unlock();
        drainQueue();
        return;
      }
      return completeLocked(id, *p, lock);
    }
    case wire::Message::BodyCredit: {
      // May come after the request's answer (the app read its body afterwards, in waitUntil
      // work): then there is nothing left to send, and nothing wrong.
      const wire::BodyCredit* m = frame.message_as_BodyCredit();
      auto it = pending_.find(m->id());
      if (it == pending_.end() || it->second.slot != index || it->second.generation != generation ||
          !it->second.requestBody) {
        return;
      }
      std::shared_ptr<BodyPipe> body = it->second.requestBody;
      lock.unlock();
      body->acknowledge(m->bytes());  // acknowledging more than was sent is capped by the pipe
      return;
    }
    case wire::Message::Failure: {
      const wire::Failure* m = frame.message_as_Failure();
      Pending* p = pendingFor(m->id());
      if (!p) return;
      if (m->kind() == 0 || m->kind() > static_cast<std::uint8_t>(kLastFailureKind)) {
        return violation("failure of unknown kind " + std::to_string(m->kind()));
      }
      auto kind = static_cast<FailureKind>(m->kind());
      std::string detail = m->detail() ? m->detail()->str() : "";
      std::uint64_t id = m->id();
      if (kind == FailureKind::kWithdrawn) {
        // Given back unstarted, as asked: to another worker, with the same handle. Unasked, it is
        // the worker's bug, and its client gets a 500 rather than a lost request.
        if (!p->withdrawing || !p->replay || !p->done) {
          lock.unlock();
          finish(id, AppResponse::failed(FailureKind::kInternal, "withdrawn unasked"));
          return;
        }
        if (p->clientGone) {  // its client left meanwhile: not sent again
          lock.unlock();
          finish(id, AppResponse::failed(FailureKind::kClientGone,
                                         "the client went away before the request started"));
          return;
        }
        std::function<void(AppResponse)> done = std::move(p->done);
        std::shared_ptr<const AppRequest> again = p->replay;
        SteadyTime arrived = p->arrived;
        forgetLocked(id);
        decisions_.with({"moved"}).inc();
        lock.unlock();
        route(*again, std::move(done), arrived, /*replayed=*/false, id);
        return;
      }
      if (!p->done) {  // after the head of a streamed body: the response is cut
        if (p->pipe) p->pipe->fail(std::string(failureCode(kind)) + ": " + detail);
        forgetLocked(id);
        lock.unlock();
        drainQueue();
        return;
      }
      lock.unlock();
      AppResponse r = AppResponse::failed(kind, detail);
      if (kind == FailureKind::kOverloaded) r.shedReason = "worker-queue-full";
      finish(id, std::move(r));
      return;
    }
    default:
      violation(std::string("unexpected ") + wire::EnumNameMessage(frame.message_type()) +
                " frame");
      return;
  }
}

void SubprocessBackend::takeBodyBytesLocked(Pending& p, std::string_view bytes) {
  if (bytes.empty() || !p.discard.empty()) return;
  std::size_t n = bytes.size();
  // The whole answer is held for its client from here on: the client budget's bytes.
  if (!p.bodyCharge) p.bodyCharge = ByteCharge::take(clientBuffers_, 0);
  if (!p.bodyCharge.resize(p.response.body.size() + n)) {
    p.bodyCharge.reset();
    p.response.body.clear();
    p.response.body.shrink_to_fit();
    p.discard = "the bytes the server holds for clients are at client_buffer_mb (" +
                std::to_string(clientBuffers_->cap() >> 20) + " MiB)";
    return;
  }
  p.response.body.append(bytes);
}

void SubprocessBackend::completeLocked(std::uint64_t id, Pending& p,
                                       std::unique_lock<std::mutex>& lock) {
  AppResponse response = p.discard.empty() ? std::move(p.response)
                                           : AppResponse::shed("client-buffers-full", p.discard);
  // The charge goes with the body to the front, which holds it until the client read it.
  if (p.discard.empty() && p.bodyCharge) {
    response.clientCharge = std::make_shared<ByteCharge>(std::move(p.bodyCharge));
  }
  finishLocked(id, std::move(response), lock);  // `p` is gone from here
}

SteadyTime SubprocessBackend::streamHangDeadline() const {
  return clock_.now() + options_.streamIdleTimeout + options_.requestCpuLimit + options_.hangGrace;
}

// The head of a streamed body: the request moves to the stream cap (its short-request room is
// free again), the client gets the head at once with a pipe for the body, and the worker gets
// credit as the client reads. Over the stream cap, the client gets 503 instead and the worker a
// Cancel; its pieces are dropped until its End or Failure.
void SubprocessBackend::startStreamLocked(std::uint64_t id, Pending& p, Slot& slot,
                                          std::unique_lock<std::mutex>& lock) {
  std::function<void(AppResponse)> done = std::move(p.done);
  AppResponse head = std::move(p.response);
  p.response = AppResponse{};
  bool refused = false;
  if (!p.stream) {
    refused = !admission_.toStream();
    if (!refused) {
      if (slot.inFlight > 0) --slot.inFlight;
      slot.appRequests.remove(p.app);
      admission_.countApp(p.app, false);
      ++slot.streams;
      p.stream = true;
    }
  }
  std::shared_ptr<WorkerChannel> proc = slot.proc;
  const std::uint32_t thread = p.thread;  // (p is not read once the lock is released)
  if (refused) {
    rejected_.with({"stream-full"}).inc();
    head = streamCapShed(capOf(true).cap());
  } else {
    std::weak_ptr<WorkerChannel> weak = proc;
    std::size_t max = options_.maxFrameBytes;
    p.pipe = std::make_shared<BodyPipe>([weak, id, max, thread](std::size_t bytes) {
      auto worker = weak.lock();
      auto frame = encodeCredit(id, static_cast<std::uint32_t>(bytes), max);
      if (worker && frame) (void)worker->sendTo(thread, std::move(frame.value()));
    });
    p.hangDeadline = streamHangDeadline();
    head.stream = p.pipe;
  }
  lock.unlock();
  if (refused && proc) {
    auto cancel = encodeCancel(id, options_.maxFrameBytes);
    if (cancel) (void)proc->sendTo(thread, std::move(cancel.value()));
  }
  done(std::move(head));
  drainQueue();
}

}  // namespace isolane

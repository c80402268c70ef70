#include "pool/inprocess_backend.h"

#include "ipc/body_pipe.h"
#include "obs/log.h"
#include "pool/body_forwarder.h"
#include "runtime/engine_key.h"

namespace isolane {
namespace {

// A streamed body of this process: the executor pushes its pieces into a BodyPipe the front
// reads; the front's acknowledgements go back to the executor as credit. The pipe is made only
// when a response streams.
class PipeSink final : public StreamSink {
 public:
  PipeSink(std::weak_ptr<Executor> executor, std::uint64_t key, std::shared_ptr<CappedCount> count)
      : executor_(std::move(executor)), key_(key), count_(std::move(count)) {}
  ~PipeSink() override { release(); }

  // The request holds a place under the stream cap until its body ends.
  void holdPlace() { holding_ = true; }
  void release() {
    if (holding_) count_->give();
    holding_ = false;
  }
  bool holdsPlace() const { return holding_; }

  // Executor thread, at the head of a streamed body.
  std::shared_ptr<BodyPipe> pipe() {
    if (!pipe_) {
      pipe_ = std::make_shared<BodyPipe>([executor = executor_, key = key_](std::size_t n) {
        if (auto e = executor.lock()) e->credit(key, n);
      });
    }
    return pipe_;
  }
  void piece(std::string_view bytes) override { pipe()->push(std::string(bytes)); }
  void end() override {
    pipe()->end();
    release();
  }
  void abort(FailureKind, const std::string& detail) override {
    pipe()->fail(detail);
    release();
  }

 private:
  const std::weak_ptr<Executor> executor_;
  const std::uint64_t key_;
  const std::shared_ptr<CappedCount> count_;
  bool holding_ = false;  // executor thread only, after submit
  std::shared_ptr<BodyPipe> pipe_;
};

}  // namespace

InProcessBackend::InProcessBackend(const InProcessOptions& options, LogSink& log)
    : streams_(std::make_shared<CappedCount>(options.streamMaxInflight)),
      codeCache_(options.codeCacheDir) {
  std::size_t n = options.threads == 0 ? 1 : options.threads;
  for (std::size_t i = 0; i < n; ++i) {
    executors_.push_back(std::make_shared<Executor>(options.executor, log));
  }
}

InProcessBackend::~InProcessBackend() { stop(); }

Status InProcessBackend::start(const std::vector<AppSpec>& apps) {
  for (AppSpec app : apps) {
    // Each executor after the first compiles from the cache the one before it made, if the
    // store had none.
    codeCache_.offer(app, engineKey());
    for (auto& executor : executors_) {
      AppLoadReport report;
      Status s = executor->loadApp(app, &report);
      if (!s) return s;
      if (Result<bool> kept = codeCache_.settle(engineKey(), report); !kept) {
        logEvent(Level::kWarn, "cannot store a code cache", {{"error", kept.error()}});
      }
      if (report.cache == CodeCacheUse::kRejected) app.codeCache.clear();
      if (!report.producedCache.empty() && report.sourceSha256 == app.sourceSha256) {
        app.codeCache = std::move(report.producedCache);
      }
    }
  }
  return Status::success();
}

// A handle is the executor's index in the top 8 bits and the request's cancel key below.
std::uint64_t InProcessBackend::submit(AppRequest request, std::function<void(AppResponse)> done) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < executors_.size(); ++i) {
    if (executors_[i]->pending() < executors_[best]->pending()) best = i;
  }
  std::uint64_t key = nextKey_++ & ((1ull << 56) - 1);
  if (executors_.empty()) {
    done(AppResponse::shed("no-worker", "no executor"));
    return 0;
  }
  auto sink = std::make_shared<PipeSink>(executors_[best], key, streams_);
  // Requests of an app marked streaming take their place under the stream cap now; others when
  // their head says the body streams.
  if (request.streaming) {
    if (!streams_->tryTake()) {
      done(streamCapShed(streams_->cap()));
      return 0;
    }
    sink->holdPlace();
  }
  std::weak_ptr<Executor> executor = executors_[best];
  RequestJob job{std::move(request),
                 [done = std::move(done), sink, executor, key, streams = streams_](AppResponse r) {
                   if (r.streamed && !sink->holdsPlace()) {
                     if (streams->tryTake()) {
                       sink->holdPlace();
                     } else {
                       // Refused before anything reached the client: 503, and the app's
                       // stream is cancelled.
                       if (auto e = executor.lock()) e->cancel(key);
                       r = streamCapShed(streams->cap());
                     }
                   }
                   if (r.streamed) {
                     r.stream = sink->pipe();
                   } else {
                     sink->release();  // answered whole: no stream holds the place
                   }
                   done(std::move(r));
                 },
                 key};
  job.sink = sink;
  std::shared_ptr<BodyPipe> body = job.request.bodyStream;
  if (body) {
    job.bodyStreamed = true;
    job.bodyConsumed = [body](std::size_t bytes) { body->acknowledge(bytes); };
  }
  if (!executors_[best]->submit(job)) {
    job.done(AppResponse::shed("queue-full", "the executor queue is full"));
    return 0;
  }
  // The body's pieces follow the request into the executor, in order, as they arrive.
  if (body)
    forwardBody(*body, [executor, key](std::string piece, bool end, std::string error) {
      if (auto e = executor.lock()) e->requestBody(key, std::move(piece), end, std::move(error));
    });
  return (static_cast<std::uint64_t>(best) << 56) | key;
}

void InProcessBackend::cancel(std::uint64_t handle) {
  std::size_t index = handle >> 56;
  if (handle && index < executors_.size()) executors_[index]->cancel(handle & ((1ull << 56) - 1));
}

void InProcessBackend::stop() {
  for (auto& executor : executors_) executor->stop();
}

std::size_t InProcessBackend::inFlight() const {
  std::size_t n = 0;
  for (const auto& executor : executors_) n += executor->pending();
  return n;
}

}  // namespace isolane

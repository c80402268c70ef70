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
  PipeSink(std::weak_ptr<ExecutorSet> executor, std::uint64_t key,
           std::shared_ptr<CappedCount> count)
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
  const std::weak_ptr<ExecutorSet> executor_;
  const std::uint64_t key_;
  const std::shared_ptr<CappedCount> count_;
  bool holding_ = false;  // executor thread only, after submit
  std::shared_ptr<BodyPipe> pipe_;
};

}  // namespace

InProcessBackend::InProcessBackend(const InProcessOptions& options, LogSink& log)
    : executors_(std::make_shared<ExecutorSet>(options.threads, options.executor, log)),
      streams_(std::make_shared<CappedCount>(options.streamMaxInflight)),
      codeCache_(options.codeCacheDir) {}

InProcessBackend::~InProcessBackend() { stop(); }

Status InProcessBackend::start(const std::vector<AppSpec>& apps) {
  for (AppSpec app : apps) {
    codeCache_.offer(app, engineKey());
    AppLoadReport report;
    if (Status s = executors_->loadApp(app, &report); !s) return s;
    if (Result<bool> kept =
            codeCache_.settle(engineKey(), app.name, report, !app.codeCache.empty());
        !kept) {
      logEvent(Level::kWarn, "cannot store a code cache", {{"error", kept.error()}});
    }
  }
  return Status::success();
}

// A handle is the request's cancel key.
std::uint64_t InProcessBackend::submit(AppRequest request, std::function<void(AppResponse)> done) {
  std::uint64_t key = nextKey_++;
  auto sink = std::make_shared<PipeSink>(executors_, key, streams_);
  // Requests of an app marked streaming take their place under the stream cap now; others when
  // their head says the body streams.
  if (request.streaming) {
    if (!streams_->tryTake()) {
      done(streamCapShed(streams_->cap()));
      return 0;
    }
    sink->holdPlace();
  }
  std::weak_ptr<ExecutorSet> executor = executors_;
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
  if (!executors_->submit(job)) {
    job.done(AppResponse::shed("queue-full", "the executor queue is full"));
    return 0;
  }
  // The body's pieces follow the request into the executor, in order, as they arrive.
  if (body)
    forwardBody(*body, [executor, key](std::string piece, bool end, std::string error) {
      if (auto e = executor.lock()) e->requestBody(key, std::move(piece), end, std::move(error));
    });
  return key;
}

void InProcessBackend::cancel(std::uint64_t handle) {
  if (handle) executors_->cancel(handle);
}

void InProcessBackend::stop() { executors_->stop(); }

std::size_t InProcessBackend::inFlight() const { return executors_->pending(); }

}  // namespace isolane

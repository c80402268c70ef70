#include "pool/inprocess_backend.h"

namespace isolane {

InProcessBackend::InProcessBackend(const InProcessOptions& options, LogSink& log) {
  std::size_t n = options.threads == 0 ? 1 : options.threads;
  for (std::size_t i = 0; i < n; ++i) {
    executors_.push_back(std::make_unique<Executor>(options.executor, log));
  }
}

InProcessBackend::~InProcessBackend() { stop(); }

Status InProcessBackend::start(const std::vector<AppSpec>& apps) {
  for (auto& executor : executors_) {
    for (const AppSpec& app : apps) {
      Status s = executor->loadApp(app);
      if (!s) return s;
    }
  }
  return Status::success();
}

void InProcessBackend::submit(AppRequest request, std::function<void(AppResponse)> done) {
  Executor* best = nullptr;
  for (auto& executor : executors_) {
    if (!best || executor->pending() < best->pending()) best = executor.get();
  }
  RequestJob job{std::move(request), std::move(done)};
  if (!best || !best->submit(job)) {
    job.done(AppResponse::failed(FailureKind::kOverloaded, "the executor queue is full"));
  }
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

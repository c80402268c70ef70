// isolane::Pool (include/isolane/pool.h): the server's subprocess backend, made the way `serve`
// makes it (makeSubprocessBackend, appSpecs), without the HTTP front.
#include <isolane/pool.h>

#include <future>
#include <mutex>

#include "ipc/body_pipe.h"
#include "obs/metrics.h"
#include "server/server.h"

namespace isolane {

struct Pool::Impl {
  ServerConfig config;
  MetricsRegistry metrics;
  std::shared_ptr<Backend> backend;  // shared: a fetch racing stop() keeps it alive
  std::mutex mutex;                  // guards `backend`
};

namespace {

PoolResponse toPoolResponse(AppResponse r) {
  PoolResponse out;
  out.status = r.status;
  out.statusText = std::move(r.statusText);
  out.headers = std::move(r.headers);
  out.body = std::move(r.body);
  if (r.failure != FailureKind::kNone) {
    out.error = std::string(failureCode(r.failure));
    out.detail = std::move(r.failureDetail);
    out.retryable = r.retryable();
    out.status = failureStatus(r.failure);
  }
  return out;
}

// Reads a streamed body to its end, acknowledging each piece (the worker then sends more), and
// answers once it is whole or has failed. The pipe owns the callback, so the callback holds the
// pipe through `keep` until the body ends, then lets it go (no cycle is left behind); the pipe
// calls it only from a call its producer or setReady makes, so `raw` is alive whenever it runs.
void collect(const std::shared_ptr<BodyPipe>& pipe, std::shared_ptr<PoolResponse> response,
             std::shared_ptr<std::function<void(PoolResponse)>> done) {
  auto keep = std::make_shared<std::shared_ptr<BodyPipe>>(pipe);
  BodyPipe* raw = pipe.get();
  raw->setReady([raw, keep, response, done] {
    std::string piece;
    for (;;) {
      switch (raw->take(&piece)) {
        case BodyPipe::Take::kPiece:
          response->body += piece;
          raw->acknowledge(piece.size());
          continue;
        case BodyPipe::Take::kEmpty:
          return;
        case BodyPipe::Take::kEnd:
          (*done)(std::move(*response));
          keep->reset();
          return;
        case BodyPipe::Take::kFailed:
          response->error = "STREAM_FAILED";
          response->detail = piece;
          (*done)(std::move(*response));
          keep->reset();
          return;
      }
    }
  });
}

}  // namespace

Pool::Pool(PoolConfig config) : impl_(std::make_unique<Impl>()) {
  ServerConfig& c = impl_->config;
  if (config.workers) c.pool.size = std::min<std::size_t>(config.workers, 16);
  c.executorThreads = config.executorThreads ? config.executorThreads : 1;
  c.heapLimitMb = config.heapLimitMb;
  c.requestCpuLimit = config.requestCpu;
  c.requestTimeout = config.requestTimeout;
  c.pool.maxInflight = config.maxInflight;
  c.workerBinary = config.isolaneBinary;
  c.codeCacheDir = "off";
}

Pool::~Pool() { stop(); }

std::string Pool::start(const std::vector<PoolApp>& apps) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->backend) return "the pool is already started";
  for (const PoolApp& app : apps) {
    AppConfig a;
    a.name = app.name;
    a.module = app.module;
    a.vars = app.vars;
    a.fetchAllow = app.fetchAllow;
    impl_->config.apps.push_back(std::move(a));
  }
  impl_->backend = makeSubprocessBackend(impl_->config, impl_->metrics);
  if (Status s = impl_->backend->start(appSpecs(impl_->config)); !s) {
    impl_->backend.reset();
    return s.error();
  }
  return "";
}

void Pool::fetch(PoolRequest request, std::function<void(PoolResponse)> done) {
  std::shared_ptr<Backend> backend;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    backend = impl_->backend;
  }
  if (!backend) {
    PoolResponse r;
    r.status = 503;
    r.error = "SHUTTING_DOWN";
    r.detail = "the pool is not started";
    r.retryable = true;
    done(std::move(r));
    return;
  }
  auto callback = std::make_shared<std::function<void(PoolResponse)>>(std::move(done));
  AppRequest app{std::move(request.app),     "embed",
                 std::move(request.method),  std::move(request.url),
                 std::move(request.headers), std::move(request.body)};
  backend->submit(std::move(app), [callback](AppResponse r) {
    std::shared_ptr<BodyPipe> stream = r.stream;
    auto response = std::make_shared<PoolResponse>(toPoolResponse(std::move(r)));
    if (stream) {
      collect(stream, response, callback);
    } else {
      (*callback)(std::move(*response));
    }
  });
}

PoolResponse Pool::fetch(PoolRequest request) {
  auto promise = std::make_shared<std::promise<PoolResponse>>();
  std::future<PoolResponse> answer = promise->get_future();
  fetch(std::move(request), [promise](PoolResponse r) { promise->set_value(std::move(r)); });
  return answer.get();
}

void Pool::stop() {
  std::shared_ptr<Backend> backend;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    backend = std::move(impl_->backend);
  }
  if (backend) backend->stop();
}

}  // namespace isolane

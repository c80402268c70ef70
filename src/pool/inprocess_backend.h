#pragma once
// The in-process backend: requests run on executor threads of this process, `threads` of them,
// each hosting one isolate per app it serves (worker/executor_set.h picks the thread). The same
// threads and isolates a worker process runs, inside the server: the mode for embedding.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "pool/backend.h"
#include "pool/capped_count.h"
#include "pool/code_cache_store.h"
#include "worker/executor_set.h"

namespace isolane {

struct InProcessOptions {
  std::size_t threads = 1;
  // Streamed responses in flight (see PoolOptions::streamMaxInflight).
  std::size_t streamMaxInflight = 10'000;
  ExecutorOptions executor;
  // Where the apps' code caches are kept (pool/code_cache_store.h); empty: none are.
  std::string codeCacheDir;
};

class InProcessBackend final : public Backend {
 public:
  InProcessBackend(const InProcessOptions& options, LogSink& log);
  ~InProcessBackend() override;

  Status start(const std::vector<AppSpec>& apps) override;
  std::uint64_t submit(AppRequest request, std::function<void(AppResponse)> done) override;
  void cancel(std::uint64_t handle) override;
  void stop() override;
  std::size_t inFlight() const override;
  bool ready() const override { return true; }

 private:
  // Shared: a streamed body's credit reaches its executor through a weak reference, and the
  // front may hold the body after the backend is gone.
  std::shared_ptr<ExecutorSet> executors_;
  std::atomic<std::uint64_t> nextKey_{1};
  // Streams held against streamMaxInflight; shared with the sinks, which give a stream's place
  // back when it ends, possibly after the backend is gone.
  std::shared_ptr<CappedCount> streams_;
  const CodeCacheStore codeCache_;
};

}  // namespace isolane

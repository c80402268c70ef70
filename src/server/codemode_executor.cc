// isolane::codemode::Executor (include/isolane/executor.h): the public face of the code-mode
// pool (exec/exec_pool.h), with workers started the way the server starts its own.
#include <isolane/executor.h>

#include "exec/exec_pool.h"
#include "obs/log.h"
#include "server/executor_config.h"

namespace isolane::codemode {
namespace {

ExecutionSpec toSpec(Request&& r, const ExecutorConfig& c) {
  ExecutionSpec spec;
  spec.code = std::move(r.code);
  for (Module& m : r.modules) {
    spec.modules.push_back(GuestModule{std::move(m.name), std::move(m.source), m.json});
  }
  for (auto& [provider, tools] : r.tools) spec.tools.push_back(ToolProvider{provider, tools});
  spec.timeoutMs = r.timeoutMs;
  spec.memoryMb = r.memoryMb;
  spec.outbound = r.outbound == Outbound::kNative ? OutboundMode::kNative : OutboundMode::kDisabled;
  spec.payloadLimit = c.payloadLimitBytes;
  spec.resultLimit = c.resultLimitBytes;
  spec.consoleLimit = c.consoleLimitBytes;
  return spec;
}

Result toResult(ExecutionOutcome&& o) {
  Result r;
  if (!o.ok()) {
    r.error = Error{std::string(execErrorName(o.error)), execErrorRetryable(o.error),
                    std::move(o.message), std::move(o.stack)};
  } else {
    r.json = std::move(o.resultJson);
  }
  r.logs = std::move(o.logs);
  r.logsTruncated = o.logsTruncated;
  r.durationUs = o.durationUs;
  r.cpuUs = o.cpuUs;
  r.toolCalls = o.toolCalls;
  return r;
}

ExecPoolOptions poolOptions(const ExecutorConfig& c) {
  ExecutorSettings s;
  s.workers = c.workers;
  s.executionsPerWorker = c.executionsPerWorker;
  s.maxQueue = c.maxQueue;
  s.retireAfterExecutions = c.retireAfterExecutions;
  s.workerMemoryMb = c.workerMemoryMb;
  s.sandbox = c.sandbox;
  s.isolaneBinary = c.isolaneBinary;
  return execPoolOptions(s);
}

}  // namespace

struct Executor::Impl {
  ExecutorConfig config;
  MetricsRegistry metrics;
  ExecPool pool;
  explicit Impl(ExecutorConfig c) : config(std::move(c)), pool(poolOptions(config), metrics) {}
};

Executor::Executor(ExecutorConfig config) {
  initLoggingForLibrary("codemode");  // JSON lines on stderr, never on the program's stdout
  impl_ = std::make_unique<Impl>(std::move(config));
}

Executor::~Executor() { shutdown(); }

void Executor::execute(Request request, ToolDispatcher dispatcher,
                       std::function<void(Result)> done) {
  ToolDispatch dispatch;
  if (dispatcher) {
    dispatch = [dispatcher = std::move(dispatcher)](const ToolCallRequest& call,
                                                    ToolAnswer answer) {
      dispatcher(ToolCall{call.provider, call.tool, call.argsJson}, std::move(answer));
    };
  }
  impl_->pool.execute(
      toSpec(std::move(request), impl_->config), std::move(dispatch),
      [done = std::move(done)](ExecutionOutcome o) { done(toResult(std::move(o))); });
}

std::future<Result> Executor::execute(Request request, ToolDispatcher dispatcher) {
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  execute(std::move(request), std::move(dispatcher),
          [promise](Result r) { promise->set_value(std::move(r)); });
  return future;
}

void Executor::shutdown(std::chrono::milliseconds drain) { impl_->pool.shutdown(drain); }

std::string Executor::metrics() const { return impl_->metrics.render(); }

Executor::Stats Executor::stats() const {
  ExecPool::Stats s = impl_->pool.stats();
  return Stats{s.workers, s.ready, s.running, s.queued};
}

}  // namespace isolane::codemode

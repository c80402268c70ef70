// The code-mode pool (exec/exec_pool.h) with real worker processes, and the C++ API on it
// (include/isolane/executor.h): the worked examples of the worker-pool design (a bounded queue
// whose overflow names its bound, retirement after N executions with its event sequence, results
// whose keys are Object.prototype's names, shutdown mid-execution), tool calls that wait longer
// than the run's timeout, hostile guests followed by a healthy execution on the same worker, and
// a worker that dies under its executions.

#include "exec/exec_pool.h"

#include <gtest/gtest.h>
#include <isolane/executor.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/executor_config.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

ExecPoolOptions poolOptions() {
  ExecPoolOptions o;
  o.maxWorkers = 1;
  o.workerCommand = {ISOLANE_BINARY, "worker", "--threads", "1", "--max-isolates", "17"};
  return o;
}

ExecutionSpec code(std::string text, std::uint32_t timeoutMs = 5000) {
  ExecutionSpec spec;
  spec.code = std::move(text);
  spec.timeoutMs = timeoutMs;
  return spec;
}

std::future<ExecutionOutcome> run(ExecPool& pool, ExecutionSpec spec,
                                  ToolDispatch dispatch = nullptr) {
  auto promise = std::make_shared<std::promise<ExecutionOutcome>>();
  auto future = promise->get_future();
  pool.execute(std::move(spec), std::move(dispatch),
               [promise](ExecutionOutcome o) { promise->set_value(std::move(o)); });
  return future;
}

ExecutionOutcome wait(std::future<ExecutionOutcome> f) {
  EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
  return f.get();
}

// Events as the pool publishes them, for a test to read.
struct EventLog {
  std::mutex mu;
  std::vector<nlohmann::ordered_json> events;
  std::function<void(const nlohmann::ordered_json&)> sink() {
    return [this](const nlohmann::ordered_json& e) {
      std::lock_guard lock(mu);
      events.push_back(e);
    };
  }
  std::vector<std::string> lines(const std::vector<std::string>& names) {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (const auto& e : events) {
      std::string name = e["event"];
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      if (name == "worker.spawn") out.push_back("worker.spawn " + e["worker"].dump());
      if (name == "execution.settle") {
        out.push_back("execution.settle " + e["execution"].dump() + " on worker " +
                      e["worker"].dump() + " " + e["outcome"].get<std::string>());
      }
      if (name == "worker.retire") {
        out.push_back("worker.retire " + e["worker"].dump() + " after " + e["executions"].dump() +
                      " " + e["reason"].get<std::string>());
      }
    }
    return out;
  }
};

const char* kBusy =
    "async () => { await new Promise((resolve) => setTimeout(resolve, 300)); return 'done' }";

TEST(ExecPool, AFullQueueRefusesWithItsBound) {
  MetricsRegistry metrics;
  ExecPoolOptions o = poolOptions();
  o.executionsPerWorker = 1;
  o.maxQueue = 1;
  ExecPool pool(o, metrics);
  auto a = run(pool, code(kBusy));
  auto b = run(pool, code(kBusy));
  auto c = run(pool, code(kBusy));
  ExecutionOutcome third = wait(std::move(c));
  EXPECT_EQ(third.error, ExecErrorCode::kQueueOverflow);
  EXPECT_TRUE(execErrorRetryable(third.error));
  EXPECT_EQ(third.message,
            "The queue is at its bound of 1. Retry when a running execution settles.");
  EXPECT_EQ(wait(std::move(a)).resultJson, "\"done\"");
  EXPECT_EQ(wait(std::move(b)).resultJson, "\"done\"");
  EXPECT_NE(metrics.render().find("isolane_executions_total{outcome=\"QUEUE_OVERFLOW\"} 1"),
            std::string::npos);
}

TEST(ExecPool, AWorkerRetiresAfterItsExecutionsAndAReplacementTakesOver) {
  MetricsRegistry metrics;
  EventLog log;
  ExecPoolOptions o = poolOptions();
  o.retireAfterExecutions = 2;
  o.onEvent = log.sink();
  ExecPool pool(o, metrics);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(wait(run(pool, code("async () => " + std::to_string(i)))).resultJson,
              std::to_string(i));
  }
  EXPECT_EQ(log.lines({"worker.spawn", "execution.settle", "worker.retire"}),
            (std::vector<std::string>{"worker.spawn 1", "execution.settle 1 on worker 1 ok",
                                      "execution.settle 2 on worker 1 ok",
                                      "worker.retire 1 after 2 executions", "worker.spawn 2",
                                      "execution.settle 3 on worker 2 ok"}));
}

TEST(ExecPool, AShutdownCutsARunningExecutionWithARetryableConnectionBroken) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  auto running =
      run(pool,
          code("async () => { await new Promise((r) => setTimeout(r, 30000)); return 'finished' }",
               60'000));
  while (pool.stats().running == 0) std::this_thread::sleep_for(10ms);
  pool.shutdown(0ms);
  ExecutionOutcome o = wait(std::move(running));
  EXPECT_EQ(o.error, ExecErrorCode::kConnectionBroken);
  EXPECT_TRUE(execErrorRetryable(o.error));
  EXPECT_EQ(o.message, "Worker 1 was shut down during the execution.");
  EXPECT_EQ(wait(run(pool, code("async () => 1"))).error, ExecErrorCode::kConnectionBroken);
}

TEST(ExecPool, AShutdownLetsRunningExecutionsFinishWithinItsDrain) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  auto running = run(pool, code(kBusy));
  while (pool.stats().running == 0) std::this_thread::sleep_for(10ms);
  pool.shutdown(5s);
  EXPECT_EQ(wait(std::move(running)).resultJson, "\"done\"");
}

TEST(ExecPool, AToolThatAnswersAfterTheTimeoutStillSucceedsForTheClockIsPaused) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  ExecutionSpec spec = code("async () => (await tools.slow.get({ n: 1 })).n + 1", 1000);
  spec.tools.push_back(ToolProvider{"slow", {"get"}});
  ToolDispatch dispatch = [](const ToolCallRequest& call, ToolAnswer answer) {
    std::thread([call, answer] {
      std::this_thread::sleep_for(2s);
      auto args = nlohmann::json::parse(call.argsJson);
      answer(true, nlohmann::json{{"n", args["n"].get<int>() + 40}}.dump());
    }).detach();
  };
  ExecutionOutcome o = wait(run(pool, spec, dispatch));
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "42");
  EXPECT_EQ(o.toolCalls, 1u);
}

TEST(ExecPool, AnAnswerThatIsNotJsonRejectsTheGuestsCall) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  ExecutionSpec spec =
      code("async () => { try { await tools.t.f() } catch (e) { return e.message } }");
  spec.tools.push_back(ToolProvider{"t", {"f"}});
  ExecutionOutcome o = wait(run(
      pool, spec, [](const ToolCallRequest&, ToolAnswer answer) { answer(true, "{not json"); }));
  EXPECT_EQ(o.resultJson, "\"the tool's answer is not JSON\"");
}

TEST(ExecPool, HostileGuestsGetTypedErrorsAndTheNextExecutionOnTheWorkerSucceeds) {
  MetricsRegistry metrics;
  EventLog log;
  ExecPoolOptions o = poolOptions();
  o.onEvent = log.sink();
  ExecPool pool(o, metrics);
  struct Case {
    const char* code;
    ExecErrorCode expected;
  };
  ExecutionSpec bomb =
      code("async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)) }", 20'000);
  bomb.memoryMb = 32;
  std::vector<std::pair<ExecutionSpec, ExecErrorCode>> cases = {
      {code("async () => { for (;;) {} }", 300), ExecErrorCode::kCpuLimit},
      {bomb, ExecErrorCode::kMemoryLimit},
      {code("async () => new Promise(() => {})", 300), ExecErrorCode::kTimeout},
      {code("import x from 'nowhere'\nasync () => x"), ExecErrorCode::kGuestError},
      {code("async () => 'x'.repeat(100 * 1024 * 1024)"), ExecErrorCode::kPayloadLimit},
      {code("async () => { Object.prototype.toJSON = 1; JSON.stringify = null; return { ok: 1 } }"),
       ExecErrorCode::kNone},
  };
  cases[4].first.memoryMb = 1024;
  for (auto& [spec, expected] : cases) {
    ExecutionOutcome bad = wait(run(pool, spec));
    EXPECT_EQ(bad.error, expected) << spec.code << ": " << bad.message;
    ExecutionOutcome good = wait(run(pool, code("async () => typeof leftover")));
    EXPECT_EQ(good.resultJson, "\"undefined\"") << "after " << spec.code;
  }
  EXPECT_EQ(log.lines({"worker.spawn"}), std::vector<std::string>{"worker.spawn 1"});
}

TEST(ExecPool, AWorkerThatDiesFailsItsExecutionsRetryablyAndIsReplaced) {
  MetricsRegistry metrics;
  EventLog log;
  ExecPoolOptions o = poolOptions();
  o.onEvent = log.sink();
  ExecPool pool(o, metrics);
  auto running = run(pool, code(kBusy, 60'000));
  int pid = 0;
  for (int i = 0; i < 500 && pid == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    std::lock_guard lock(log.mu);
    for (const auto& e : log.events) {
      if (e["event"] == "worker.spawn") pid = e["pid"];
    }
  }
  ASSERT_NE(pid, 0);
  ::kill(pid, SIGKILL);
  ExecutionOutcome crashed = wait(std::move(running));
  EXPECT_EQ(crashed.error, ExecErrorCode::kWorkerCrashed);
  EXPECT_TRUE(execErrorRetryable(crashed.error));
  EXPECT_NE(crashed.message.find("Worker 1 crashed during an execution"), std::string::npos)
      << crashed.message;
  EXPECT_EQ(wait(run(pool, code("async () => 2"))).resultJson, "2");
}

TEST(ExecPool, AWorkerThatNeverAnswersItsFirstHeartbeatFailsOneLease) {
  MetricsRegistry metrics;
  ExecPoolOptions o = poolOptions();
  o.workerCommand = {"/bin/sh", "-c", "exec sleep 30", "sh"};  // never says hello
  EventLog log;
  o.onEvent = log.sink();
  o.spawnTimeout = 200ms;
  ExecPool pool(o, metrics);
  ExecutionOutcome failed = wait(run(pool, code("async () => 1")));
  EXPECT_EQ(failed.error, ExecErrorCode::kWorkerCrashed);
  EXPECT_NE(failed.message.find(
                "Worker 1 failed to start: did not answer its first heartbeat within 200 ms"),
            std::string::npos)
      << failed.message;
}

TEST(ExecPool, ADroppedOrThrowingDispatcherRejectsTheGuestsCallAndThePoolGoesOn) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  ExecutionSpec spec =
      code("async () => { try { await tools.t.f() } catch (e) { return e.message } }");
  spec.tools.push_back(ToolProvider{"t", {"f"}});
  EXPECT_EQ(wait(run(pool, spec, [](const ToolCallRequest&, ToolAnswer) {})).resultJson,
            "\"the tool dispatcher dropped the call without answering\"");
  EXPECT_EQ(wait(run(pool, spec,
                     [](const ToolCallRequest&, ToolAnswer) {
                       throw std::runtime_error("dispatcher bug");
                     }))
                .resultJson,
            "\"the tool dispatcher dropped the call without answering\"");
  EXPECT_EQ(wait(run(pool, code("async () => 3"))).resultJson, "3");
}

TEST(ExecPool, ACancelledExecutionEndsAndItsWorkerServesOn) {
  MetricsRegistry metrics;
  ExecPool pool(poolOptions(), metrics);
  auto promise = std::make_shared<std::promise<ExecutionOutcome>>();
  auto future = promise->get_future();
  std::uint64_t id =
      pool.execute(code("async () => new Promise(() => {})", 60'000), nullptr,
                   [promise](ExecutionOutcome o) { promise->set_value(std::move(o)); });
  while (pool.stats().running == 0) std::this_thread::sleep_for(10ms);
  pool.cancel(id);
  ExecutionOutcome o = wait(std::move(future));
  EXPECT_EQ(o.error, ExecErrorCode::kConnectionBroken);
  EXPECT_EQ(wait(run(pool, code("async () => 4"))).resultJson, "4");
  EXPECT_EQ(pool.stats().workers, 1u);  // the same worker: its late answer did not count against it
}

TEST(ExecutorConfig, TheExecutorTableSetsTheNumbersAndRefusesBadOnes) {
  std::string path = ::testing::TempDir() + "/executor.toml";
  auto write = [&](const std::string& text) {
    FILE* f = fopen(path.c_str(), "w");
    fputs(text.c_str(), f);
    fclose(f);
  };
  write(
      "[executor]\nlisten = \"127.0.0.1:9999\"\nworkers = 3\nexecutions_per_worker = 4\n"
      "max_queue = 7\nretire_after_executions = 50\nworker_memory_mb = 256\ntimeout_ms = 1000\n"
      "memory_mb = 64\nmax_timeout_ms = 2000\nmax_memory_mb = 96\npayload_limit_bytes = 4096\n"
      "shutdown_drain_ms = 500\nsandbox = false\n");
  Result<ExecutorSettings> s = loadExecutorConfig(path);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().daemon.port, 9999);
  EXPECT_EQ(s.value().workers, 3u);
  EXPECT_EQ(s.value().executionsPerWorker, 4u);
  EXPECT_EQ(s.value().maxQueue, 7u);
  EXPECT_EQ(s.value().retireAfterExecutions, 50u);
  EXPECT_EQ(s.value().daemon.defaults.timeoutMs, 1000u);
  EXPECT_EQ(s.value().daemon.defaults.maxMemoryMb, 96u);
  EXPECT_EQ(s.value().daemon.defaults.payloadLimit, 4096u);
  EXPECT_EQ(s.value().shutdownDrain, 500ms);
  EXPECT_FALSE(s.value().sandbox);
  ExecPoolOptions pool = execPoolOptions(s.value());
  EXPECT_EQ(pool.maxWorkers, 3u);
  EXPECT_EQ(pool.workerMemoryLimitBytes, 256u << 20);

  write("[executor]\nexecutions_per_worker = 0\n");
  s = loadExecutorConfig(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("'executions_per_worker' must be an integer from 1 to 1024"),
            std::string::npos)
      << s.error();
  write("[executor]\ntimeout_ms = 9000\nmax_timeout_ms = 1000\n");
  EXPECT_FALSE(loadExecutorConfig(path));
}

TEST(CodemodeExecutor, TheCppApiRoundTripsKeysThatArePrototypeNames) {
  codemode::ExecutorConfig config;
  config.workers = 1;
  config.isolaneBinary = ISOLANE_BINARY;
  codemode::Executor executor(config);
  codemode::Request request;
  request.code =
      "import { from } from 'toString'\n"
      "async () => ({ ordinary: 1, constructor: 2, toString: 3, valueOf: 4, from })";
  request.modules.push_back({"toString", "export const from = 'a module named toString'"});
  codemode::Result r = executor.execute(request).get();
  ASSERT_TRUE(r.ok()) << r.error->message;
  auto value = nlohmann::json::parse(r.json);
  EXPECT_EQ(value["constructor"], 2);
  EXPECT_EQ(value["toString"], 3);
  EXPECT_EQ(value["valueOf"], 4);
  EXPECT_EQ(value["from"], "a module named toString");

  request = {};
  request.code =
      "async () => { console.log('adding'); return await tools.math.add({ a: 2, b: 3 }) }";
  request.tools["math"] = {"add"};
  r = executor
          .execute(request,
                   [](const codemode::ToolCall& call, codemode::ToolReply reply) {
                     auto args = nlohmann::json::parse(call.argsJson);
                     reply(true, std::to_string(args["a"].get<int>() + args["b"].get<int>()));
                   })
          .get();
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.json, "5");
  EXPECT_EQ(r.logs, std::vector<std::string>{"log: adding"});
  EXPECT_EQ(r.toolCalls, 1u);

  request = {};
  request.code = "async () => {\n  throw new TypeError('nope')\n}";
  r = executor.execute(request).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, "GUEST_ERROR");
  EXPECT_FALSE(r.error->retryable);
  EXPECT_EQ(r.error->message, "TypeError: nope");
}

TEST(CodemodeExecutor, TheCppExampleRunsItsSnippetWithItsTools) {
  std::string out;
  FILE* p = popen(ISOLANE_CODEMODE_EXAMPLE " 2>/dev/null", "r");
  ASSERT_NE(p, nullptr);
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(
      out.rfind("{\"total\":13,\"currency\":\"EUR\"}\nlog: priced 2 items\n3 tool calls, ", 0), 0u)
      << out;
}

}  // namespace
}  // namespace isolane

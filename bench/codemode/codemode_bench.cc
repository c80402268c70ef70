// bench/run codemode, the C++ API side: executions through isolane::codemode::Executor, the way
// a C++ host would run them. Prints one JSON object per line, as bench/codemode/ivm_baseline.mjs
// does for isolated-vm, so bench/run can put both side by side.
//
//   build/bench/codemode_bench [--scenario one|tools10|all] [--n 500] [--seconds 3]
//                              [--concurrency C] [--workers W]
//
// one:     async () => 1
// tools10: ten sequential tool calls, answered at once by the dispatcher (JSON text both ways)
#include <isolane/executor.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using isolane::codemode::Executor;
using isolane::codemode::Request;
using isolane::codemode::Result;

const char* kTools10 =
    "async () => { let s = 0; for (let i = 0; i < 10; i++) s += await tools.math.add({ a: i, b: 1 "
    "});"
    " return s }";

Request requestFor(const std::string& scenario) {
  Request r;
  r.code = scenario == "one" ? "async () => 1" : kTools10;
  if (scenario == "tools10") r.tools["math"] = {"add"};
  return r;
}

// Adds a and b of {"a":..,"b":..} without a JSON library: the bench measures isolane, not a parser.
void addTool(const isolane::codemode::ToolCall& call, isolane::codemode::ToolReply reply) {
  const std::string& j = call.argsJson;
  auto number = [&](const char* key) {
    std::size_t at = j.find(key);
    return at == std::string::npos ? 0L
                                   : std::strtol(j.c_str() + at + std::strlen(key), nullptr, 10);
  };
  reply(true, std::to_string(number("\"a\":") + number("\"b\":")));
}

const char* expected(const std::string& scenario) { return scenario == "one" ? "1" : "55"; }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void check(const Result& r, const std::string& scenario) {
  if (!r.ok() || r.json != expected(scenario)) {
    std::fprintf(stderr, "codemode_bench: %s gave %s %s\n", scenario.c_str(),
                 r.ok() ? r.json.c_str() : r.error->code.c_str(),
                 r.ok() ? "" : r.error->message.c_str());
    std::exit(1);
  }
}

void latency(Executor& executor, const std::string& scenario, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n + 50; ++i) {
    auto start = Clock::now();
    Result r = executor.execute(requestFor(scenario), addTool).get();
    double took = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    check(r, scenario);
    if (i >= 50) ms.push_back(took);  // 50 warm-up executions
  }
  std::printf(
      "{\"engine\":\"isolane\",\"via\":\"cpp\",\"scenario\":\"%s\",\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
      "\"n\":%d}\n",
      scenario.c_str(), percentile(ms, 0.5), percentile(ms, 0.99), n);
}

void throughput(Executor& executor, const std::string& scenario, double seconds, int concurrency) {
  std::atomic<long> done{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int inFlight = 0;
  std::function<void()> launch = [&] {
    executor.execute(requestFor(scenario), addTool, [&](Result r) {
      check(r, scenario);
      done.fetch_add(1);
      if (!stop.load()) {
        launch();
        return;
      }
      std::lock_guard lock(mu);
      --inFlight;
      cv.notify_all();
    });
  };
  auto start = Clock::now();
  {
    std::lock_guard lock(mu);
    inFlight = concurrency;
  }
  for (int i = 0; i < concurrency; ++i) launch();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  long counted = done.load();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return inFlight == 0; });
  std::printf(
      "{\"engine\":\"isolane\",\"via\":\"cpp\",\"scenario\":\"%s\",\"execs_per_s\":%.1f,"
      "\"concurrency\":%d,\"seconds\":%.1f}\n",
      scenario.c_str(), static_cast<double>(counted) / elapsed, concurrency, seconds);
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = "all";
  int n = 500,
      concurrency = 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double seconds = 3;
  std::size_t workers = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--scenario")
      scenario = argv[i + 1];
    else if (flag == "--n")
      n = std::atoi(argv[i + 1]);
    else if (flag == "--seconds")
      seconds = std::atof(argv[i + 1]);
    else if (flag == "--concurrency")
      concurrency = std::atoi(argv[i + 1]);
    else if (flag == "--workers")
      workers = static_cast<std::size_t>(std::atoi(argv[i + 1]));
  }
  isolane::codemode::ExecutorConfig config;
  config.workers = workers;
  Executor executor(config);
  for (const char* s : {"one", "tools10"}) {
    if (scenario != "all" && scenario != s) continue;
    latency(executor, s, n);
    throughput(executor, s, seconds, concurrency);
  }
  executor.shutdown();
  return 0;
}

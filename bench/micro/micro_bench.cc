// Micro benchmarks (Google Benchmark): the pieces a request crosses. Not part of the test suite;
// run with `build/bench/micro_bench` (bench/run reports the new-isolate-ready figure).

#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "front/front_metrics.h"
#include "front/request_reader.h"
#include "ipc/frame_codec.h"
#include "ipc/reactor.h"
#include "obs/metrics.h"
#include "pool/subprocess_backend.h"
#include "pool/worker_process.h"
#include "runtime/isolate_owner.h"
#include "util/doorbell.h"
#include "web/runtime_snapshot.h"
#include "web/web_context.h"

namespace isolane {
namespace {

AppRequest sampleRequest() {
  return AppRequest{"hello",
                    "0123456789abcdef",
                    "GET",
                    "http://localhost/items?page=2",
                    {{"host", "localhost"}, {"user-agent", "wrk"}, {"accept", "*/*"}},
                    ""};
}

void BM_EncodeRequest(benchmark::State& state) {
  AppRequest req = sampleRequest();
  for (auto _ : state) {
    auto frame = encodeRequest(42, req, 0, kDefaultMaxFrameBytes);
    benchmark::DoNotOptimize(frame);
  }
}
BENCHMARK(BM_EncodeRequest);

void BM_DecodeRequest(benchmark::State& state) {
  std::string frame = encodeRequest(42, sampleRequest(), 0, kDefaultMaxFrameBytes).value();
  FrameReader reader(kDefaultMaxFrameBytes);
  for (auto _ : state) {
    reader.append(frame.data(), frame.size());
    const wire::Frame* f = nullptr;
    std::string error;
    reader.next(&f, &error);
    benchmark::DoNotOptimize(headersFrom(f->message_as_Request()->headers()));
  }
}
BENCHMARK(BM_DecodeRequest);

// A heartbeat to a real worker process and its answer: the socketpair round trip, with the
// thread wake-ups on both sides.
void BM_WorkerRoundTrip(benchmark::State& state) {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t answered = 0;
  Reactor reactor(1, "isolane-wio");  // outlives the process
  auto proc = WorkerProcess::spawn(
      reactor.io(), {ISOLANE_BINARY, "worker"}, kDefaultMaxFrameBytes,
      [&](const wire::Frame& f, std::string_view) {
        if (f.message_type() == wire::Message::HeartbeatAck) {
          std::lock_guard<std::mutex> lock(mu);
          answered = f.message_as_HeartbeatAck()->seq();
          cv.notify_one();
        }
      },
      [](const std::string&) {});
  if (!proc) {
    state.SkipWithError(proc.error().c_str());
    return;
  }
  std::uint64_t seq = 0;
  for (auto _ : state) {
    (void)(*proc)->send(encodeHeartbeat(++seq, kDefaultMaxFrameBytes).value());
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return answered == seq; });
  }
}
BENCHMARK(BM_WorkerRoundTrip)->UseRealTime();

// A wake crossing to a parked thread: the doorbell an executor sleeps on. Round trip (ring, the
// other side wakes and rings back), so half of it is one wake.
void BM_DoorbellPingPong(benchmark::State& state) {
  Doorbell ping, pong;
  std::atomic<bool> stop{false};
  std::thread other([&] {
    for (;;) {
      ping.wait();
      if (stop) return;
      pong.ring();
    }
  });
  for (auto _ : state) {
    ping.ring();
    pong.wait();
  }
  stop = true;
  ping.ring();
  other.join();
}
BENCHMARK(BM_DoorbellPingPong)->UseRealTime();

void BM_IsolateCreate(benchmark::State& state) {
  for (auto _ : state) {
    IsolateOwner owner(IsolateLimits{});
    benchmark::DoNotOptimize(owner.isolate());
  }
}
BENCHMARK(BM_IsolateCreate)->Unit(benchmark::kMillisecond);

// A context with the web runtime installed (no snapshot yet: the runtime bundle runs each time).
void BM_ContextCreate(benchmark::State& state) {
  IsolateOwner owner(IsolateLimits{});
  for (auto _ : state) {
    ContextState cs;
    WebContext web;
    std::string error;
    if (!createWebContext(owner, cs, &web, &error)) state.SkipWithError(error.c_str());
  }
}
BENCHMARK(BM_ContextCreate)->Unit(benchmark::kMillisecond);

// A new isolate ready to serve a one-shot execution: isolate + context + web runtime.
// A new isolate with a context of the web runtime, ready to run code: from the runtime snapshot
// (what workers do), and from source (the bundle run in each context: the baseline).
// Only the making is timed: tearing the isolate down again is paused out.
void isolateReady(benchmark::State& state, const IsolateSnapshot* snapshot) {
  for (auto _ : state) {
    auto owner = std::make_unique<IsolateOwner>(IsolateLimits{}, std::function<void()>(), snapshot);
    auto cs = std::make_unique<ContextState>();
    auto web = std::make_unique<WebContext>();
    std::string error;
    if (!createWebContext(*owner, *cs, web.get(), &error)) state.SkipWithError(error.c_str());
    state.PauseTiming();
    {
      v8::Isolate::Scope scope(owner->isolate());
      web.reset();
    }
    owner.reset();
    state.ResumeTiming();
  }
}
void BM_IsolateReady(benchmark::State& state) {
  if (runtimeSnapshot() == nullptr) {
    state.SkipWithError(("no runtime snapshot: " + runtimeSnapshotProblem()).c_str());
    return;
  }
  isolateReady(state, runtimeSnapshot());
}
void BM_IsolateReadyFromSource(benchmark::State& state) { isolateReady(state, nullptr); }
BENCHMARK(BM_IsolateReadyFromSource)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IsolateReady)->Unit(benchmark::kMillisecond);

// One request through admission, the scheduler, the wire and back, answered by a worker that
// does no JavaScript (the fake test worker), so the pool's own cost shows.
void BM_AdmissionAndScheduler(benchmark::State& state) {
  MetricsRegistry metrics;
  PoolOptions options;
  options.size = 1;
  options.workerCommand = {FAKE_WORKER, "echo"};
  SubprocessBackend pool(options, metrics);
  if (Status s = pool.start({AppSpec{"x", "/x.js", {}}}); !s) {
    state.SkipWithError(s.error().c_str());
    return;
  }
  AppRequest req = sampleRequest();
  req.app = "x";
  for (auto _ : state) {
    std::promise<AppResponse> answer;
    pool.submit(req, [&](AppResponse r) { answer.set_value(std::move(r)); });
    benchmark::DoNotOptimize(answer.get_future().get());
  }
}
BENCHMARK(BM_AdmissionAndScheduler)->UseRealTime();

// What the front records per answered request: looked up by label set every time (what it did
// before AppFigures) and through an app's figures found once (what it does).
// Shared by the benchmark's threads, as the reactor threads share the server's.
FrontMetrics& sharedFrontMetrics() {
  static MetricsRegistry metrics;
  static FrontMetrics front(metrics);
  return front;
}

void BM_RecordRequestByLabels(benchmark::State& state) {
  FrontMetrics& front = sharedFrontMetrics();
  std::string app = "hello";
  for (auto _ : state) {
    front.requests.with({app, std::to_string(200)}).inc();
    front.duration.with({app}).observe(0.001);
  }
}
BENCHMARK(BM_RecordRequestByLabels)->Threads(1)->Threads(2);

void BM_RecordRequestFigures(benchmark::State& state) {
  AppFigures& figures = sharedFrontMetrics().app("hello");
  for (auto _ : state) figures.record(200, 0.001);
}
BENCHMARK(BM_RecordRequestFigures)->Threads(1)->Threads(2);

// The HTTP front's request reading: Beast's parser alone, and with RequestReader's strict checks
// on top (what the front runs), on a browser-sized head. The difference is what strictness costs.
const std::string kBrowserHead =
    "GET /api/items?page=2&sort=name HTTP/1.1\r\nHost: shop.example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n"
    "Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\n"
    "Connection: keep-alive\r\n\r\n";

void BM_ParseRequestBeastOnly(benchmark::State& state) {
  for (auto _ : state) {
    boost::beast::http::request_parser<boost::beast::http::string_body> parser;
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(kBrowserHead), ec);
    benchmark::DoNotOptimize(parser.get());
  }
}
BENCHMARK(BM_ParseRequestBeastOnly);

void BM_ParseRequestStrict(benchmark::State& state) {
  RequestReader reader(RequestLimits{});
  boost::beast::flat_buffer buffer;
  for (auto _ : state) {
    auto space = buffer.prepare(kBrowserHead.size());
    std::memcpy(space.data(), kBrowserHead.data(), kBrowserHead.size());
    buffer.commit(kBrowserHead.size());
    while (reader.parse(buffer) == RequestReader::Event::kHead) {
    }
    benchmark::DoNotOptimize(reader.head());
    reader.reset();
  }
}
BENCHMARK(BM_ParseRequestStrict);

}  // namespace
}  // namespace isolane

// Run inside node (tests/engine/test_main.cc), like the engine.
extern "C" int isolaneTestMain(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

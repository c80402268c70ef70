// The commands only the engine runs: `run` (one request through the in-process backend),
// `worker` (a worker process of the pool) and `snapshot` (the build's). See commands.h.

#include <signal.h>

#include <boost/beast/http/status.hpp>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <iostream>
#include <mutex>

#include "cli/commands.h"
#include "ipc/body_pipe.h"
#include "obs/console_log.h"
#include "server/config.h"
#include "server/server.h"
#include "util/read_file.h"
#include "web/runtime_snapshot.h"
#include "worker/worker_main.h"

namespace isolane {
namespace {

// A streamed body, read to its end (each piece acknowledged, so the app keeps producing). False
// with `error` set when the stream was cut.
bool readStream(BodyPipe& pipe, std::string* body, std::string* error) {
  // Shared with the callback, which the producer may still be running when this returns.
  struct Wake {
    std::mutex mutex;
    std::condition_variable cv;
    bool ready = false;
  };
  auto wake = std::make_shared<Wake>();
  pipe.setReady([wake] {
    std::lock_guard<std::mutex> lock(wake->mutex);
    wake->ready = true;
    wake->cv.notify_one();
  });
  std::string piece;
  for (;;) {
    switch (pipe.take(&piece)) {
      case BodyPipe::Take::kPiece:
        body->append(piece);
        pipe.acknowledge(piece.size());
        continue;
      case BodyPipe::Take::kEnd:
        pipe.setReady(nullptr);
        return true;
      case BodyPipe::Take::kFailed:
        pipe.setReady(nullptr);
        *error = piece;
        return false;
      case BodyPipe::Take::kEmpty: {
        std::unique_lock<std::mutex> lock(wake->mutex);
        wake->cv.wait(lock, [&] { return wake->ready; });
        wake->ready = false;
      }
    }
  }
}

int runOnce(const RunArgs& args) {
  ServerConfig config;
  if (Status s = applyEnvironment(config); !s) {
    std::cerr << "isolane run: " << s.error() << "\n";
    return 2;
  }
  config.executorThreads = 1;
  ConsoleLog console;
  auto backend = makeInProcessBackend(config, console);
  AppConfig app = appFromFile(args.app);
  if (Status s = backend->start({AppSpec{app.name, app.module, {}}}); !s) {
    std::cerr << "isolane run: " << s.error() << "\n";
    return 1;
  }
  AppRequest req;
  req.app = app.name;
  req.requestId = "run";
  req.method = args.method.empty() ? (args.hasData ? "POST" : "GET") : args.method;
  req.url = args.url;
  if (req.url.find("://") == std::string::npos) req.url = "http://localhost" + req.url;
  for (const std::string& h : args.headers) {
    auto colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      std::cerr << "isolane run: header '" << h << "' must look like 'Name: value'\n";
      return 2;
    }
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    req.headers.emplace_back(h.substr(0, colon), value);
  }
  if (args.hasData) {
    if (!args.data.empty() && args.data[0] == '@') {
      if (!readFile(args.data.substr(1), &req.body)) {
        std::cerr << "isolane run: cannot read " << args.data.substr(1) << "\n";
        return 2;
      }
    } else {
      req.body = args.data;
    }
  }
  AppResponse r;
  for (int i = 0; i < std::max(1, args.repeat); ++i) {
    std::promise<AppResponse> answer;
    backend->submit(req, [&](AppResponse out) { answer.set_value(std::move(out)); });
    r = answer.get_future().get();
    if (r.stream) {
      std::string error;
      if (!readStream(*r.stream, &r.body, &error)) {
        r = AppResponse::failed(FailureKind::kHandlerError,
                                "the response stream was cut: " + error);
      }
      r.stream.reset();
    }
  }
  backend->stop();
  if (r.failure != FailureKind::kNone) {
    std::cerr << "isolane run: " << failureCode(r.failure) << ": " << r.failureDetail << "\n";
    std::cout << "HTTP/1.1 " << r.status << "\n";
    return 1;
  }
  std::string reason = r.statusText;
  if (reason.empty()) {
    auto phrase =
        boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(r.status));
    reason = std::string(phrase.data(), phrase.size());
  }
  std::cout << "HTTP/1.1 " << r.status << " " << reason << "\n";
  for (auto& [name, value] : r.headers) std::cout << name << ": " << value << "\n";
  std::cout << "\n" << r.body;
  std::cout.flush();
  return 0;
}

int worker(const WorkerArgs& args) {
  // A Ctrl-C, or a SIGTERM sent to the whole process group (`timeout`, systemd's default
  // KillMode=control-group, a shell's job control), reaches the workers too; the master alone
  // decides when a worker stops (it drains, then tells each to shut down, and SIGKILLs one that
  // does not), so a worker dies on neither under its requests (node's own handlers would end it
  // at once). SIGKILL still ends it.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  WorkerProcessOptions options;
  options.fd = args.fd;
  options.statusFd = args.statusFd;
  options.blocksFd = args.blocksFd;
  options.threadFds = args.threadFds;
  options.maxFrameBytes = args.maxFrameBytes;
  options.executor.queueCapacity = static_cast<std::size_t>(args.queueCapacity);
  options.executor.loop.cpuLimit = std::chrono::milliseconds(args.cpuMs);
  options.executor.loop.wallTimeout = std::chrono::milliseconds(args.timeoutMs);
  options.executor.loop.streamIdleTimeout = std::chrono::milliseconds(args.streamIdleMs);
  options.executor.loop.streamMaxDuration = std::chrono::milliseconds(args.streamMaxMs);
  options.executor.loop.limits.heapMb = static_cast<std::size_t>(args.heapMb);
  options.threads = static_cast<std::size_t>(args.threads);
  options.reserveThread = args.reserveThread;
  options.executor.isolates.maxIsolates =
      perThreadIsolateCap(static_cast<std::size_t>(args.maxIsolates), options.threads);
  options.executor.isolates.idleTimeout = std::chrono::milliseconds(args.isolateIdleMs);
  options.sandbox = args.sandbox;
  options.probeSandbox = args.probeSandbox;
  const char* tmp = std::getenv("TMPDIR");
  options.sandboxOptions.emptyDir = tmp && *tmp ? tmp : "/tmp";
  return runWorkerProcess(options);
}

int snapshot(const std::string& path) {
  if (Status s = writeRuntimeSnapshot(path); !s) {
    std::cerr << "isolane snapshot: " << s.error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

const EngineCommands& engineCommands() {
  static const EngineCommands commands{&runOnce, &worker, &snapshot};
  return commands;
}

}  // namespace isolane

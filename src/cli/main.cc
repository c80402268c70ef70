// The `isolane` command: argument parsing and nothing else; the work is in server/ and below.

#include <signal.h>

#include <CLI/CLI.hpp>
#include <boost/beast/http/status.hpp>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

#include "obs/log.h"
#include "server/config.h"
#include "server/server.h"
#include "worker/console_log.h"
#include "worker/worker_main.h"

extern const char kDefaultConfigToml[];
extern const std::size_t kDefaultConfigTomlSize;

namespace isolane {
namespace {

std::string examplesDir() {
  if (const char* dir = std::getenv("ISOLANE_EXAMPLES_DIR"); dir && *dir) return dir;
  return ISOLANE_DEFAULT_EXAMPLES_DIR;
}

struct RunArgs {
  std::string app;
  std::string method;
  std::vector<std::string> headers;
  std::string data;
  bool hasData = false;
  std::string url = "http://localhost/";
  int repeat = 1;  // bench/run --instr: the same request N times, the last one printed
};

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
      std::ifstream in(args.data.substr(1), std::ios::binary);
      if (!in) {
        std::cerr << "isolane run: cannot read " << args.data.substr(1) << "\n";
        return 2;
      }
      std::ostringstream ss;
      ss << in.rdbuf();
      req.body = ss.str();
    } else {
      req.body = args.data;
    }
  }
  AppResponse r;
  for (int i = 0; i < std::max(1, args.repeat); ++i) {
    std::promise<AppResponse> answer;
    backend->submit(req, [&](AppResponse out) { answer.set_value(std::move(out)); });
    r = answer.get_future().get();
  }
  backend->stop();
  if (r.failure != FailureKind::kNone) {
    std::cerr << "isolane run: " << failureCode(r.failure) << ": " << r.failureDetail << "\n";
    std::cout << "HTTP/1.1 " << r.status << "\n";
    return 1;
  }
  std::string reason = r.statusText;
  if (reason.empty()) {
    auto phrase = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(r.status));
    reason = std::string(phrase.data(), phrase.size());
  }
  std::cout << "HTTP/1.1 " << r.status << " " << reason << "\n";
  for (auto& [name, value] : r.headers) std::cout << name << ": " << value << "\n";
  std::cout << "\n" << r.body;
  std::cout.flush();
  return 0;
}

struct ServeArgs {
  std::vector<std::string> apps;
  std::string configFile;
  std::string listen;
};

int serve(const ServeArgs& args) {
  Result<ServerConfig> loaded = ServerConfig{};
  if (!args.configFile.empty()) {
    if (!args.apps.empty()) {
      std::cerr << "isolane serve: give either app files or --config, not both\n";
      return 2;
    }
    loaded = loadConfigFile(args.configFile);
  } else if (args.apps.empty()) {
    loaded = parseConfig(std::string(kDefaultConfigToml, kDefaultConfigTomlSize), examplesDir(),
                         "embedded examples config");
  } else {
    ServerConfig config;
    for (const std::string& file : args.apps) {
      AppConfig app = appFromFile(file);
      if (args.apps.size() > 1) app.route = "/" + app.name;
      for (const AppConfig& other : config.apps) {
        if (other.name == app.name) {
          std::cerr << "isolane serve: two apps named '" << app.name
                    << "'; use a config file to mount them\n";
          return 2;
        }
      }
      config.apps.push_back(std::move(app));
    }
    loaded = std::move(config);
  }
  if (!loaded) {
    std::cerr << "isolane serve: " << loaded.error() << "\n";
    return 2;
  }
  ServerConfig config = std::move(loaded.value());
  if (Status s = applyEnvironment(config); !s) {
    std::cerr << "isolane serve: " << s.error() << "\n";
    return 2;
  }
  if (!args.listen.empty()) {
    if (Status s = parseListen(args.listen, config); !s) {
      std::cerr << "isolane serve: " << s.error() << "\n";
      return 2;
    }
  }

  // Signals are taken by sigwait on this thread; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Server server(std::move(config));
  if (Status s = server.start(); !s) {
    std::cerr << "isolane serve: " << s.error() << "\n";
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  logEvent(Level::kInfo, "shutting down",
           {{"signal", strsignal(sig)},
            {"drain_ms", static_cast<std::int64_t>(server.config().shutdownDrain.count())}});
  server.stop();
  logEvent(Level::kInfo, "stopped");
  return 0;
}

}  // namespace
}  // namespace isolane

int main(int argc, char** argv) {
  using namespace isolane;
  CLI::App cli{"isolane: serve JavaScript fetch handlers from a pool of V8 isolates"};
  cli.require_subcommand(1);

  RunArgs run;
  CLI::App* runCmd = cli.add_subcommand("run", "Run one request through an app and print the response");
  runCmd->add_option("app", run.app, "the app's ES module file")->required()->check(CLI::ExistingFile);
  runCmd->add_option("url", run.url, "request URL (default http://localhost/)");
  runCmd->add_option("-X,--request", run.method, "request method (default GET, or POST with -d)");
  runCmd->add_option("-H,--header", run.headers, "request header 'Name: value' (repeatable)");
  runCmd->add_option("-d,--data", run.data, "request body; @FILE reads it from a file")
      ->each([&](const std::string&) { run.hasData = true; });
  runCmd->add_option("--repeat", run.repeat, "run the request N times, print the last answer")
      ->check(CLI::Range(1, 1'000'000));

  ServeArgs serveArgs;
  CLI::App* serveCmd = cli.add_subcommand(
      "serve", "Serve apps over HTTP/1.1 (no arguments: the bundled examples)");
  serveCmd->add_option("apps", serveArgs.apps, "app module files (one: mounted at /)");
  serveCmd->add_option("-c,--config", serveArgs.configFile, "TOML config file")
      ->check(CLI::ExistingFile);
  serveCmd->add_option("-l,--listen", serveArgs.listen, "HOST:PORT (default 127.0.0.1:8080)");

  // `isolane worker`: what the pool's children run; not for people, so not in --help.
  WorkerProcessOptions worker;
  int slot = 0;
  long long cpuMs = 30'000, timeoutMs = 60'000, heapMb = 128, queueCapacity = 4096;
  std::size_t maxFrame = 0;
  CLI::App* workerCmd = cli.add_subcommand("worker", "run as a worker process of the pool");
  workerCmd->group("");
  workerCmd->add_option("--fd", worker.fd, "socket descriptor");
  workerCmd->add_option("--slot", slot, "slot index");
  workerCmd->add_option("--cpu-ms", cpuMs);
  workerCmd->add_option("--timeout-ms", timeoutMs);
  workerCmd->add_option("--heap-mb", heapMb);
  workerCmd->add_option("--queue-capacity", queueCapacity);
  workerCmd->add_option("--max-frame-bytes", maxFrame);

  CLI11_PARSE(cli, argc, argv);
  if (workerCmd->parsed()) {
    initLogging("worker-" + std::to_string(slot));
    worker.maxFrameBytes = maxFrame;
    worker.executor.queueCapacity = static_cast<std::size_t>(queueCapacity);
    worker.executor.loop.cpuLimit = std::chrono::milliseconds(cpuMs);
    worker.executor.loop.wallTimeout = std::chrono::milliseconds(timeoutMs);
    worker.executor.loop.limits.heapMb = static_cast<std::size_t>(heapMb);
    return runWorkerProcess(worker);
  }
  initLogging("server");
  if (runCmd->parsed()) return runOnce(run);
  return serve(serveArgs);
}

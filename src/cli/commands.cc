// The `isolane` command line: parsing, `serve`, and handing the JavaScript-running commands to
// the engine (see commands.h).

#include "cli/commands.h"

#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/codemode_commands.h"
#include "cli/sandbox_check.h"
#include "cli/service_notify.h"
#include "cli/stop_signals.h"
#include "obs/log.h"
#include "server/config.h"
#include "server/engine_command.h"
#include "server/server.h"

extern const char kDefaultConfigToml[];
extern const std::size_t kDefaultConfigTomlSize;

namespace isolane {
namespace {

std::string examplesDir() {
  if (const char* dir = std::getenv("ISOLANE_EXAMPLES_DIR"); dir && *dir) return dir;
  return ISOLANE_DEFAULT_EXAMPLES_DIR;
}

struct ServeArgs {
  std::vector<std::string> apps;
  std::string configFile;
  std::string listen;
};

int serve(const ServeArgs& args, const std::vector<std::string>& commandLine,
          const EngineCommands* engine) {
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

  if (config.backend == "inprocess" && engine == nullptr) {
    // The in-process backend runs JavaScript in this process: that process is the engine.
    std::string why = execEngine(commandLine);  // returns only if node could not be started
    std::cerr << "isolane serve: " << why << "\n";
    return 1;
  }
  StopSignals signals;
  Server server(std::move(config));
  if (Status s = server.start(); !s) {
    std::cerr << "isolane serve: " << s.error() << "\n";
    return 1;
  }
  ServiceNotifier notifier([&server] { return server.ready(); });
  int sig = signals.wait();
  logEvent(Level::kInfo, "shutting down",
           {{"signal", strsignal(sig)},
            {"drain_ms", static_cast<std::int64_t>(server.config().shutdownDrain.count())}});
  notifier.stopping();
  server.stop();
  logEvent(Level::kInfo, "stopped");
  return 0;
}

}  // namespace

int runCommandLine(const std::vector<std::string>& args, const EngineCommands* engine) {
  CLI::App cli{"isolane: serve JavaScript fetch handlers from a pool of V8 isolates", "isolane"};
  cli.require_subcommand(1);

  RunArgs run;
  CLI::App* runCmd =
      cli.add_subcommand("run", "Run one request through an app and print the response");
  runCmd->add_option("app", run.app, "the app's ES module file")
      ->required()
      ->check(CLI::ExistingFile);
  runCmd->add_option("url", run.url, "request URL (default http://localhost/)");
  runCmd->add_option("-X,--request", run.method, "request method (default GET, or POST with -d)");
  runCmd->add_option("-H,--header", run.headers, "request header 'Name: value' (repeatable)");
  runCmd->add_option("-d,--data", run.data, "request body; @FILE reads it from a file")
      ->each([&](const std::string&) { run.hasData = true; });
  runCmd->add_option("--repeat", run.repeat, "run the request N times, print the last answer")
      ->check(CLI::Range(1, 1'000'000));

  ServeArgs serveArgs;
  CLI::App* serveCmd =
      cli.add_subcommand("serve", "Serve apps over HTTP/1.1 (no arguments: the bundled examples)");
  serveCmd->add_option("apps", serveArgs.apps, "app module files (one: mounted at /)");
  serveCmd->add_option("-c,--config", serveArgs.configFile, "TOML config file")
      ->check(CLI::ExistingFile);
  serveCmd->add_option("-l,--listen", serveArgs.listen, "HOST:PORT (default 127.0.0.1:8080)");

  ExecArgs execArgs;
  ExecutorArgs executorArgs;
  CodemodeCommands codemode = addCodemodeCommands(cli, execArgs, executorArgs);

  CLI::App* sandboxCheckCmd = cli.add_subcommand(
      "sandbox-check",
      "Spawn one worker as serve does and probe its sandbox from inside (exit 0: it holds)");
  // `isolane worker`: what the pool's children run; not for people, so not in --help.
  WorkerArgs worker;
  CLI::App* workerCmd = cli.add_subcommand("worker", "run as a worker process of the pool");
  workerCmd->group("");
  workerCmd->add_option("--fd", worker.fd, "socket descriptor");
  workerCmd->add_option("--slot", worker.slot, "slot index");
  workerCmd->add_option("--status-fd", worker.statusFd, "status page descriptor");
  workerCmd->add_option("--blocks-fd", worker.blocksFd, "stream blocks descriptor");
  workerCmd->add_option("--thread-fds", worker.threadFds, "sockets of executor threads 1, 2, ...")
      ->delimiter(',');
  workerCmd->add_option("--cpu-ms", worker.cpuMs);
  workerCmd->add_option("--timeout-ms", worker.timeoutMs);
  workerCmd->add_option("--stream-idle-ms", worker.streamIdleMs);
  workerCmd->add_option("--stream-max-ms", worker.streamMaxMs);
  workerCmd->add_option("--heap-mb", worker.heapMb);
  workerCmd->add_option("--queue-capacity", worker.queueCapacity);
  workerCmd->add_option("--max-frame-bytes", worker.maxFrameBytes);
  workerCmd->add_option("--threads", worker.threads)->check(CLI::Range(1, 64));
  workerCmd->add_option("--sandbox", worker.sandbox);
  workerCmd->add_option("--reserve-thread", worker.reserveThread);
  workerCmd->add_option("--probe-sandbox", worker.probeSandbox);
  workerCmd->add_option("--max-isolates", worker.maxIsolates)->check(CLI::Range(1, 4096));
  workerCmd->add_option("--isolate-idle-ms", worker.isolateIdleMs)
      ->check(CLI::Range(1, 86'400'000));

  // `isolane snapshot OUT`: the build makes the web runtime's startup snapshot with it, under
  // the node the workers run (web/runtime_snapshot.h); not for people either.
  std::string snapshotPath;
  CLI::App* snapshotCmd =
      cli.add_subcommand("snapshot", "write the web runtime's startup snapshot to a file");
  snapshotCmd->group("");
  snapshotCmd->add_option("out", snapshotPath, "the file to write")->required();

  std::vector<std::string> argvStrings = {"isolane"};
  argvStrings.insert(argvStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argvStrings) argv.push_back(a.data());
  try {
    cli.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  if ((workerCmd->parsed() || runCmd->parsed() || snapshotCmd->parsed()) && engine == nullptr) {
    // JavaScript runs in the engine: become it, with the same arguments.
    std::string why = execEngine(args);  // returns only if node could not be started
    std::cerr << "isolane: " << why << "\n";
    return 1;
  }
  if (workerCmd->parsed()) {
    initLogging("worker-" + std::to_string(worker.slot));
    return engine->worker(worker);
  }
  if (codemode.exec->parsed() || codemode.executor->parsed() || serveCmd->parsed() ||
      sandboxCheckCmd->parsed()) {
    // The commands that spawn workers. The master is not dumpable: a worker that runs as the
    // same user (an unprivileged master: systemd's DynamicUser, the Dockerfile's user) can then
    // neither read its /proc/PID/environ or mem, nor trace it, nor take its descriptors with
    // pidfd_getfd, each of which the kernel refuses for a non-dumpable process to anyone without
    // CAP_SYS_PTRACE. Nor is there a core file to hold clients' data. (serve with the in-process
    // backend becomes the engine, which runs no worker process.)
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  }
  if (codemode.exec->parsed()) {
    // The result is the output: the pool's events only when asked for.
    setenv("ISOLANE_LOG_LEVEL", "warn", /*overwrite=*/0);
    initLogging("exec");
    return execCommand(execArgs);
  }
  initLogging("server");
  if (sandboxCheckCmd->parsed()) return sandboxCheck();
  if (codemode.executor->parsed()) return executorCommand(executorArgs);
  if (snapshotCmd->parsed()) return engine->snapshot(snapshotPath);
  if (runCmd->parsed()) return engine->run(run);
  return serve(serveArgs, args, engine);
}

}  // namespace isolane

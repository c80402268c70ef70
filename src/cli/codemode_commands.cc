#include "cli/codemode_commands.h"

#include <future>
#include <iostream>

#include "cli/stop_signals.h"
#include "exec/exec_daemon.h"
#include "exec/exec_json.h"
#include "obs/log.h"
#include "server/config.h"
#include "server/executor_config.h"
#include "util/read_file.h"

namespace isolane {

CodemodeCommands addCodemodeCommands(CLI::App& cli, ExecArgs& exec, ExecutorArgs& executor) {
  CLI::App* execCmd = cli.add_subcommand(
      "exec", "Run one code-mode execution (an async arrow function) and print its result as JSON");
  execCmd
      ->add_option("file", exec.file, "the code: an async arrow function, optionally after imports")
      ->required()
      ->check(CLI::ExistingFile);
  execCmd->add_option("--module", exec.modules,
                      "NAME=FILE: a module the code may import as NAME (.json: a JSON module)");
  execCmd->add_option("--timeout-ms", exec.timeoutMs, "run clock (default 30000)")
      ->check(CLI::Range(1u, ExecLimits::kMaxTimeoutMs));
  execCmd->add_option("--memory-mb", exec.memoryMb, "the isolate's heap (default 128)")
      ->check(CLI::Range(ExecLimits::kMinMemoryMb, ExecLimits::kMaxMemoryMb));
  execCmd->add_flag("--native-outbound", exec.nativeOutbound,
                    "let fetch() reach public addresses (default: disabled)");

  CLI::App* executorCmd = cli.add_subcommand(
      "executor", "Serve code mode over HTTP and WebSocket (POST /v1/execute, /v1/session)");
  executorCmd->add_option("-l,--listen", executor.listen, "HOST:PORT (default 127.0.0.1:8090)");
  executorCmd->add_option("-c,--config", executor.configFile, "TOML file with an [executor] table")
      ->check(CLI::ExistingFile);
  return {execCmd, executorCmd};
}

int execCommand(const ExecArgs& args) {
  ExecutionSpec spec;
  if (!readFile(args.file, &spec.code)) {
    std::cerr << "isolane exec: cannot read " << args.file << "\n";
    return 2;
  }
  for (const std::string& m : args.modules) {
    auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "isolane exec: --module " << m << ": expected NAME=FILE\n";
      return 2;
    }
    GuestModule module{m.substr(0, eq), "", false};
    std::string path = m.substr(eq + 1);
    if (!readFile(path, &module.source)) {
      std::cerr << "isolane exec: cannot read " << path << "\n";
      return 2;
    }
    module.json = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
    if (module.json && !nlohmann::json::accept(module.source)) {
      std::cerr << "isolane exec: " << path << " is not JSON\n";
      return 2;
    }
    spec.modules.push_back(std::move(module));
  }
  if (args.timeoutMs) spec.timeoutMs = args.timeoutMs;
  if (args.memoryMb) spec.memoryMb = args.memoryMb;
  if (args.nativeOutbound) spec.outbound = OutboundMode::kNative;
  if (auto problem = validateExecutionSpec(spec)) {
    std::cerr << "isolane exec: " << *problem << "\n";
    return 2;
  }
  ExecutorSettings settings;
  settings.workers = 1;
  MetricsRegistry metrics;
  ExecPool pool(execPoolOptions(settings), metrics);
  std::promise<ExecutionOutcome> promise;
  pool.execute(std::move(spec), nullptr,
               [&promise](ExecutionOutcome o) { promise.set_value(std::move(o)); });
  ExecutionOutcome outcome = promise.get_future().get();
  pool.shutdown(std::chrono::milliseconds(0));
  std::cout << "{" << outcomeMembers(outcome) << "}\n";
  return outcome.ok() ? 0 : 1;
}

int executorCommand(const ExecutorArgs& args) {
  Result<ExecutorSettings> loaded = ExecutorSettings{};
  if (!args.configFile.empty()) loaded = loadExecutorConfig(args.configFile);
  if (!loaded) {
    std::cerr << "isolane executor: " << loaded.error() << "\n";
    return 2;
  }
  ExecutorSettings settings = std::move(loaded.value());
  applyExecutorEnvironment(settings);
  if (!args.listen.empty()) {
    if (Status ok = parseHostPort(args.listen, &settings.daemon.host, &settings.daemon.port); !ok) {
      std::cerr << "isolane executor: " << ok.error() << "\n";
      return 2;
    }
  }
  StopSignals signals;
  MetricsRegistry metrics;
  ExecPool pool(execPoolOptions(settings), metrics);
  ExecDaemon daemon(settings.daemon, pool, metrics);
  if (Status s = daemon.start(); !s) {
    std::cerr << "isolane executor: " << s.error() << "\n";
    return 1;
  }
  int sig = signals.wait();
  logEvent(Level::kInfo, "shutting down",
           {{"signal", strsignal(sig)},
            {"drain_ms", static_cast<std::int64_t>(settings.shutdownDrain.count())}});
  daemon.stopAccepting();
  pool.shutdown(settings.shutdownDrain);
  daemon.stop();
  logEvent(Level::kInfo, "stopped");
  return 0;
}

}  // namespace isolane

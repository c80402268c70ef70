#include "server/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "server/toml_values.h"
#include "util/read_file.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;

Status readEnvInt(const char* name, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  const char* raw = std::getenv(name);
  if (!raw || !*raw) return Status::success();
  char* end = nullptr;
  long long v = std::strtoll(raw, &end, 10);
  if (*end != '\0' || v < lo || v > hi) {
    return Error{std::string(name) + "=" + raw + ": expected an integer from " +
                 std::to_string(lo) + " to " + std::to_string(hi)};
  }
  out = v;
  return Status::success();
}

}  // namespace

namespace {

Status parseHostPort(const std::string& text, std::string& host, std::uint16_t& port) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return Error{"'" + text + "': expected HOST:PORT"};
  std::string h = text.substr(0, colon);
  std::string p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "127.0.0.1";
  char* end = nullptr;
  long n = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || n < 0 || n > 65535) {
    return Error{"address '" + text + "': port must be 0-65535"};
  }
  host = h;
  port = static_cast<std::uint16_t>(n);
  return Status::success();
}

}  // namespace

Status parseAdminListen(const std::string& text, ServerConfig& config) {
  if (text.empty() || text == "off") {
    config.adminHost.clear();
    return Status::success();
  }
  return parseHostPort(text, config.adminHost, config.adminPort);
}

namespace {

Status readTrustedProxies(const toml::node& node, ServerConfig& config) {
  const toml::array* list = node.as_array();
  if (!list) return Error{"expected an array of addresses"};
  config.trustedProxies.clear();
  for (const toml::node& item : *list) {
    std::optional<std::string> text = item.value<std::string>();
    if (!text) return Error{"expected an array of addresses"};
    unsigned char bytes[sizeof(in6_addr)];
    if (inet_pton(AF_INET, text->c_str(), bytes) != 1 &&
        inet_pton(AF_INET6, text->c_str(), bytes) != 1) {
      return Error{"'" + *text + "' is not an IPv4 or IPv6 address"};
    }
    config.trustedProxies.push_back(*text);
  }
  return Status::success();
}

}  // namespace

Status parseHostPort(const std::string& text, std::string* hostOut, std::uint16_t* portOut) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return Error{"--listen '" + text + "': expected HOST:PORT"};
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return Error{"listen address '" + text + "': port must be 0-65535"};
  }
  *hostOut = host;
  *portOut = static_cast<std::uint16_t>(p);
  return Status::success();
}

Status parseListen(const std::string& text, ServerConfig& config) {
  return parseHostPort(text, &config.listenHost, &config.listenPort);
}

AppConfig appFromFile(const std::string& path) {
  AppConfig app;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  app.name = p.stem().string();
  if (app.name.empty()) app.name = "app";
  app.module = p.lexically_normal().string();
  return app;
}

Result<ServerConfig> parseConfig(const std::string& text, const std::string& baseDir,
                                 const std::string& sourceName) {
  toml::table root;
  try {
    root = toml::parse(text, sourceName);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << sourceName << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
        << e.description();
    return Error{msg.str()};
  }
  ServerConfig config;
  if (const toml::table* server = root["server"].as_table()) {
    std::string where = sourceName + " [server]";
    if (auto listen = (*server)["listen"].value<std::string>()) {
      if (Status s = parseListen(*listen, config); !s) return Error{where + ": " + s.error()};
    }
    Status checks[] = {
        readInt(*server, "reactor_threads", config.reactorThreads, 1, 64, where),
        readInt(*server, "executor_threads", config.executorThreads, 1, 64, where),
        readInt(*server, "max_isolates", config.maxIsolates, 1, 4096, where),
        readMs(*server, "isolate_idle_ms", config.isolateIdleTimeout, where),
        readInt(*server, "max_body_bytes", config.maxBodyBytes, 0, 1LL << 32, where),
        readInt(*server, "client_buffer_mb", config.clientBufferMb, 16, 1 << 20, where),
        readInt(*server, "max_header_bytes", config.maxHeaderBytes, 1024, 1 << 20, where),
        readInt(*server, "max_connections", config.maxConnections, 0, 1 << 20, where),
        readInt(*server, "heap_limit_mb", config.heapLimitMb, 16, 16384, where),
        readInt(*server, "queue_capacity", config.queueCapacity, 1, 1 << 20, where),
        readMs(*server, "header_timeout_ms", config.headerTimeout, where),
        readMs(*server, "body_timeout_ms", config.bodyTimeout, where),
        readMs(*server, "body_read_timeout_ms", config.bodyReadTimeout, where),
        readMs(*server, "idle_timeout_ms", config.idleTimeout, where),
        readMs(*server, "send_timeout_ms", config.sendTimeout, where),
        readMs(*server, "request_cpu_ms", config.requestCpuLimit, where),
        readMs(*server, "request_timeout_ms", config.requestTimeout, where),
        readMs(*server, "stream_idle_timeout_ms", config.streamIdleTimeout, where),
        readMs(*server, "stream_max_ms", config.streamMaxDuration, where),
        readMs(*server, "shutdown_drain_ms", config.shutdownDrain, where),
        readMs(*server, "drain_idle_ms", config.drainIdle, where),
    };
    for (Status& s : checks) {
      if (!s) return Error{s.error()};
    }
  }
  if (const toml::table* server = root["server"].as_table()) {
    if (auto dir = (*server)["state_dir"].value<std::string>()) config.stateDir = *dir;
    if (auto dir = (*server)["code_cache_dir"].value<std::string>()) config.codeCacheDir = *dir;
    if (const toml::node* proxies = server->get("trusted_proxies")) {
      if (Status s = readTrustedProxies(*proxies, config); !s) {
        return Error{sourceName + " [server] trusted_proxies: " + s.error()};
      }
    }
    if (auto admin = (*server)["admin_listen"].value<std::string>()) {
      if (Status s = parseAdminListen(*admin, config); !s) {
        return Error{sourceName + " [server] admin_listen: " + s.error()};
      }
    }
  }
  if (const toml::table* pool = root["pool"].as_table()) {
    std::string where = sourceName + " [pool]";
    std::int64_t wedgedTurn = config.pool.wedgedTurn.count();
    std::int64_t shedDelay = config.pool.shedDelay.count();
    std::int64_t quarantine = config.pool.quarantine.count();
    std::int64_t crashWindow = config.pool.crashBudget.window.count();
    std::int64_t crashCooldown = config.pool.crashBudget.cooldown.count();
    if (auto backend = (*pool)["backend"].value<std::string>()) config.backend = *backend;
    config.pool.sandbox = (*pool)["sandbox"].value_or(config.pool.sandbox);
    config.pool.reserveThread = (*pool)["reserve_thread"].value_or(config.pool.reserveThread);
    Status checks[] = {
        readInt(*pool, "size", config.pool.size, 1, 16, where),
        readInt(*pool, "max_inflight", config.pool.maxInflight, 1, 4096, where),
        readInt(*pool, "worker_max_inflight", config.pool.workerMaxInflight, 1, 65536, where),
        readInt(*pool, "max_queue", config.pool.maxQueue, 0, 1 << 20, where),
        readInt(*pool, "stream_max_inflight", config.pool.streamMaxInflight, 1, 1 << 20, where),
        readInt(*pool, "streaming_lane", config.pool.streamingLane, 0, 15, where),
        readMs(*pool, "queue_timeout_ms", config.pool.queueTimeout, where),
        readInt(*pool, "wedged_turn_ms", wedgedTurn, 0, 60'000, where),
        readInt(*pool, "shed_delay_ms", shedDelay, 0, 60'000, where),
        readInt(*pool, "quarantine_ms", quarantine, 500, 120'000, where),
        readInt(*pool, "crash_budget", config.pool.crashBudget.maxCrashes, 1, 1000, where),
        readInt(*pool, "crash_window_ms", crashWindow, 1000, 3'600'000, where),
        readInt(*pool, "crash_cooldown_ms", crashCooldown, 500, 3'600'000, where),
    };
    for (Status& s : checks) {
      if (!s) return Error{s.error()};
    }
    if (const toml::node* share = pool->get("max_wedged_share")) {
      std::optional<double> v = share->value<double>();
      if (!v || !(*v >= 0.0 && *v <= 1.0)) {
        return Error{where + " max_wedged_share: expected a number from 0 to 1"};
      }
      config.pool.maxWedgedShare = *v;
    }
    config.pool.wedgedTurn = std::chrono::milliseconds(wedgedTurn);
    config.pool.shedDelay = std::chrono::milliseconds(shedDelay);
    config.pool.quarantine = std::chrono::milliseconds(quarantine);
    config.pool.crashBudget.window = std::chrono::milliseconds(crashWindow);
    config.pool.crashBudget.cooldown = std::chrono::milliseconds(crashCooldown);
    if (config.backend != "subprocess" && config.backend != "inprocess") {
      return Error{where + ": backend must be \"subprocess\" or \"inprocess\", not \"" +
                   config.backend + "\""};
    }
  }
  const toml::array* apps = root["app"].as_array();
  if (!apps || apps->empty()) {
    return Error{sourceName + ": no [[app]] entries; add at least one with name, module, route"};
  }
  for (std::size_t i = 0; i < apps->size(); ++i) {
    const toml::table* t = (*apps)[i].as_table();
    std::string where = sourceName + " [[app]] #" + std::to_string(i + 1);
    if (!t) return Error{where + ": must be a table"};
    AppConfig app;
    auto name = (*t)["name"].value<std::string>();
    auto module = (*t)["module"].value<std::string>();
    if (!name || name->empty()) return Error{where + ": 'name' is required"};
    if (!module || module->empty()) return Error{where + " (" + *name + "): 'module' is required"};
    app.name = *name;
    fs::path m(*module);
    app.module = (m.is_absolute() ? m : fs::path(baseDir) / m).lexically_normal().string();
    app.route = (*t)["route"].value_or(std::string("/"));
    if (app.route.empty() || app.route[0] != '/') {
      return Error{where + " (" + app.name + "): 'route' must start with '/'"};
    }
    app.host = (*t)["host"].value_or(std::string());
    app.stripPrefix = (*t)["strip_prefix"].value_or(true);
    app.streaming = (*t)["streaming"].value_or(false);
    std::string appWhere = where + " (" + app.name + ")";
    std::string process = (*t)["process"].value_or(std::string("shared"));
    if (process != "shared" && process != "own") {
      return Error{appWhere + ": 'process' is \"shared\" (the default) or \"own\""};
    }
    app.ownProcess = process == "own";
    if (!app.ownProcess && t->contains("workers")) {
      return Error{appWhere + ": 'workers' is for an app with process = \"own\""};
    }
    Status limits[] = {
        readInt(*t, "heap_limit_mb", app.heapLimitMb, 16, 16384, appWhere),
        readMs(*t, "request_cpu_ms", app.requestCpuLimit, appWhere),
        readInt(*t, "workers", app.ownWorkers, 1, 16, appWhere),
    };
    for (Status& s : limits) {
      if (!s) return Error{s.error()};
    }
    if (const toml::table* vars = (*t)["vars"].as_table()) {
      for (const auto& [key, value] : *vars) {
        auto s = value.value<std::string>();
        if (!s)
          return Error{where + " (" + app.name + "): vars." + std::string(key.str()) +
                       " must be a string"};
        app.vars.emplace_back(std::string(key.str()), *s);
      }
    }
    if (const toml::array* allow = (*t)["fetch_allow"].as_array()) {
      for (const auto& entry : *allow) {
        auto s = entry.value<std::string>();
        if (!s) return Error{where + " (" + app.name + "): fetch_allow holds strings"};
        app.fetchAllow.push_back(*s);
      }
    }
    if (const toml::table* services = (*t)["services"].as_table()) {
      for (const auto& [key, value] : *services) {
        auto s = value.value<std::string>();
        if (!s)
          return Error{where + " (" + app.name + "): services." + std::string(key.str()) +
                       " must name an app"};
        app.services.emplace_back(std::string(key.str()), *s);
      }
    }
    for (const AppConfig& other : config.apps) {
      if (other.name == app.name) return Error{where + ": duplicate app name '" + app.name + "'"};
    }
    config.apps.push_back(std::move(app));
  }
  for (const AppConfig& app : config.apps) {
    for (const auto& [binding, target] : app.services) {
      const AppConfig* found = nullptr;
      for (const AppConfig& other : config.apps) {
        if (other.name == target) found = &other;
      }
      if (!found) {
        return Error{sourceName + ": app '" + app.name + "' binds " + binding +
                     " to an app named '" + target + "', which is not configured"};
      }
      // A binding calls the other app inside the same worker process.
      if ((app.ownProcess || found->ownProcess) && target != app.name) {
        return Error{sourceName + ": app '" + app.name + "' binds " + binding + " to '" + target +
                     "', but " + (app.ownProcess ? "'" + app.name + "'" : "'" + target + "'") +
                     " runs in processes of its own (process = \"own\"), and a binding calls "
                     "an app of the same process"};
      }
    }
  }
  return config;
}

Result<ServerConfig> loadConfigFile(const std::string& path) {
  std::string text;
  if (!readFile(path, &text)) return Error{"cannot read config file " + path};
  std::error_code ec;
  std::string base = fs::absolute(path, ec).parent_path().string();
  return parseConfig(text, base, path);
}

std::string effectiveCodeCacheDir(const ServerConfig& config) {
  if (config.codeCacheDir == "off") return {};
  if (!config.codeCacheDir.empty()) return config.codeCacheDir;
  return config.stateDir.empty() ? std::string() : config.stateDir + "/code-cache";
}

std::size_t effectiveMaxConnections(const ServerConfig& config) {
  if (config.maxConnections != 0) return config.maxConnections;
  return config.pool.streamMaxInflight + config.pool.maxInflight + 1024;
}

Status applyEnvironment(ServerConfig& config) {
  if (const char* listen = std::getenv("ISOLANE_LISTEN"); listen && *listen) {
    if (Status s = parseListen(listen, config); !s) return Error{"ISOLANE_LISTEN: " + s.error()};
  }
  std::int64_t body = static_cast<std::int64_t>(config.maxBodyBytes);
  std::int64_t cpu = config.requestCpuLimit.count();
  std::int64_t timeout = config.requestTimeout.count();
  std::int64_t heap = static_cast<std::int64_t>(config.heapLimitMb);
  std::int64_t executors = static_cast<std::int64_t>(config.executorThreads);
  std::int64_t reactors = static_cast<std::int64_t>(config.reactorThreads);
  std::int64_t isolates = static_cast<std::int64_t>(config.maxIsolates);
  std::int64_t isolateIdle = config.isolateIdleTimeout.count();
  std::int64_t connections = static_cast<std::int64_t>(config.maxConnections);
  std::int64_t streamIdle = config.streamIdleTimeout.count();
  std::int64_t streamMax = config.streamMaxDuration.count();
  std::int64_t drain = config.shutdownDrain.count();
  std::int64_t drainIdle = config.drainIdle.count();
  Status checks[] = {
      readEnvInt("ISOLANE_SHUTDOWN_DRAIN_MS", 0, 3'600'000, drain),
      readEnvInt("ISOLANE_DRAIN_IDLE_MS", 0, 3'600'000, drainIdle),
      readEnvInt("ISOLANE_MAX_BODY_BYTES", 0, 1LL << 32, body),
      readEnvInt("ISOLANE_MAX_CONNECTIONS", 0, 1 << 20, connections),
      readEnvInt("ISOLANE_STREAM_IDLE_TIMEOUT_MS", 1, 86'400'000, streamIdle),
      readEnvInt("ISOLANE_STREAM_MAX_MS", 1, 7 * 86'400'000LL, streamMax),
      readEnvInt("ISOLANE_REQUEST_CPU_MS", 1, 86'400'000, cpu),
      readEnvInt("ISOLANE_REQUEST_TIMEOUT_MS", 1, 86'400'000, timeout),
      readEnvInt("ISOLANE_HEAP_LIMIT_MB", 16, 16384, heap),
      readEnvInt("ISOLANE_EXECUTOR_THREADS", 1, 64, executors),
      readEnvInt("ISOLANE_REACTOR_THREADS", 1, 64, reactors),
      readEnvInt("ISOLANE_MAX_ISOLATES", 1, 4096, isolates),
      readEnvInt("ISOLANE_ISOLATE_IDLE_MS", 1, 86'400'000, isolateIdle),
  };
  for (Status& s : checks) {
    if (!s) return s;
  }
  // Pool numbers: clamped to their ranges, as documented, rather than refused.
  auto clampEnv = [](const char* name, std::int64_t lo, std::int64_t hi, std::size_t& out) {
    const char* raw = std::getenv(name);
    if (!raw || !*raw) return Status::success();
    char* end = nullptr;
    long long v = std::strtoll(raw, &end, 10);
    if (*end != '\0') return Status(Error{std::string(name) + "=" + raw + ": expected an integer"});
    out = static_cast<std::size_t>(std::clamp<long long>(v, lo, hi));
    return Status::success();
  };
  std::size_t queueTimeout = static_cast<std::size_t>(config.pool.queueTimeout.count());
  std::size_t wedgedTurn = static_cast<std::size_t>(config.pool.wedgedTurn.count());
  std::size_t shedDelay = static_cast<std::size_t>(config.pool.shedDelay.count());
  Status poolChecks[] = {
      clampEnv("ISOLANE_POOL_SIZE", 1, 16, config.pool.size),
      clampEnv("ISOLANE_POOL_MAX_INFLIGHT", 1, 4096, config.pool.maxInflight),
      clampEnv("ISOLANE_WORKER_MAX_INFLIGHT", 1, 65536, config.pool.workerMaxInflight),
      clampEnv("ISOLANE_POOL_MAX_QUEUE", 0, 1 << 20, config.pool.maxQueue),
      clampEnv("ISOLANE_STREAM_MAX_INFLIGHT", 1, 1 << 20, config.pool.streamMaxInflight),
      clampEnv("ISOLANE_STREAMING_LANE", 0, 15, config.pool.streamingLane),
      clampEnv("ISOLANE_POOL_QUEUE_TIMEOUT_MS", 1, 86'400'000, queueTimeout),
      clampEnv("ISOLANE_WEDGED_TURN_MS", 0, 60'000, wedgedTurn),
      clampEnv("ISOLANE_SHED_DELAY_MS", 0, 60'000, shedDelay),
  };
  for (Status& s : poolChecks) {
    if (!s) return s;
  }
  config.pool.queueTimeout = std::chrono::milliseconds(queueTimeout);
  config.pool.wedgedTurn = std::chrono::milliseconds(wedgedTurn);
  config.pool.shedDelay = std::chrono::milliseconds(shedDelay);
  if (const char* reserve = std::getenv("ISOLANE_RESERVE_THREAD"); reserve && *reserve) {
    std::string v = reserve;
    if (v != "0" && v != "1" && v != "true" && v != "false") {
      return Error{"ISOLANE_RESERVE_THREAD=" + v + ": expected 0, 1, true or false"};
    }
    config.pool.reserveThread = v == "1" || v == "true";
  }
  if (const char* share = std::getenv("ISOLANE_MAX_WEDGED_SHARE"); share && *share) {
    char* end = nullptr;
    double v = std::strtod(share, &end);
    if (*end != '\0' || !(v >= 0.0 && v <= 1.0)) {
      return Error{std::string("ISOLANE_MAX_WEDGED_SHARE=") + share +
                   ": expected a number from 0 to 1"};
    }
    config.pool.maxWedgedShare = v;
  }
  if (const char* backend = std::getenv("ISOLANE_BACKEND"); backend && *backend) {
    if (std::string(backend) != "subprocess" && std::string(backend) != "inprocess") {
      return Error{std::string("ISOLANE_BACKEND=") + backend +
                   ": must be \"subprocess\" or \"inprocess\""};
    }
    config.backend = backend;
  }
  if (const char* admin = std::getenv("ISOLANE_ADMIN_LISTEN"); admin) {
    if (Status s = parseAdminListen(admin, config); !s)
      return Error{"ISOLANE_ADMIN_LISTEN: " + s.error()};
  }
  if (const char* bin = std::getenv("ISOLANE_WORKER_BINARY"); bin && *bin)
    config.workerBinary = bin;
  if (const char* dir = std::getenv("ISOLANE_STATE_DIR"); dir && *dir) config.stateDir = dir;
  if (const char* dir = std::getenv("ISOLANE_CODE_CACHE_DIR"); dir && *dir) {
    config.codeCacheDir = dir;
  }
  if (config.stateDir.empty()) {
    if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
      config.stateDir = std::string(xdg) + "/isolane";
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      config.stateDir = std::string(home) + "/.local/state/isolane";
    }
  }
  config.maxBodyBytes = static_cast<std::size_t>(body);
  config.maxConnections = static_cast<std::size_t>(connections);
  config.requestCpuLimit = std::chrono::milliseconds(cpu);
  config.requestTimeout = std::chrono::milliseconds(timeout);
  config.streamIdleTimeout = std::chrono::milliseconds(streamIdle);
  config.streamMaxDuration = std::chrono::milliseconds(streamMax);
  config.shutdownDrain = std::chrono::milliseconds(drain);
  config.drainIdle = std::chrono::milliseconds(drainIdle);
  config.heapLimitMb = static_cast<std::size_t>(heap);
  config.executorThreads = static_cast<std::size_t>(executors);
  config.reactorThreads = static_cast<std::size_t>(reactors);
  config.maxIsolates = static_cast<std::size_t>(isolates);
  config.isolateIdleTimeout = std::chrono::milliseconds(isolateIdle);
  return Status::success();
}

}  // namespace isolane

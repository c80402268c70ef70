#pragma once
// ServerConfig: everything `isolane serve` can be told, from a TOML file and ISOLANE_* environment
// variables (the environment wins). The README's configuration reference documents each field.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pool/pool_options.h"
#include "util/result.h"

namespace isolane {

struct AppConfig {
  std::string name;
  std::string module;       // absolute path once loaded
  std::string route = "/";  // path prefix
  std::string host;         // optional host to match
  bool stripPrefix = true;
  std::vector<std::pair<std::string, std::string>> vars;
  std::vector<std::string> fetchAllow;  // beyond public addresses
  bool streaming = false;  // admitted against the stream cap (SSE endpoints and the like)
  std::vector<std::pair<std::string, std::string>> services;  // env name -> app name
  // The app's own limits over the server's (0: the server's).
  std::size_t heapLimitMb = 0;
  std::chrono::milliseconds requestCpuLimit{0};
  // process = "own": worker processes of its own (`workers` of them), which run no other app,
  // so that its fetch_allow, its connections and its data are out of reach of the workers of
  // the other apps (a worker one app took over has every allowance of every app it runs).
  bool ownProcess = false;
  std::size_t ownWorkers = 1;
};

struct ServerConfig {
  std::string listenHost = "127.0.0.1";
  std::uint16_t listenPort = 8080;
  std::size_t reactorThreads = 1;
  // Executor threads of each worker (and of the in-process backend); each hosts one isolate per
  // app it serves. 1 by measurement: on two cores with two workers, a second thread per worker
  // cost a fifth of hello's throughput (README, "Isolation"). More keep one app's long turn from
  // holding up the other apps of its worker.
  std::size_t executorThreads = 1;
  // App isolates one worker holds at once (spread over its threads), and how long an isolate with
  // nothing to do is kept.
  std::size_t maxIsolates = 64;
  std::chrono::milliseconds isolateIdleTimeout{300'000};
  std::size_t maxBodyBytes = std::size_t{1024} * 1024;
  // Everything the master holds for its clients, over every connection: unparsed input, request
  // bodies not yet read by their app, whole answers until written, each stream's window. Past
  // it a request is answered 503 + Retry-After (x-isolane-shed: client-buffers-full).
  std::size_t clientBufferMb = kDefaultClientBufferBytes >> 20;
  std::size_t maxHeaderBytes = std::size_t{16} * 1024;
  // 0: room for every stream the stream cap admits, every short request the global cap admits,
  // and 1,024 idle keep-alive connections besides (12,048 by default).
  std::size_t maxConnections = 0;
  std::chrono::milliseconds headerTimeout{10'000};
  std::chrono::milliseconds bodyTimeout{30'000};
  std::chrono::milliseconds bodyReadTimeout{10'000};
  std::chrono::milliseconds idleTimeout{30'000};
  std::chrono::milliseconds sendTimeout{30'000};
  // CPU time one request's JavaScript may use. Requests of other apps on the same executor thread
  // wait behind a synchronous turn of up to this much, so it is seconds, not tens of seconds.
  std::chrono::milliseconds requestCpuLimit{2'000};
  std::chrono::milliseconds requestTimeout{60'000};  // to the response's head
  // A streamed body: the longest it may go without a chunk while its client is ready for more,
  // and the longest it may last.
  std::chrono::milliseconds streamIdleTimeout{60'000};
  std::chrono::milliseconds streamMaxDuration{3'600'000};
  std::chrono::milliseconds shutdownDrain{10'000};
  // During the drain, a keep-alive connection idle this long is closed (a balancer must close its
  // idle upstream connections sooner: then it never sends on one isolane is closing).
  std::chrono::milliseconds drainIdle{5'000};
  // [server] trusted_proxies: addresses (IPv4 or IPv6, no ranges) whose X-Request-Id is adopted
  // as the request's id. Empty: isolane makes every id.
  std::vector<std::string> trustedProxies;
  std::size_t heapLimitMb = 128;
  std::size_t queueCapacity = 4096;  // per executor: requests accepted, not yet started

  // Where requests run: "subprocess" (worker processes, the default) or "inprocess" (executor
  // threads inside the server; for embedding and tests). Never chosen silently.
  std::string backend = "subprocess";
  PoolOptions pool;
  // What outlives a run of the server (the code caches): [server] state_dir, ISOLANE_STATE_DIR;
  // applyEnvironment fills in the default ($XDG_STATE_HOME/isolane, else
  // $HOME/.local/state/isolane). Empty: nothing is kept.
  std::string stateDir;
  // The apps' V8 code caches: [server] code_cache_dir, ISOLANE_CODE_CACHE_DIR; empty:
  // STATE_DIR/code-cache; "off": none are kept.
  std::string codeCacheDir;
  std::string workerBinary;  // empty: this executable

  // /metrics, /healthz and /readyz; empty host disables the admin listener.
  std::string adminHost = "127.0.0.1";
  std::uint16_t adminPort = 9464;

  std::vector<AppConfig> apps;
};

// Parses TOML text. Relative module paths are resolved against `baseDir`.
Result<ServerConfig> parseConfig(const std::string& text, const std::string& baseDir,
                                 const std::string& sourceName);
Result<ServerConfig> loadConfigFile(const std::string& path);

// Applies ISOLANE_* environment variables over `config`.
Status applyEnvironment(ServerConfig& config);

// Where the code caches go: "" when none are kept.
std::string effectiveCodeCacheDir(const ServerConfig& config);

// max_connections, with 0 (the default) worked out from the caps.
std::size_t effectiveMaxConnections(const ServerConfig& config);

// "HOST:PORT", "[v6]:PORT" or ":PORT".
// HOST:PORT ([v6]:PORT too; an empty host is 127.0.0.1).
Status parseHostPort(const std::string& text, std::string* host, std::uint16_t* port);
Status parseListen(const std::string& text, ServerConfig& config);
Status parseAdminListen(const std::string& text, ServerConfig& config);

// An app named after its file, mounted at "/": what `isolane serve APP.js` and `isolane run` use.
AppConfig appFromFile(const std::string& path);

}  // namespace isolane

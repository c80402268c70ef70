#pragma once
// What the configuration says about one app, as the executor needs it. Plain data: it crosses
// from the master to the workers (wire.fbs LoadApp).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ipc/app_modules.h"

namespace isolane {

struct AppSpec {
  std::string name;
  std::string modulePath;                                 // the ES module file
  std::vector<std::pair<std::string, std::string>> vars;  // become `env` string properties
  // Addresses outbound fetch() may reach beyond public ones (see FetchPolicy).
  std::vector<std::string> fetchAllow = {};
  // Service bindings: env[first] calls the app named second, inside the server.
  std::vector<std::pair<std::string, std::string>> services = {};
  // Tests of the web APIs only: see ContextState::testHooks.
  bool testHooks = false;
  // V8's code cache of the entry module, when the master has one made by the same engine for a
  // module with these bytes: their SHA-256, hex. The worker uses it only if the entry it compiles
  // has that hash.
  std::string codeCache = {};
  std::string sourceSha256 = {};
  // The app's own limits, over the server's (0: the server's): its isolates' heap, in MiB, and
  // the CPU time one request's JavaScript may use, in ms.
  std::size_t heapLimitMb = 0;
  std::uint32_t cpuLimitMs = 0;
  // Its modules' bytes (ipc/app_modules.h), read once when the backend starts (every worker and
  // every isolate made later runs these, never what the files hold by then); null: the loader
  // reads them (an EventLoop made directly, in tests).
  std::shared_ptr<const AppModules> modules = {};
  // The content hash of `modules` (pool/app_versions.h): the version served.
  std::string version = {};
};

// The largest code cache that crosses between master and worker, either way.
inline constexpr std::size_t kMaxCodeCacheBytes = 16u << 20;

// What loading an app did with the code cache of its entry module.
enum class CodeCacheUse : std::uint8_t {
  kNone,      // there was none for these bytes: the module was compiled
  kAccepted,  // V8 took it: nothing of the module was compiled but what the cache lacked
  kRejected,  // V8 refused it (another engine or flags, or damaged): compiled instead
};

struct AppLoadReport {
  CodeCacheUse cache = CodeCacheUse::kNone;
  std::string sourceSha256;   // of the entry module as compiled
  std::string producedCache;  // made after the module ran, unless a cache was accepted
};

}  // namespace isolane

#include "pool/code_cache_store.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ipc/app_spec.h"
#include "util/read_file.h"
#include "util/sha256.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;

bool isHex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return !s.empty();
}

}  // namespace

std::string CodeCacheStore::fileSha256(const std::string& path) {
  std::string bytes;
  return readFile(path, &bytes) ? sha256Hex(bytes) : std::string();
}

bool CodeCacheStore::isSha256(const std::string& s) { return s.size() == 64 && isHex(s); }

std::string CodeCacheStore::scope(const std::string& engineKey, const std::string& app) {
  return sha256Hex(engineKey).substr(0, 16) + "/" + sha256Hex(app).substr(0, 16);
}

std::string CodeCacheStore::pathFor(const std::string& scope,
                                    const std::string& sourceSha256) const {
  if (dir_.empty() || !isSha256(sourceSha256)) return {};
  // Callers pass scope(); anything else is hashed, so no string can name a path outside dir_.
  bool ours = scope.size() == 33 && scope[16] == '/' && isHex(scope.substr(0, 16)) &&
              isHex(scope.substr(17));
  std::string dir = ours ? scope : sha256Hex(scope).substr(0, 16);
  return dir_ + "/" + dir + "/" + sourceSha256 + ".v8cache";
}

// A file is a header line with the SHA-256 of the cache, then the cache: V8 checks a cache's
// version and length but not its bytes, and a damaged one could crash the worker that reads it.
constexpr char kHeader[] = "isolane code cache 1 ";
constexpr std::size_t kHeaderBytes = sizeof(kHeader) - 1 + 64 + 1;

std::string CodeCacheStore::find(const std::string& scope,
                                 const std::string& sourceSha256) const {
  std::string path = pathFor(scope, sourceSha256);
  std::string file;
  if (path.empty() || !readFile(path, &file)) return {};
  if (file.size() <= kHeaderBytes || file.size() > kHeaderBytes + kMaxCodeCacheBytes ||
      file.compare(0, sizeof(kHeader) - 1, kHeader) != 0 ||
      file.compare(sizeof(kHeader) - 1, 64,
                   sha256Hex(std::string_view(file).substr(kHeaderBytes))) != 0) {
    std::remove(path.c_str());  // damaged: the next worker that compiles makes another
    return {};
  }
  return file.substr(kHeaderBytes);
}

Result<bool> CodeCacheStore::keep(const std::string& scope, const std::string& sourceSha256,
                                  const std::string& cache) const {
  std::string path = pathFor(scope, sourceSha256);
  if (path.empty() || cache.empty() || cache.size() > kMaxCodeCacheBytes) {
    return false;  // nothing that could be stored
  }
  std::error_code ec;
  if (fs::exists(path, ec)) return false;  // never replaced
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return Error{"cannot create " + fs::path(path).parent_path().string() + ": " + ec.message()};
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(++counter);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kHeader << sha256Hex(cache) << '\n';
    out.write(cache.data(), static_cast<std::streamsize>(cache.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return Error{"cannot write " + tmp};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error{"cannot rename " + tmp + " to " + path + ": " + why};
  }
  return true;
}

void CodeCacheStore::offer(AppSpec& app, const std::string& engineKey) const {
  if (!enabled()) return;
  // The bytes the worker will compile, when the master read them for it; else the file's.
  const ModuleFile* entry =
      app.modules && !app.modules->files.empty() ? &app.modules->files.front() : nullptr;
  if (entry) {
    app.sourceSha256 = entry->error.empty() ? sha256Hex(entry->source) : std::string();
  } else {
    app.sourceSha256 = fileSha256(app.modulePath);
  }
  app.codeCache = find(scope(engineKey, app.name), app.sourceSha256);
}

Result<bool> CodeCacheStore::settle(const std::string& engineKey, const std::string& app,
                                    const AppLoadReport& report, bool offered) const {
  std::string where = scope(engineKey, app);
  if (report.cache == CodeCacheUse::kRejected && offered) drop(where, report.sourceSha256);
  if (report.producedCache.empty() || !enabled()) return false;
  return keep(where, report.sourceSha256, report.producedCache);
}

void CodeCacheStore::drop(const std::string& scope, const std::string& sourceSha256) const {
  std::string path = pathFor(scope, sourceSha256);
  if (!path.empty()) std::remove(path.c_str());
}

}  // namespace isolane

#pragma once
// CodeCacheStore: V8 code caches of the apps' entry modules, kept on disk by the master for every
// worker of this server and of its later starts. A cache is keyed by the engine that made it (V8
// and node versions and node's options: the key a worker states in its Hello, sent before any
// app's code ran in it, runtime/engine_key.h), so a different engine never reads it; by the app
// (an app that copies another's entry bytes never shares, nor can it replace, the other's cache);
// and by the SHA-256 of the module's bytes:
//   DIR/<16 hex of SHA-256(engine key)>/<16 hex of SHA-256(app name)>/<SHA-256 of module>.v8cache
// Each file carries the SHA-256 of its cache, checked on every read: V8 checks a cache's version
// and length, not its bytes, and a damaged file is removed instead of crashing a worker.
// Workers never write files: a worker hands what it made to the master, which writes it here
// (a temporary file renamed into place) unless one is already there; a cache V8 refused is
// removed, and the next worker that compiles the module makes another.
//
// What a worker sends is untrusted: the hash must be 64 hex digits, the cache at most
// kMaxCodeCacheBytes. A cache already stored is never replaced, so a worker cannot overwrite what
// another made.
//
// Thread rule: no state but the directory's name; every method is safe from any thread.

#include <string>

#include "ipc/app_spec.h"
#include "util/result.h"

namespace isolane {

class CodeCacheStore {
 public:
  // `dir` empty: no store (find never finds, keep keeps nothing).
  explicit CodeCacheStore(std::string dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // SHA-256 of a file's bytes, 64 lowercase hex digits; "" when it cannot be read.
  static std::string fileSha256(const std::string& path);
  // True for 64 lowercase hex digits.
  static bool isSha256(const std::string& s);

  // The scope of one app's caches made by one engine (the first arguments below).
  static std::string scope(const std::string& engineKey, const std::string& app);

  // The cache for module bytes with this hash in this scope, or "".
  std::string find(const std::string& scope, const std::string& sourceSha256) const;
  // Stores `cache` unless one is already there or it cannot be one (a hash that is not one, an
  // empty or oversized cache): true when it was written. An error says what could not be.
  Result<bool> keep(const std::string& scope, const std::string& sourceSha256,
                    const std::string& cache) const;
  // Removes the cache (V8 refused it).
  void drop(const std::string& scope, const std::string& sourceSha256) const;

  // What both backends do around a load. offer: gives `app` the hash of its module's bytes as they
  // are now (which asks the worker to make a cache if none is taken) and the cache this engine
  // made of them for it, if any; nothing when the store is off. settle: a cache V8 refused is
  // dropped (only when one was offered: `offered`), one the load made is kept; true when one was
  // stored.
  void offer(AppSpec& app, const std::string& engineKey) const;
  Result<bool> settle(const std::string& engineKey, const std::string& app,
                      const AppLoadReport& report, bool offered) const;

 private:
  // "" when the hash is not one.
  std::string pathFor(const std::string& scope, const std::string& sourceSha256) const;

  const std::string dir_;
};

}  // namespace isolane

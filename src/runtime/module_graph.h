#pragma once
// ModuleGraph: an app's ES modules, loaded from files. Static relative imports ("./x.js",
// "../y.js") are resolved against the importing file when the app loads; a bare specifier
// ("hono") fails the load with a message that says to bundle the app, since there is no package
// resolution at run time. One graph per app context; only the executor thread touches it.

#include <v8.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/app_spec.h"
#include "runtime/js_scope.h"

namespace isolane {

class ModuleGraph {
 public:
  ModuleGraph() = default;
  ModuleGraph(const ModuleGraph&) = delete;
  ModuleGraph& operator=(const ModuleGraph&) = delete;

  // Loads, links and evaluates the module at `path` (and its imports) in js's context, whose
  // ContextState must point at this graph. On failure returns empty and sets `error` to a message
  // naming the file and line.
  // The entry module is compiled from `codeCache` when its bytes hash to `sourceSha256` (hex);
  // `report` says what became of it, and carries a new cache (made after evaluation, so that the
  // functions the module ran are in it) when none was accepted and `sourceSha256` is given (the
  // master keeps caches).
  v8::MaybeLocal<v8::Object> loadMain(JsScope& js, const std::string& path, std::string* error,
                                      const std::string& codeCache = {},
                                      const std::string& sourceSha256 = {},
                                      AppLoadReport* report = nullptr);

 private:
  static v8::MaybeLocal<v8::Module> resolveCallback(v8::Local<v8::Context> context,
                                                    v8::Local<v8::String> specifier,
                                                    v8::Local<v8::FixedArray> assertions,
                                                    v8::Local<v8::Module> referrer);

  // `entry`, for the entry module only: its code cache in and what became of it.
  struct EntryCache {
    const std::string& bytes;
    const std::string& sha256;
    AppLoadReport& report;
  };
  v8::MaybeLocal<v8::Module> load(JsScope& js, const std::string& path, std::string* error,
                                  EntryCache* entry = nullptr);
  const std::string* pathOf(v8::Local<v8::Module> module) const;

  struct Entry {
    std::string path;
    v8::Global<v8::Module> module;
    std::unordered_map<std::string, std::string> resolved;  // specifier -> absolute path
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> byPath_;
  std::unordered_multimap<int, std::size_t> byHash_;
};

}  // namespace isolane

#pragma once
// ModuleGraph: an app's ES modules, from the bytes of its files (ipc/app_modules.h: read by the
// master for a worker, which reads no file). Static relative imports ("./x.js", "../y.js") were
// resolved against the importing file when the files were read; a bare specifier ("hono") fails
// the load with a message that says to bundle the app, since there is no package resolution at
// run time. One graph per app context; only the executor thread touches it.
// A code-mode execution's graph is in memory instead (loadInMemory): its modules come from the
// request, and an import names one of them exactly.

#include <v8.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/exec_types.h"
#include "runtime/js_scope.h"

namespace isolane {

class ModuleGraph {
 public:
  ModuleGraph() = default;
  ModuleGraph(const ModuleGraph&) = delete;
  ModuleGraph& operator=(const ModuleGraph&) = delete;

  // Loads, links and evaluates the entry module of `modules` (and its imports) in js's context,
  // whose ContextState must point at this graph (`modules` need not outlive the call). On failure
  // returns empty and sets `error` to a message naming the file and line.
  // The entry module is compiled from `codeCache` when its bytes hash to `sourceSha256` (hex);
  // `report` says what became of it, and carries a new cache (made after evaluation, so that the
  // functions the module ran are in it) when none was accepted and `sourceSha256` is given (the
  // master keeps caches).
  v8::MaybeLocal<v8::Object> loadMain(JsScope& js, const AppModules& modules, std::string* error,
                                      const std::string& codeCache = {},
                                      const std::string& sourceSha256 = {},
                                      AppLoadReport* report = nullptr);

  // Where a load failed, when V8 said so (a compile or evaluation error).
  struct ErrorLocation {
    std::string file;
    int line = 0;         // 1-based; 0: unknown
    int column = 0;       // 1-based
    bool syntax = false;  // the source does not parse
  };
  // Loads, links and evaluates `entrySource` (named `entryName` in errors and stacks) with
  // `modules` as the only importable modules, each by its exact name. A JSON module's default
  // export is what V8's own JSON parser makes of its text. `modules` must outlive the graph.
  v8::MaybeLocal<v8::Object> loadInMemory(JsScope& js, const std::string& entryName,
                                          const std::string& entrySource,
                                          const std::vector<GuestModule>& modules,
                                          std::string* error, ErrorLocation* where);

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
  // Compiles `source` as the module `path` and registers it (its imports not yet resolved).
  v8::MaybeLocal<v8::Module> compile(JsScope& js, const std::string& path,
                                     const std::string& source, std::string* error,
                                     EntryCache* entry);
  // In memory: the module named `name` of memory_, with its imports, loaded.
  v8::MaybeLocal<v8::Module> loadNamed(JsScope& js, const std::string& name,
                                       const std::string* source, std::string* error);
  v8::MaybeLocal<v8::Object> evaluate(JsScope& js, v8::Local<v8::Module> module,
                                      const std::string& name, std::string* error);
  // Records where loadInMemory failed, once (the first error is the one reported).
  void noteLocation(JsScope& js, const v8::TryCatch& tryCatch, bool syntax);
  static v8::MaybeLocal<v8::Value> evaluateJson(v8::Local<v8::Context> context,
                                                v8::Local<v8::Module> module);

  struct Entry {
    std::string path;
    v8::Global<v8::Module> module;
    std::unordered_map<std::string, std::string> resolved;  // specifier -> absolute path
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> byPath_;
  std::unordered_multimap<int, std::size_t> byHash_;
  const std::vector<GuestModule>* memory_ = nullptr;  // loadInMemory's modules
  // loadMain's files, by path, while it runs.
  std::unordered_map<std::string, const ModuleFile*> files_;
  ErrorLocation* where_ = nullptr;                    // loadInMemory's, while it runs
};

}  // namespace isolane

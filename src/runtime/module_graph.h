#pragma once
// ModuleGraph: an app's ES modules, loaded from files. Static relative imports ("./x.js",
// "../y.js") are resolved against the importing file when the app loads; a bare specifier
// ("hono") fails the load with a message that says to bundle the app, since there is no package
// resolution at run time. One graph per app context; only the executor thread touches it.

#include <v8.h>

#include <string>
#include <unordered_map>
#include <vector>

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
  v8::MaybeLocal<v8::Object> loadMain(JsScope& js, const std::string& path, std::string* error);

 private:
  static v8::MaybeLocal<v8::Module> resolveCallback(v8::Local<v8::Context> context,
                                                    v8::Local<v8::String> specifier,
                                                    v8::Local<v8::FixedArray> assertions,
                                                    v8::Local<v8::Module> referrer);

  v8::MaybeLocal<v8::Module> load(JsScope& js, const std::string& path, std::string* error);
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

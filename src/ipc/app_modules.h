#pragma once
// An app's ES modules as bytes: its entry file and every file its static relative imports reach,
// read by the side that may read files (the master, or the engine of `isolane run`) and handed to
// the worker in its LoadApp frame. A worker reads no file (its sandbox refuses open), so the
// import graph is found here, without V8: each source is scanned for the string literal after
// `from` or `import` (comments skipped), which finds every static import and export-from, and
// may find more (a specifier in a comment or a string): those are read too if they name a file,
// and cost nothing else. Each file's imports are resolved here, as the worker resolved them
// before: relative to the importing file, symlinks followed (weakly_canonical).
//
// Bounds: at most kMaxAppModuleFiles files and `maxBytes` of sources in all; past them the app's
// load fails with a message saying so.
//
// Thread rule: plain data and a pure function of the filesystem; safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace isolane {

inline constexpr std::size_t kMaxAppModuleFiles = 4096;

struct ModuleFile {
  std::string path;    // absolute, canonical: the module's name in stacks and errors
  std::string source;  // its bytes (empty with an error)
  // Why it could not be read ("cannot read module /x.js: Permission denied"), or empty.
  std::string error;
  // Each relative specifier found in it, and the path it resolves to; or, for one that names no
  // readable file, an empty path and why ("no such file /x/y.js").
  struct Import {
    std::string specifier;
    std::string path;
    std::string error;
  };
  std::vector<Import> imports;
};

struct AppModules {
  std::vector<ModuleFile> files;  // the entry first; then each once, by path
  std::string error;              // the graph as a whole could not be read (a bound)
  std::size_t bytes() const;
  const ModuleFile* find(const std::string& path) const;
};

// The specifiers a module's source may import: the string literal after each `from` or
// `import` token (whitespace, comments and `(` skipped). Over-approximates; never misses a
// static import written with a literal specifier.
std::vector<std::string> importSpecifiers(std::string_view source);

// Reads the entry module at `entryPath` and what its imports reach.
AppModules readAppModules(const std::string& entryPath, std::size_t maxBytes);

}  // namespace isolane

#pragma once
// An app's ES modules as bytes: its entry file and every file its static relative imports reach,
// read by the side that may read files (the master, or the engine of `isolane run`) and handed to
// the worker in its LoadApp frame. A worker reads no file (its sandbox refuses open), so the
// import graph is found here, without V8: each source is scanned once for the string literal
// after `from` or `import` (comments and other string literals stepped over), which finds every
// static import and export-from written with a literal. Each is resolved here, as the worker
// resolved it before: relative to the importing file, symlinks followed (weakly_canonical).
//
// The app's source chooses what is read, so it is untrusted: only regular files beneath the
// app's directory (the entry's) are read, never anything under /proc, /sys or /dev, at most
// kMaxAppModuleFiles files and `maxBytes` in all (a file is read no further than what is left).
// What may not be read is reported as the import's error, and the worker's load names it.
//
// Thread rule: plain data and a pure function of the filesystem; safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace isolane {

inline constexpr std::size_t kMaxAppModuleFiles = 4096;
// What an app's modules may hold in all where no frame bounds them (the in-process backend).
inline constexpr std::size_t kMaxAppModuleBytes = std::size_t{256} << 20;

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

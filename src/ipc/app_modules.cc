#include "ipc/app_modules.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace isolane {
namespace {

namespace fs = std::filesystem;

bool identifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

// Past whitespace and comments from `at`.
std::size_t skipSpace(std::string_view s, std::size_t at) {
  for (;;) {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) {
      ++at;
    }
    if (s.substr(at, 2) == "//") {
      std::size_t eol = s.find('\n', at);
      at = eol == std::string_view::npos ? s.size() : eol;
    } else if (s.substr(at, 2) == "/*") {
      std::size_t end = s.find("*/", at + 2);
      at = end == std::string_view::npos ? s.size() : end + 2;
    } else {
      return at;
    }
  }
}

bool isRelative(const std::string& s) {
  return s.rfind("./", 0) == 0 || s.rfind("../", 0) == 0 || s.rfind('/', 0) == 0;
}

// False (with the reason) when the file cannot be read whole, or holds more than `max` bytes
// (nothing past that is read: a file that grows, or lies about its size, costs `max` at most).
bool readWhole(const std::string& path, std::size_t max, std::string* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return false;
  }
  out->clear();
  char buffer[64 * 1024];
  while (in) {
    in.read(buffer, sizeof buffer);
    out->append(buffer, static_cast<std::size_t>(in.gcount()));
    if (out->size() > max) {
      *why = "larger than the " + std::to_string(max >> 10) + " KiB left for the app's modules";
      return false;
    }
  }
  if (in.bad()) {
    *why = "a read failed";
    return false;
  }
  return true;
}

// Where a module may be read from: a regular file beneath the app's directory (the entry's),
// never under /proc, /sys or /dev (an app at the root of the filesystem would otherwise name
// the master's /proc/self/environ in an import). Empty when it may; else why not.
std::string refusal(const fs::path& resolved, const std::string& root) {
  std::string path = resolved.string();
  for (const char* pseudo : {"/proc/", "/sys/", "/dev/"}) {
    if (path.rfind(pseudo, 0) == 0) return path + " is not a file an app may import";
  }
  std::string prefix = root == "/" ? root : root + "/";
  if (path.rfind(prefix, 0) != 0) {
    return path + " is outside the app's directory " + root +
           " (only files under it are read: bundle the app to use others)";
  }
  std::error_code ec;
  if (!fs::is_regular_file(resolved, ec)) return "no such file " + path;
  return "";
}

}  // namespace

std::size_t AppModules::bytes() const {
  std::size_t n = 0;
  for (const ModuleFile& f : files) n += f.source.size() + f.path.size();
  return n;
}

const ModuleFile* AppModules::find(const std::string& path) const {
  for (const ModuleFile& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> importSpecifiers(std::string_view s) {
  // One pass: comments and string literals are stepped over whole (a specifier inside either is
  // not an import), every other character once. A regular expression holding a quote may hide
  // an import on its line from this scan; the worker then says it was not found.
  std::vector<std::string> out;
  const std::size_t n = s.size();
  std::size_t at = 0;
  auto readString = [&](std::size_t open, std::string* literal) {
    char quote = s[open];
    std::size_t q = open + 1;
    for (; q < n && s[q] != quote; ++q) {
      if (s[q] == '\n' && quote != '`') break;  // an unterminated '...' or "..." ends here
      if (s[q] == '\\' && q + 1 < n) ++q;       // an escape: the next character as it is
      if (literal) *literal += s[q];
    }
    return q < n && s[q] == quote ? q + 1 : q;  // past the closing quote (or where it stopped)
  };
  while (at < n) {
    char c = s[at];
    if (c == '/' && at + 1 < n && (s[at + 1] == '/' || s[at + 1] == '*')) {
      at = skipSpace(s, at);
    } else if (c == '\'' || c == '"' || c == '`') {
      at = readString(at, nullptr);
    } else if (identifierChar(c)) {
      std::size_t end = at;
      while (end < n && identifierChar(s[end])) ++end;
      std::string_view word = s.substr(at, end - at);
      bool member = at > 0 && s[at - 1] == '.';  // x.from(...), x.import
      at = end;
      if (member || (word != "import" && word != "from")) continue;
      std::size_t p = skipSpace(s, end);
      if (p < n && s[p] == '(') p = skipSpace(s, p + 1);
      if (p < n && (s[p] == '\'' || s[p] == '"')) {
        std::string literal;
        at = readString(p, &literal);
        out.push_back(std::move(literal));
      }
    } else {
      ++at;
    }
  }
  return out;
}

AppModules readAppModules(const std::string& entryPath, std::size_t maxBytes) {
  AppModules modules;
  std::error_code ec;
  fs::path entry = fs::weakly_canonical(fs::absolute(entryPath), ec);
  ModuleFile first;
  first.path = ec ? entryPath : entry.string();
  std::string why;
  if (ec || !fs::is_regular_file(entry, ec)) {
    first.error = "cannot read module " + entryPath + ": no such file";
  } else if (!readWhole(first.path, maxBytes, &first.source, &why)) {
    first.error = "cannot read module " + entryPath + ": " + why;
  }
  // The app's directory: what its imports may reach.
  const std::string root = ec ? std::string("/") : entry.parent_path().string();
  modules.files.push_back(std::move(first));
  std::unordered_map<std::string, std::size_t> seen{{modules.files[0].path, 0}};
  std::size_t total = modules.files[0].source.size();
  // Breadth first, by index: files[] grows as imports are found.
  for (std::size_t i = 0; i < modules.files.size(); ++i) {
    if (!modules.files[i].error.empty()) continue;
    std::vector<std::string> specifiers = importSpecifiers(modules.files[i].source);
    fs::path dir = fs::path(modules.files[i].path).parent_path();
    std::unordered_set<std::string> known;
    for (std::string& specifier : specifiers) {
      // The worker explains bare specifiers itself.
      if (!isRelative(specifier) || !known.insert(specifier).second) continue;
      fs::path target = specifier[0] == '/' ? fs::path(specifier) : dir / specifier;
      ModuleFile::Import im{specifier, "", ""};
      fs::path resolved = fs::weakly_canonical(target, ec);
      std::string refused = ec ? "no such file " + target.string() : refusal(resolved, root);
      if (!refused.empty()) {
        im.error = refused;
      } else if (auto it = seen.find(resolved.string()); it != seen.end()) {
        im.path = resolved.string();
      } else if (modules.files.size() >= kMaxAppModuleFiles) {
        modules.error = "the app imports more than " + std::to_string(kMaxAppModuleFiles) +
                        " files; bundle it into one";
        return modules;
      } else {
        ModuleFile file;
        file.path = resolved.string();
        if (!readWhole(file.path, maxBytes - total, &file.source, &why)) {
          im.error = "cannot read " + file.path + ": " + why;
        } else {
          total += file.source.size();
          im.path = file.path;
          seen.emplace(file.path, modules.files.size());
          modules.files.push_back(std::move(file));
        }
      }
      modules.files[i].imports.push_back(std::move(im));
    }
  }
  if (total > maxBytes) {
    modules.error =
        "the app's modules are over " + std::to_string(maxBytes >> 20) + " MiB in all";
  }
  return modules;
}

}  // namespace isolane

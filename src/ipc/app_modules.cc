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

// False (with the reason) when the file cannot be read whole.
bool readWhole(const std::string& path, std::string* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    *why = "a read failed";
    return false;
  }
  *out = ss.str();
  return true;
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
  std::vector<std::string> out;
  for (std::size_t at = 0; at < s.size(); ++at) {
    std::size_t keyword = 0;
    if (s.compare(at, 6, "import") == 0) {
      keyword = 6;
    } else if (s.compare(at, 4, "from") == 0) {
      keyword = 4;
    } else {
      continue;
    }
    if ((at > 0 && (identifierChar(s[at - 1]) || s[at - 1] == '.')) ||
        (at + keyword < s.size() && identifierChar(s[at + keyword]))) {
      continue;
    }
    std::size_t p = skipSpace(s, at + keyword);
    if (p < s.size() && s[p] == '(') p = skipSpace(s, p + 1);
    if (p >= s.size() || (s[p] != '\'' && s[p] != '"')) continue;
    char quote = s[p];
    std::string literal;
    std::size_t q = p + 1;
    for (; q < s.size() && s[q] != quote && s[q] != '\n'; ++q) {
      if (s[q] == '\\' && q + 1 < s.size()) ++q;  // an escape: the next character as it is
      literal += s[q];
    }
    if (q < s.size() && s[q] == quote) out.push_back(std::move(literal));
    at = q;
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
  } else if (!readWhole(first.path, &first.source, &why)) {
    first.error = "cannot read module " + entryPath + ": " + why;
  }
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
      if (ec || !fs::is_regular_file(resolved, ec)) {
        im.error = "no such file " + target.string();
      } else if (auto it = seen.find(resolved.string()); it != seen.end()) {
        im.path = resolved.string();
      } else if (modules.files.size() >= kMaxAppModuleFiles) {
        modules.error = "the app imports more than " + std::to_string(kMaxAppModuleFiles) +
                        " files; bundle it into one";
        return modules;
      } else {
        ModuleFile file;
        file.path = resolved.string();
        if (!readWhole(file.path, &file.source, &why)) {
          im.error = "cannot read " + file.path + ": " + why;
        } else {
          total += file.source.size();
          if (total > maxBytes) {
            modules.error = "the app's modules are over " + std::to_string(maxBytes >> 20) +
                            " MiB in all; bundle and minify it";
            return modules;
          }
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

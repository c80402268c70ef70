#include "runtime/guest_source.h"

#include <cctype>

namespace isolane {
namespace {

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Skips whitespace and comments from `at`; returns where the next token starts.
std::size_t skipSpace(std::string_view s, std::size_t at) {
  while (at < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[at]))) {
      ++at;
    } else if (s.compare(at, 2, "//") == 0) {
      while (at < s.size() && s[at] != '\n') ++at;
    } else if (s.compare(at, 2, "/*") == 0) {
      std::size_t end = s.find("*/", at + 2);
      at = end == std::string_view::npos ? s.size() : end + 2;
    } else {
      break;
    }
  }
  return at;
}

bool keywordAt(std::string_view s, std::size_t at, std::string_view word) {
  return s.compare(at, word.size(), word) == 0 &&
         (at + word.size() == s.size() || !isIdentChar(s[at + word.size()])) &&
         (at == 0 || !isIdentChar(s[at - 1]));
}

// Past the string literal starting at `at` (a quote), or npos when it does not end.
std::size_t skipString(std::string_view s, std::size_t at) {
  char quote = s[at];
  for (std::size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == quote) {
      return i + 1;
    } else if (s[i] == '\n') {
      return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

// The end of the import declaration starting at `at` (the `import` keyword): just past its
// module specifier, its optional `with { ... }` clause and its optional semicolon; npos when
// this is not one (a dynamic import, import.meta) or it does not end.
std::size_t importEnd(std::string_view s, std::size_t at) {
  std::size_t i = skipSpace(s, at + 6);
  if (i < s.size() && (s[i] == '(' || s[i] == '.')) return std::string_view::npos;
  int depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\'' || c == '"') {
      std::size_t end = skipString(s, i);
      if (end == std::string_view::npos) return end;
      if (depth == 0) {  // the module specifier: the declaration's last required part
        i = skipSpace(s, end);
        if (keywordAt(s, i, "with") || keywordAt(s, i, "assert")) {
          std::size_t open = skipSpace(s, i + (s[i] == 'w' ? 4 : 6));
          std::size_t close =
              open < s.size() && s[open] == '{' ? s.find('}', open) : std::string_view::npos;
          if (close == std::string_view::npos) return close;
          i = skipSpace(s, close + 1);
        }
        if (i < s.size() && s[i] == ';') return i + 1;
        // No semicolon: the declaration ends at the specifier (or its clause).
        std::size_t back = i;
        while (back > at && std::isspace(static_cast<unsigned char>(s[back - 1]))) --back;
        return back;
      }
      i = end;
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ';' || depth < 0) return std::string_view::npos;
    if (s.compare(i, 2, "//") == 0 || s.compare(i, 2, "/*") == 0) {
      i = skipSpace(s, i);
      continue;
    }
    ++i;
  }
  return std::string_view::npos;
}

}  // namespace

GuestSource wrapGuestCode(std::string_view code) {
  std::size_t at = skipSpace(code, 0);
  while (keywordAt(code, at, "import")) {
    std::size_t end = importEnd(code, at);
    if (end == std::string_view::npos) break;  // V8 reports what is wrong with it
    at = skipSpace(code, end);
  }
  std::string_view imports = code.substr(0, at);
  std::string_view function = code.substr(at);
  // A trailing `;` would end the parenthesised expression early.
  std::size_t last = function.size();
  while (last > 0 && (std::isspace(static_cast<unsigned char>(function[last - 1])) ||
                      function[last - 1] == ';')) {
    --last;
  }
  function = function.substr(0, last);
  GuestSource out;
  out.functionLine = 1;
  for (char c : imports) out.functionLine += c == '\n';
  out.module.reserve(code.size() + 32);
  out.module.append(imports);
  out.module.append("export default (");
  out.module.append(function);
  // On a line of its own: the function may end with a line comment.
  out.module.append("\n);\n");
  return out;
}

}  // namespace isolane

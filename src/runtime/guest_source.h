#pragma once
// The code of an execution is an async arrow function, optionally preceded by static `import`
// declarations. The engine evaluates it as a module whose default export is that function:
// the imports stay as they are, and the function becomes `export default (<function>\n);`.
// Lines are kept, so an error's line number is the caller's; on the function's first line the
// column shifts by kWrapColumns (guestColumn() undoes it).
//
// Hand-written: a small scanner of the module grammar's leading import declarations (strings,
// comments, braces), not a JavaScript parser; V8 parses the result and reports what is wrong.

#include <string>
#include <string_view>

namespace isolane {

struct GuestSource {
  std::string module;    // the module text V8 compiles
  int functionLine = 1;  // 1-based line where the function starts
};

GuestSource wrapGuestCode(std::string_view code);

inline constexpr int kWrapColumns = 16;  // "export default (" inserted before the function

// A 1-based column V8 reports for `line` of the wrapped module, as the caller's code has it.
inline int guestColumn(const GuestSource& source, int line, int column) {
  return line == source.functionLine && column > kWrapColumns ? column - kWrapColumns : column;
}

}  // namespace isolane

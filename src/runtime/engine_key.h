#pragma once
// What V8 output made in one process (a startup snapshot, a code cache) depends on, as one line:
// the V8 and node versions and the options node was started with that can change code
// generation. Output made under another key is never handed to V8: V8 checks some of this itself,
// but a snapshot of another V8 is not checked, it crashes.

#include <string>

namespace isolane {

// This process's key. Computed once; any thread.
const std::string& engineKey();

}  // namespace isolane

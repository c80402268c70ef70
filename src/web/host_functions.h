#pragma once
// The native half of the web APIs: the `host` object the bundled JavaScript runtime is given
// (the list and the contract are in src/web/README.md).

#include <v8.h>

#include "runtime/js_scope.h"

namespace isolane {

// A new object carrying every native function of the contract. The context's ContextState must be
// attached before any of them is called.
v8::Local<v8::Object> makeHostObject(JsScope& js);

}  // namespace isolane

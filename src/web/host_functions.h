#pragma once
// The native half of the web APIs: the `host` object the bundled JavaScript runtime is given
// (the list and the contract are in src/web/README.md).

#include <v8.h>

#include <cstdint>
#include <vector>

#include "runtime/js_scope.h"

namespace isolane {

// One native function of `host`: its property name and its callback.
struct HostFunction {
  const char* name;
  v8::FunctionCallback callback;
};

// A new object carrying every native function of the contract. The context's ContextState must be
// attached before any of them is called.
v8::Local<v8::Object> makeHostObject(JsScope& js);

// (Re)sets host.timeOrigin from the context's ContextState: a context deserialized from the
// runtime snapshot carries the time its maker ran.
void setHostTimeOrigin(JsScope& js, v8::Local<v8::Object> host);

// The addresses of the native functions makeHostObject installs, in a fixed order: what a V8
// snapshot of a context with `host` in it must be made and loaded with (external references).
const std::vector<intptr_t>& hostFunctionReferences();

}  // namespace isolane

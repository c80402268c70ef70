#pragma once
// A V8 context with the web APIs installed: what every app (and every test of the web APIs) runs
// in. Installing means: attach the ContextState, hand the bundled runtime its `host` object, run
// the bundle, and keep the `dispatch` function it leaves behind.

#include <v8.h>

#include <cstdint>
#include <string>

#include "runtime/context_state.h"
#include "runtime/isolate_owner.h"

namespace isolane {

struct WebContext {
  v8::Global<v8::Context> context;
  v8::Global<v8::Function> dispatch;  // host.dispatch(handler, init, env) -> Promise
  v8::Global<v8::Object> host;        // the runtime's host object (host.createEnv, ...)
};

// Creates the context on the calling (owning) thread: from the runtime snapshot when the isolate
// was made from it (web/runtime_snapshot.h), else by running the bundle. `state` must outlive the
// context. Fails only if the embedded runtime bundle throws, which is a bug of ours.
bool createWebContext(IsolateOwner& owner, ContextState& state, WebContext* out,
                      std::string* error);

// The address of the runtime source's external string resource: an external reference of any
// snapshot of a context that ran the bundle.
intptr_t runtimeSourceReference();

// The two ways, for the snapshot's maker (from source) and for tests that compare them.
bool createWebContextFromSource(IsolateOwner& owner, ContextState& state, WebContext* out,
                                std::string* error);
bool createWebContextFromSnapshot(IsolateOwner& owner, ContextState& state, WebContext* out,
                                  std::string* error);

}  // namespace isolane

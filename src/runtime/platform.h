#pragma once
// The V8 platform is process-wide state: initialised once, never torn down (V8 cannot be
// re-initialised after disposal, and worker threads may still hold isolates at exit).

namespace isolane {

// Safe from any thread; idempotent.
void ensureV8Initialized();

}  // namespace isolane

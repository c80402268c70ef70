#include "runtime/platform.h"

#include <libplatform/libplatform.h>
#include <v8.h>

#include <memory>
#include <mutex>

namespace isolane {

void ensureV8Initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    // libnode108 links the system ICU (libicudata), so there is no data file to locate.
    v8::V8::InitializeICU();
    // Two background threads: GC and compile helpers; the machines we size for have 2 cores.
    static std::unique_ptr<v8::Platform> platform = v8::platform::NewDefaultPlatform(2);
    v8::V8::InitializePlatform(platform.get());
    v8::V8::Initialize();
  });
}

}  // namespace isolane

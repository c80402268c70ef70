#pragma once
// An app isolate's memory outside its V8 heap, under one cap (IsolateLimits::arrayBufferMb): its
// ArrayBuffers' contents are charged by the isolate's allocator (runtime/isolate_owner.cc), and
// every native copy of what JavaScript hands the host that outlives the native call is charged
// by a ByteCharge for as long as the copy lives: a compression stream's pending input, an
// outbound request body until its bytes leave the process, a whole response body until it is
// written to the master, the inputs of cryptography run off the thread. So an app that hands
// the host the same 100 MiB buffer a thousand times gets a RangeError at the cap, as an
// ArrayBuffer allocation past it would, and its worker does not grow.
//
// Thread rule: the natives' executor thread for isolateMemoryBudget() and
// chargeIsolateOrThrow(); the budget and its charges as util/byte_budget.h says.

#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "util/byte_budget.h"

namespace isolane {

// The isolate data slot IsolateOwner keeps the budget's address in.
inline constexpr std::uint32_t kMemoryBudgetSlot = 0;

// The budget of `isolate` (IsolateOwner attaches one to every isolate it makes), or null.
inline std::shared_ptr<ByteBudget> isolateMemoryBudget(v8::Isolate* isolate) {
  auto* held = static_cast<std::shared_ptr<ByteBudget>*>(isolate->GetData(kMemoryBudgetSlot));
  return held ? *held : nullptr;
}

// Charges `bytes` to the budget of the isolate a native function runs in. When it has not got
// them, the garbage collector runs once (ArrayBuffers nothing reaches any more give theirs back,
// as V8 itself does before it refuses an allocation) and the charge is tried again; an
// ungranted charge is returned if it still does not fit.
inline ByteCharge chargeIsolate(v8::Isolate* isolate, std::size_t bytes) {
  std::shared_ptr<ByteBudget> budget = isolateMemoryBudget(isolate);
  ByteCharge charge = ByteCharge::take(budget, bytes);
  if (!charge && budget && bytes <= budget->cap()) {
    isolate->LowMemoryNotification();
    charge = ByteCharge::take(budget, bytes);
  }
  return charge;
}

// The same; when it does not fit, throws a RangeError into JavaScript (as an ArrayBuffer
// allocation past the cap does).
inline ByteCharge chargeIsolateOrThrow(v8::Isolate* isolate, std::size_t bytes,
                                       const char* what) {
  ByteCharge charge = chargeIsolate(isolate, bytes);
  if (!charge) {
    std::string message = std::string(what) + " of " + std::to_string(bytes) +
                          " bytes: the app's memory outside its heap is full";
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked()));
  }
  return charge;
}

}  // namespace isolane

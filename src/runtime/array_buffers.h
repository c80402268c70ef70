#pragma once
// ArrayBuffers the host makes for JavaScript (request bodies, fetched chunks, encoded text).
// v8::ArrayBuffer::New aborts the whole process when the allocator refuses, and ours refuses
// past the isolate's cap on purpose: so host code allocates through the allocator itself and
// reports a refusal as a RangeError, like an allocation JavaScript made.

#include <v8.h>

#include <cstddef>
#include <cstring>
#include <memory>

namespace isolane {

// An ArrayBuffer of `size` bytes holding a copy of `data` (when not null), or empty with a
// RangeError thrown into the isolate.
inline v8::MaybeLocal<v8::ArrayBuffer> newArrayBuffer(v8::Isolate* isolate, std::size_t size,
                                                      const void* data = nullptr) {
  v8::ArrayBuffer::Allocator* allocator = isolate->GetArrayBufferAllocator();
  void* bytes = allocator->AllocateUninitialized(size);
  if (bytes == nullptr) {
    isolate->ThrowException(v8::Exception::RangeError(
        v8::String::NewFromUtf8(isolate, "Array buffer allocation failed").ToLocalChecked()));
    return {};
  }
  if (data != nullptr && size > 0) std::memcpy(bytes, data, size);
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(
      bytes, size,
      [](void* p, std::size_t length, void* owner) {
        static_cast<v8::ArrayBuffer::Allocator*>(owner)->Free(p, length);
      },
      allocator);
  return v8::ArrayBuffer::New(isolate, std::move(store));
}

// The same for host code outside a native call: a refusal leaves no exception behind.
inline v8::MaybeLocal<v8::ArrayBuffer> newArrayBufferQuietly(v8::Isolate* isolate, std::size_t size,
                                                             const void* data = nullptr) {
  v8::TryCatch quiet(isolate);
  return newArrayBuffer(isolate, size, data);
}

}  // namespace isolane

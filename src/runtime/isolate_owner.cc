#include "runtime/isolate_owner.h"

#include <cstdlib>
#include <cstring>

#include "runtime/platform.h"

namespace isolane {
namespace {

// Caps what JavaScript can allocate outside the V8 heap. Without it `new ArrayBuffer(2 ** 32)`
// takes host memory no heap limit sees. An allocation over the cap fails, which JavaScript sees
// as a RangeError ("Array buffer allocation failed").
class CappedAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit CappedAllocator(std::size_t capBytes) : cap_(capBytes) {}

  void* Allocate(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::calloc(length ? length : 1, 1);
    if (!p) used_ -= length;
    return p;
  }
  void* AllocateUninitialized(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::malloc(length ? length : 1);
    if (!p) used_ -= length;
    return p;
  }
  void Free(void* data, std::size_t length) override {
    std::free(data);
    used_ -= length;
  }

 private:
  bool reserve(std::size_t length) {
    std::size_t before = used_.fetch_add(length);
    if (before + length > cap_) {
      used_ -= length;
      return false;
    }
    return true;
  }

  const std::size_t cap_;
  std::atomic<std::size_t> used_{0};  // Free() may run on a GC thread
};

}  // namespace

IsolateOwner::IsolateOwner(const IsolateLimits& limits) {
  ensureV8Initialized();
  allocator_ = std::make_unique<CappedAllocator>(limits.arrayBufferMb << 20);
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator_.get();
  params.constraints.ConfigureDefaultsFromHeapSize(0, limits.heapMb << 20);
  isolate_ = v8::Isolate::New(params);
  // We run microtasks ourselves, after each turn, so a turn's watchdog covers them.
  isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate_->AddNearHeapLimitCallback(&IsolateOwner::onNearHeapLimit, this);
}

IsolateOwner::~IsolateOwner() {
  ISOLANE_DCHECK_OWNING_THREAD(thread_);
  isolate_->Dispose();
}

// Runs on the owning thread, inside an allocation. A heap bomb must not abort the process:
// terminate the running JavaScript and grant head-room so the termination can unwind.
std::size_t IsolateOwner::onNearHeapLimit(void* data, std::size_t current, std::size_t initial) {
  auto* self = static_cast<IsolateOwner*>(data);
  self->initialHeapLimit_ = initial;
  self->heapLimitHit_ = true;
  self->isolate_->TerminateExecution();
  return current + (current / 2) + (16u << 20);
}

bool IsolateOwner::takeHeapLimitHit() {
  ISOLANE_DCHECK_OWNING_THREAD(thread_);
  if (!heapLimitHit_.exchange(false)) return false;
  // Collect the garbage the terminated code left, then restore the original ceiling.
  isolate_->LowMemoryNotification();
  isolate_->RemoveNearHeapLimitCallback(&IsolateOwner::onNearHeapLimit, initialHeapLimit_);
  isolate_->AddNearHeapLimitCallback(&IsolateOwner::onNearHeapLimit, this);
  return true;
}

}  // namespace isolane

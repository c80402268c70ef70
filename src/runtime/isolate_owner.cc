#include "runtime/isolate_owner.h"

#include <cstdlib>
#include <cstring>

#include "runtime/fatal_errors.h"
#include "runtime/foreground_tasks.h"
#include "runtime/platform.h"

namespace isolane {
namespace {

// Caps what JavaScript can allocate outside the V8 heap. Without it `new ArrayBuffer(2 ** 32)`
// takes host memory no heap limit sees. An allocation over the cap fails, which JavaScript sees
// as a RangeError ("Array buffer allocation failed"). The cap is the isolate's memory budget,
// which the host's own copies of JavaScript's bytes are charged to as well.
class CappedAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit CappedAllocator(std::shared_ptr<ByteBudget> budget) : budget_(std::move(budget)) {}

  void* Allocate(std::size_t length) override {
    if (!budget_->tryReserve(length)) return nullptr;
    void* p = std::calloc(length ? length : 1, 1);
    if (!p) budget_->release(length);
    return p;
  }
  void* AllocateUninitialized(std::size_t length) override {
    if (!budget_->tryReserve(length)) return nullptr;
    void* p = std::malloc(length ? length : 1);
    if (!p) budget_->release(length);
    return p;
  }
  // May run on a GC thread.
  void Free(void* data, std::size_t length) override {
    std::free(data);
    budget_->release(length);
  }

 private:
  const std::shared_ptr<ByteBudget> budget_;
};

// An error's `stack`, as Node and V8 10 formatted it: "Name: message" (read through the error's
// getters, which V8 13's own formatter skips: it would print a DOMException as its bare name),
// then one line per call site. An app's Error.prepareStackTrace, if it set one, decides instead,
// as in Node. Runs inside the app's turn (stacks are formatted on first read), under its watchdog.
v8::MaybeLocal<v8::Value> formatStack(v8::Local<v8::Context> context, v8::Local<v8::Value> error,
                                      v8::Local<v8::Array> sites) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::Local<v8::Value> errorCtor, prepare;
  // A getter of the app's on `Error` or `prepareStackTrace` may throw: the exception propagates
  // (an empty result), as it would from Node's own formatter.
  if (!context->Global()
           ->Get(context, v8::String::NewFromUtf8Literal(isolate, "Error"))
           .ToLocal(&errorCtor)) {
    return {};
  }
  if (errorCtor->IsObject()) {
    if (!errorCtor.As<v8::Object>()
             ->Get(context, v8::String::NewFromUtf8Literal(isolate, "prepareStackTrace"))
             .ToLocal(&prepare)) {
      return {};
    }
    if (prepare->IsFunction()) {
      v8::Local<v8::Value> argv[] = {error, sites};
      return prepare.As<v8::Function>()->Call(context, errorCtor, 2, argv);
    }
  }
  auto text = [&](const char* key, const char* fallback) -> v8::Local<v8::String> {
    v8::Local<v8::String> fallbackText =
        v8::String::NewFromUtf8(isolate, fallback).ToLocalChecked();
    if (!error->IsObject()) return fallbackText;
    v8::TryCatch guard(isolate);
    v8::Local<v8::Value> value;
    v8::Local<v8::String> out;
    if (!error.As<v8::Object>()
             ->Get(context, v8::String::NewFromUtf8(isolate, key).ToLocalChecked())
             .ToLocal(&value) ||
        value->IsUndefined() || !value->ToString(context).ToLocal(&out)) {
      return fallbackText;
    }
    return out;
  };
  v8::Local<v8::String> name = text("name", "Error");
  v8::Local<v8::String> message = text("message", "");
  v8::Local<v8::String> header =
      name->Length() == 0 ? message
      : message->Length() == 0
          ? name
          : v8::String::Concat(
                isolate,
                v8::String::Concat(isolate, name, v8::String::NewFromUtf8Literal(isolate, ": ")),
                message);
  v8::Local<v8::String> prefix = v8::String::NewFromUtf8Literal(isolate, "\n    at ");
  for (std::uint32_t i = 0; i < sites->Length(); ++i) {
    v8::Local<v8::Value> site;
    v8::Local<v8::String> line;
    if (!sites->Get(context, i).ToLocal(&site) || !site->ToString(context).ToLocal(&line)) {
      return {};
    }
    header = v8::String::Concat(isolate, v8::String::Concat(isolate, header, prefix), line);
  }
  return header;
}

}  // namespace

IsolateOwner::IsolateOwner(const IsolateLimits& limits, std::function<void()> wake,
                           const IsolateSnapshot* from)
    : tasks_(std::make_shared<ForegroundTasks>(std::move(wake))),
      delegate_(std::make_unique<TaskDelegate>(tasks_)),
      snapshot_(from) {
  v8::Isolate::CreateParams params = allocate(limits);
  if (from) {
    params.snapshot_blob = &from->blob;
    params.external_references = from->externalReferences;
  }
  v8::Isolate::Initialize(isolate_, params);
  setUp();
}

IsolateOwner::IsolateOwner(const IsolateLimits& limits, MakeSnapshot make)
    : tasks_(std::make_shared<ForegroundTasks>(std::function<void()>())),
      delegate_(std::make_unique<TaskDelegate>(tasks_)) {
  v8::Isolate::CreateParams params = allocate(limits);
  params.external_references = make.externalReferences;
  // The creator initialises the isolate (from V8's own snapshot) and enters it.
  creator_ = std::make_unique<v8::SnapshotCreator>(isolate_, params);
  setUp();
}

// Not node::NewIsolate: it takes no CreateParams (no heap limit) and installs node's callbacks.
// Allocate, register with node's platform under our own task delegate (foreground tasks come to
// this thread, never to node's event loop); the constructors then initialise with these
// parameters.
v8::Isolate::CreateParams IsolateOwner::allocate(const IsolateLimits& limits) {
  budget_ = std::make_shared<ByteBudget>(limits.arrayBufferMb << 20);
  allocator_ = std::make_unique<CappedAllocator>(budget_);
  v8::Isolate::CreateParams params;
  params.array_buffer_allocator = allocator_.get();
  params.constraints.ConfigureDefaultsFromHeapSize(0, limits.heapMb << 20);
  oldGenerationLimit_ = params.constraints.max_old_generation_size_in_bytes();
  isolate_ = v8::Isolate::Allocate();
  // Natives find the budget through the isolate (isolateMemoryBudget); the owner does not move.
  isolate_->SetData(kMemoryBudgetSlot, &budget_);
  nodePlatform().RegisterIsolate(isolate_, delegate_.get());
  return params;
}

void IsolateOwner::setUp() {
  // We run microtasks ourselves, after each turn, so a turn's watchdog covers them.
  isolate_->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  // Atomics.wait blocks the thread without using CPU: neither the CPU watchdog nor a deadline
  // checked between turns would ever end it, and every isolate of the thread would wait with it.
  isolate_->SetAllowAtomicsWait(false);
  isolate_->AddNearHeapLimitCallback(&IsolateOwner::onNearHeapLimit, this);
  isolate_->SetPrepareStackTraceCallback(&formatStack);
  installFatalErrorHandlers(isolate_);
  isolate_->AddGCEpilogueCallback(&IsolateOwner::afterGc, this, v8::kGCTypeMarkSweepCompact);
}

void IsolateOwner::afterGc(v8::Isolate* isolate, v8::GCType, v8::GCCallbackFlags, void* data) {
  auto* self = static_cast<IsolateOwner*>(data);
  v8::HeapStatistics stats;
  isolate->GetHeapStatistics(&stats);
  // A full collection empties the young generation: what is left lives in the old one.
  if (stats.used_heap_size() > self->oldGenerationLimit_ / 100 * 70) {
    ++self->highAfterFullGc_;
  } else {
    self->highAfterFullGc_ = 0;
  }
}

IsolateOwner::~IsolateOwner() {
  ISOLANE_DCHECK_OWNING_THREAD(thread_);
  tasks_->clear();
  if (creator_) {
    // A snapshot maker's isolate is spent once its blob is made: the process exits next. Leave
    // it registered rather than dispose what the creator may already have torn down.
    creator_.reset();
    return;
  }
  // Disposes, unregisters and frees in the order node's platform needs.
  nodePlatform().DisposeIsolate(isolate_);
}

std::size_t IsolateOwner::runForegroundTasks() {
  ISOLANE_DCHECK_OWNING_THREAD(thread_);
  v8::Isolate::Scope scope(isolate_);
  v8::HandleScope handles(isolate_);
  return tasks_->runDue(isolate_);
}

std::optional<std::chrono::steady_clock::time_point> IsolateOwner::nextForegroundTask() {
  return tasks_->nextDue();
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

#include "web/compression.h"

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/array_buffers.h"
#include "runtime/context_state.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "runtime/memory_budget.h"

namespace isolane {
namespace {

using Args = v8::FunctionCallbackInfo<v8::Value>;

constexpr std::size_t kOutputPiece = 64 * 1024;  // one Uint8Array of output at most
constexpr std::size_t kMaxOpenStreams = 4096;    // per context
// What zlibRead answers when it has no bytes to give.
constexpr std::int32_t kZlibNeedsInput = 0;
constexpr std::int32_t kZlibFinished = 1;

class ZlibRegistry;

// One zlib stream; its memory comes from (and is counted by) its registry.
struct ZlibStream {
  z_stream z{};
  bool decompress = false;
  bool initialised = false;
  bool ended = false;      // zlib reached the end of the (de)compressed stream
  bool finishing = false;  // the input is complete: what is pending is the last of it
  bool failed = false;     // an error was thrown: the stream takes nothing more
  // The input fed and not yet consumed: a copy, so the app's buffer may change or be detached,
  // charged to the isolate's memory budget until zlib has consumed it.
  std::vector<std::uint8_t> pending;
  std::size_t pendingOffset = 0;
  ByteCharge pendingCharge;

  void dropConsumedInput() {
    if (pendingOffset < pending.size()) return;
    pending.clear();
    pending.shrink_to_fit();
    pendingOffset = 0;
    pendingCharge.reset();
  }

  ~ZlibStream() {
    if (!initialised) return;
    if (decompress) {
      inflateEnd(&z);
    } else {
      deflateEnd(&z);
    }
  }
};

// A context's open streams, and the bytes zlib holds for them (charged to the isolate's memory
// budget as well as capped per context).
class ZlibRegistry {
 public:
  explicit ZlibRegistry(std::shared_ptr<ByteBudget> budget) : budget(std::move(budget)) {}
  // The streams go first: ending them gives their memory back through release(), which counts
  // it in bytesInUse.
  ~ZlibRegistry() { streams.clear(); }

  std::unordered_map<std::uint32_t, std::unique_ptr<ZlibStream>> streams;
  std::uint32_t nextId = 1;
  std::size_t bytesInUse = 0;
  const std::shared_ptr<ByteBudget> budget;
  // Where zlibRead writes its output before copying it into an ArrayBuffer: one for the
  // context (its natives run one at a time), on the heap rather than the native stack.
  std::vector<std::uint8_t> output;

  // zlib's allocator: malloc with the block's size in front, refused past the cap.
  static void* allocate(void* opaque, unsigned items, unsigned size) {
    auto* self = static_cast<ZlibRegistry*>(opaque);
    std::size_t bytes = static_cast<std::size_t>(items) * size;
    if (bytes > kCompressionMemoryCap || self->bytesInUse + bytes > kCompressionMemoryCap) {
      return Z_NULL;
    }
    if (self->budget && !self->budget->tryReserve(bytes)) return Z_NULL;
    auto* block = static_cast<std::size_t*>(std::malloc(bytes + sizeof(std::max_align_t)));
    if (block == nullptr) {
      if (self->budget) self->budget->release(bytes);
      return Z_NULL;
    }
    *block = bytes;
    self->bytesInUse += bytes;
    return reinterpret_cast<char*>(block) + sizeof(std::max_align_t);
  }
  static void release(void* opaque, void* address) {
    auto* self = static_cast<ZlibRegistry*>(opaque);
    auto* block =
        reinterpret_cast<std::size_t*>(static_cast<char*>(address) - sizeof(std::max_align_t));
    self->bytesInUse -= *block;
    if (self->budget) self->budget->release(*block);
    std::free(block);
  }
};

ZlibRegistry& registryOf(const Args& args) {
  ContextState* state = ContextState::from(args.GetIsolate()->GetCurrentContext());
  if (!state->compression) {
    state->compression = std::make_shared<ZlibRegistry>(isolateMemoryBudget(args.GetIsolate()));
  }
  return *static_cast<ZlibRegistry*>(state->compression.get());
}

void throwError(v8::Isolate* isolate,
                v8::Local<v8::Value> (*make)(v8::Local<v8::String>, v8::Local<v8::Value>),
                const std::string& message) {
  v8::Local<v8::String> text =
      v8::String::NewFromUtf8(isolate, message.data(), v8::NewStringType::kNormal,
                              static_cast<int>(message.size()))
          .ToLocalChecked();
  isolate->ThrowException(make(text, {}));
}

void throwType(v8::Isolate* isolate, const std::string& message) {
  throwError(isolate, v8::Exception::TypeError, message);
}

void throwRange(v8::Isolate* isolate, const std::string& message) {
  throwError(isolate, v8::Exception::RangeError, message);
}

// windowBits for a format: zlib's wrapper, raw deflate, or gzip's wrapper. 0: unknown.
int windowBitsOf(const std::string& format) {
  if (format == "deflate") return 15;
  if (format == "deflate-raw") return -15;
  if (format == "gzip") return 15 + 16;
  return 0;
}

ZlibStream* findStream(const Args& args, ZlibRegistry& registry) {
  if (!args[0]->IsUint32()) return nullptr;
  auto it = registry.streams.find(args[0].As<v8::Uint32>()->Value());
  return it == registry.streams.end() ? nullptr : it->second.get();
}

}  // namespace

void zlibCreate(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  JsScope js(args);
  std::string format;
  if (!stringValue(js, args[0], &format) || windowBitsOf(format) == 0) {
    return throwType(isolate, "format must be \"gzip\", \"deflate\" or \"deflate-raw\"");
  }
  ZlibRegistry& registry = registryOf(args);
  if (registry.streams.size() >= kMaxOpenStreams) {
    return throwRange(isolate, "too many compression streams are open");
  }
  auto stream = std::make_unique<ZlibStream>();
  stream->decompress = args[1]->IsTrue();
  stream->z.zalloc = &ZlibRegistry::allocate;
  stream->z.zfree = &ZlibRegistry::release;
  stream->z.opaque = &registry;
  int windowBits = windowBitsOf(format);
  int rc = stream->decompress ? inflateInit2(&stream->z, windowBits)
                              : deflateInit2(&stream->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                             windowBits, 8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) {
    return throwRange(isolate, rc == Z_MEM_ERROR ? "compression streams use too much memory"
                                                 : "a compression stream could not start");
  }
  stream->initialised = true;
  std::uint32_t id = registry.nextId;
  while (id == 0 || registry.streams.count(id) != 0) ++id;  // ids wrap after 2^32 streams
  registry.nextId = id + 1;
  registry.streams.emplace(id, std::move(stream));
  args.GetReturnValue().Set(id);
}

void zlibFeed(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ZlibRegistry& registry = registryOf(args);
  ZlibStream* stream = findStream(args, registry);
  if (stream == nullptr || stream->failed) {
    return throwType(isolate, "the compression stream is closed");
  }
  if (stream->finishing) return throwType(isolate, "the compression stream's input has ended");
  if (stream->pendingOffset < stream->pending.size()) {
    return throwType(isolate, "the compression stream's last input is not consumed yet");
  }
  std::size_t size = 0;
  const std::uint8_t* data = nullptr;
  if (args[1]->IsArrayBufferView()) {
    auto view = args[1].As<v8::ArrayBufferView>();
    std::shared_ptr<v8::BackingStore> store = view->Buffer()->GetBackingStore();
    auto* base = static_cast<const std::uint8_t*>(store->Data());
    if (base != nullptr) {
      size = std::min(view->ByteLength(),
                      store->ByteLength() - std::min(store->ByteLength(), view->ByteOffset()));
      data = base + view->ByteOffset();
    }
  } else if (!args[1]->IsNull()) {
    return throwType(isolate, "input must be a Uint8Array or null");
  }
  if (stream->decompress && stream->ended && size > 0) {
    stream->failed = true;
    return throwType(isolate, "The compressed data has bytes after its end");
  }
  ByteCharge charge = chargeIsolateOrThrow(isolate, size, "compression stream input");
  if (!charge) return;
  stream->pending.assign(data, data + size);
  stream->pendingOffset = 0;
  stream->pendingCharge = std::move(charge);
  stream->finishing = args[2]->IsTrue();
}

void zlibRead(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ZlibRegistry& registry = registryOf(args);
  ZlibStream* stream = findStream(args, registry);
  if (stream == nullptr || stream->failed) {
    return throwType(isolate, "the compression stream is closed");
  }
  auto fail = [&](bool range, const std::string& message) {
    stream->failed = true;
    return range ? throwRange(isolate, message) : throwType(isolate, message);
  };
  z_stream& z = stream->z;
  registry.output.resize(kOutputPiece);
  std::uint8_t* buffer = registry.output.data();
  for (;;) {
    std::size_t remaining = stream->pending.size() - stream->pendingOffset;
    if (stream->ended) {
      if (remaining > 0) return fail(false, "The compressed data has bytes after its end");
      return args.GetReturnValue().Set(stream->finishing ? kZlibFinished : kZlibNeedsInput);
    }
    if (remaining == 0 && !stream->finishing) {
      return args.GetReturnValue().Set(kZlibNeedsInput);
    }
    // zlib counts in uInt: at most 1 GiB of input a step.
    std::size_t step = std::min<std::size_t>(remaining, std::size_t{1} << 30);
    z.next_in = stream->pending.data() + stream->pendingOffset;
    z.avail_in = static_cast<uInt>(step);
    z.next_out = buffer;
    z.avail_out = static_cast<uInt>(kOutputPiece);
    bool last = step == remaining;
    int flush = stream->finishing && last ? Z_FINISH : Z_NO_FLUSH;
    int rc = stream->decompress ? inflate(&z, flush) : deflate(&z, flush);
    std::size_t consumed = step - z.avail_in;
    std::size_t produced = kOutputPiece - z.avail_out;
    stream->pendingOffset += consumed;
    stream->dropConsumedInput();
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
      return fail(false, std::string("The compressed data is not valid: ") +
                             (z.msg ? z.msg : "corrupt input"));
    }
    if (rc == Z_MEM_ERROR) return fail(true, "compression streams use too much memory");
    if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
      return fail(false, "the compression stream is in an inconsistent state");
    }
    if (rc == Z_STREAM_END) stream->ended = true;
    if (produced > 0) {
      v8::Local<v8::ArrayBuffer> ab;
      if (!newArrayBuffer(isolate, produced, buffer).ToLocal(&ab)) {
        stream->failed = true;
        return;  // RangeError thrown: the isolate's ArrayBuffer cap
      }
      return args.GetReturnValue().Set(v8::Uint8Array::New(ab, 0, produced));
    }
    if (consumed == 0 && !stream->ended) {
      // No progress: zlib needs input it cannot have (a truncated stream at its end) or more
      // room, which it had. Either way nothing more will come.
      if (stream->finishing) {
        return fail(false, stream->decompress
                               ? "The compressed data ended before its end"
                               : "the compression stream is in an inconsistent state");
      }
      return args.GetReturnValue().Set(kZlibNeedsInput);
    }
  }
}

void zlibEnd(const Args& args) {
  ZlibRegistry& registry = registryOf(args);
  if (args[0]->IsUint32()) registry.streams.erase(args[0].As<v8::Uint32>()->Value());
}

}  // namespace isolane

#pragma once
// The natives behind CompressionStream and DecompressionStream (Compression Standard): zlib
// streams in gzip, deflate (zlib) and deflate-raw formats, from the zlib the hosting node
// exports (DESIGN.md: a node-hosted process uses node's copies of the libraries it carries).
//
// Each context keeps its open streams in a registry (ContextState::compression), freed with
// the context; JavaScript ends a stream when it finishes or fails, and a FinalizationRegistry
// ends one its app dropped. zlib's own memory is counted per context and capped, so an app
// cannot hold unbounded native memory by opening streams it never reads.
//
// Thread rule: executor thread only (the natives run inside the context's isolate).

#include <v8.h>

#include <cstddef>
#include <memory>

namespace isolane {

// The native memory zlib may hold for one context's open streams at once.
inline constexpr std::size_t kCompressionMemoryCap = std::size_t{64} << 20;

// host.zlibCreate(format, decompress) -> id. format: "gzip" | "deflate" | "deflate-raw".
void zlibCreate(const v8::FunctionCallbackInfo<v8::Value>& args);
// host.zlibFeed(id, bytes | null, finish): the next input (copied), once the last is consumed;
// with finish, the input is complete. TypeError when the stream is closed, failed or finished,
// or for bytes after a decompressed stream's end.
void zlibFeed(const v8::FunctionCallbackInfo<v8::Value>& args);
// host.zlibRead(id) -> Uint8Array of at most 64 KiB of output, or 0 (it needs more input) or 1
// (the stream is complete). Output is made only as it is read, so a decompression bomb costs what
// its reader takes. TypeError for corrupt, truncated or trailing compressed data; RangeError when
// zlib's memory or the isolate's ArrayBuffers run out. A stream that threw takes nothing more.
void zlibRead(const v8::FunctionCallbackInfo<v8::Value>& args);
// host.zlibEnd(id): frees the stream; unknown ids are ignored.
void zlibEnd(const v8::FunctionCallbackInfo<v8::Value>& args);

}  // namespace isolane

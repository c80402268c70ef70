#pragma once
// Frames on the master <-> worker socketpair (wire.fbs): an 8-byte header (the message's length,
// a multiple of 8, and the trailer's, both 32-bit big-endian), a FlatBuffers `wire::Frame`, then
// the trailer (the raw bytes of a body) and zero padding to a multiple of 8. Every frame starts
// 8-aligned in the reader's buffer, so its message is verified where it was read, and a body is
// never copied into or out of a FlatBuffers vector. The ceiling (message and trailer together) is
// checked by the sender (an oversized frame is a typed error naming its size, never a dead
// session) and by the receiver (before it reads on).

#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/http_exchange.h"
#include "ipc/wire_generated.h"
#include "util/result.h"

namespace isolane {

inline constexpr std::uint32_t kProtocolVersion = 8;
inline constexpr std::size_t kDefaultMaxFrameBytes = 32u << 20;  // 32 MiB
inline constexpr std::size_t kFrameHeaderBytes = 8;
inline constexpr std::size_t kFrameAlign = 8;
// The zero bytes after a trailer of `trailerBytes` that bring the frame to a multiple of 8.
inline constexpr std::size_t framePadding(std::size_t trailerBytes) {
  return (kFrameAlign - trailerBytes % kFrameAlign) % kFrameAlign;
}
inline constexpr char kFramePad[kFrameAlign] = {};
// The messages that may carry a trailer (wire.fbs says which bytes it is); any other with one is
// a protocol error.
bool carriesTrailer(wire::Message type);
// Response bodies that are not streamed cross in chunks of at most this size.
inline constexpr std::size_t kBodyChunkBytes = 256u << 10;
// The largest body an app may answer with in one piece (a string or bytes, or any body of a
// service-binding call, which is read whole); a larger one is a 500, not a memory hazard for the
// server. Streamed bodies have no such bound: they cross by credit (ipc/body_pipe.h).
inline constexpr std::size_t kMaxResponseBodyBytes = 64u << 20;

// The app a LoadApp frame describes (missing strings read as empty).
AppSpec decodeLoadApp(const wire::LoadApp& m);
// What an AppLoaded frame says of the code cache (an unknown use reads as kNone).
AppLoadReport decodeAppLoadReport(const wire::AppLoaded& m);

// Builders. Each returns the whole frame (header, message, trailer and padding) or an error
// naming its size when it would exceed `maxFrameBytes`. The ...Head builders of the messages that
// carry bodies return the header and message only, for a sender that writes the trailer from
// where it already is (then framePadding() zero bytes).
Result<std::string> encodeHello(std::int32_t pid, std::size_t maxFrameBytes,
                                const std::string& engineKey = {});
Result<std::string> encodeLoadApp(const AppSpec& app, std::size_t maxFrameBytes);
Result<std::string> encodeAppLoaded(const std::string& name, bool ok, const std::string& error,
                                    std::size_t maxFrameBytes, const AppLoadReport& report = {});
// `sentNs`: the steady clock (CLOCK_MONOTONIC) in ns as the master sends it (wire.fbs Request).
Result<std::string> encodeRequest(std::uint64_t id, const AppRequest& request,
                                  std::uint32_t deadlineMs, std::size_t maxFrameBytes,
                                  std::uint64_t sentNs = 0);
Result<std::string> encodeResponseHead(std::uint64_t id, const AppResponse& response,
                                       std::size_t maxFrameBytes);
// The whole answer in one frame (a ResponseHead that is `complete`), for a body that is not
// streamed and fits in one chunk (kBodyChunkBytes).
Result<std::string> encodeWholeResponse(std::uint64_t id, const AppResponse& response,
                                        std::size_t maxFrameBytes);
Result<std::string> encodeBodyChunk(std::uint64_t id, std::string_view data,
                                    std::size_t maxFrameBytes);
Result<std::string> encodeBodyChunkHead(std::uint64_t id, std::size_t dataBytes,
                                        std::size_t maxFrameBytes);
// A streamed piece the worker put in one of its stream blocks (ipc/stream_blocks.h).
Result<std::string> encodeSharedBodyChunk(std::uint64_t id, std::uint32_t block,
                                          std::uint32_t size, std::size_t max);
Result<std::string> encodeEnd(std::uint64_t id, std::size_t maxFrameBytes);
Result<std::string> encodeFailure(std::uint64_t id, FailureKind kind, const std::string& detail,
                                  std::size_t maxFrameBytes);
Result<std::string> encodeRequestBody(std::uint64_t id, std::string_view data, bool end,
                                      const std::string& error, std::size_t maxFrameBytes);
Result<std::string> encodeRequestBodyHead(std::uint64_t id, std::size_t dataBytes, bool end,
                                          const std::string& error, std::size_t maxFrameBytes);
// A piece of a streamed request body the master put in one of the worker's request blocks.
Result<std::string> encodeSharedRequestBody(std::uint64_t id, std::uint32_t block,
                                            std::uint32_t size, std::size_t maxFrameBytes);
Result<std::string> encodeBodyCredit(std::uint64_t id, std::uint32_t bytes,
                                     std::size_t maxFrameBytes);
Result<std::string> encodeCredit(std::uint64_t id, std::uint32_t bytes, std::size_t maxFrameBytes);
// unstartedOnly: a withdrawal (see wire.fbs): only a request that has not started is given back.
Result<std::string> encodeCancel(std::uint64_t id, std::size_t maxFrameBytes,
                                 bool unstartedOnly = false);
Result<std::string> encodeHeartbeat(std::uint64_t seq, std::size_t maxFrameBytes);
Result<std::string> encodeHeartbeatAck(const wire::HeartbeatAckT& ack, std::size_t maxFrameBytes);
Result<std::string> encodeShutdown(std::uint32_t drainMs, std::size_t maxFrameBytes);

// Accumulates bytes from a stream socket and yields verified frames, in place: the socket is read
// straight into the reader's buffer (room() and commit()), and a frame is handed out where it lies.
//
// Thread rule: one reader thread owns a FrameReader.
class FrameReader {
 public:
  explicit FrameReader(std::size_t maxFrameBytes) : maxFrameBytes_(maxFrameBytes) {}

  // Where the next read goes: at least `atLeast` bytes, and all of the frame under way when it
  // needs more (so one read can take the rest of it). Frames handed out before are let go of.
  std::span<char> room(std::size_t atLeast);
  // `n` bytes were read into room().
  void commit(std::size_t n);
  // The same for bytes that are somewhere else already (a copy).
  void append(const char* data, std::size_t n);

  enum class Next { kFrame, kNeedMore, kError };
  // kFrame: *frame points into this reader, and trailer() is its trailer; both stay valid until
  // the next call of next() or room(). kError: *error says what was wrong (an oversized length
  // names its size); the stream is unusable after that.
  Next next(const wire::Frame** frame, std::string* error);
  std::string_view trailer() const { return trailer_; }

  // Bytes held (received, not yet handed out).
  std::size_t buffered() const { return end_ - begin_; }

 private:
  // The length of the frame at begin_ (header, message, trailer, padding), or 0 when its header
  // is not complete yet or is wrong (next() says what).
  std::size_t pendingFrameBytes() const;
  void reserve(std::size_t bytes);

  const std::size_t maxFrameBytes_;
  std::unique_ptr<std::uint64_t[]> storage_;  // 8-aligned, as FlatBuffers' scalars want
  std::size_t capacity_ = 0;                  // bytes of storage_
  std::size_t begin_ = 0;                     // the first byte not handed out
  std::size_t end_ = 0;                       // the end of what was received
  std::string_view trailer_;
  char* bytes() { return reinterpret_cast<char*>(storage_.get()); }
  const char* bytes() const { return reinterpret_cast<const char*>(storage_.get()); }
};

// Converts between wire headers and ours.
HeaderList headersFrom(const flatbuffers::Vector<flatbuffers::Offset<wire::Header>>* headers);
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Header>>> wireHeaders(
    flatbuffers::FlatBufferBuilder& fbb, const HeaderList& list);
// The frame's header and message from the finished builder, for a trailer of `trailerBytes` that
// the caller adds (appendTrailer, or a gathered write); or the size that is over the ceiling.
Result<std::string> finishFrame(flatbuffers::FlatBufferBuilder& fbb, wire::Message type,
                                flatbuffers::Offset<void> message, std::size_t maxFrameBytes,
                                std::size_t trailerBytes = 0);
// Appends a trailer and its padding to a frame's head (a copy of `trailer`).
Result<std::string> appendTrailer(Result<std::string> head, std::string_view trailer);

}  // namespace isolane

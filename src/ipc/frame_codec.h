#pragma once
// Frames on the master <-> worker socketpair: a 4-byte big-endian length, then a FlatBuffers
// `wire::Frame` (wire.fbs). The ceiling is checked by the sender (an oversized frame is a typed
// error naming its size, never a dead session) and by the receiver (before it reads the payload).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/app_spec.h"
#include "ipc/http_exchange.h"
#include "ipc/wire_generated.h"
#include "util/result.h"

namespace isolane {

inline constexpr std::uint32_t kProtocolVersion = 7;
inline constexpr std::size_t kDefaultMaxFrameBytes = 32u << 20;  // 32 MiB
inline constexpr std::size_t kFrameHeaderBytes = 4;
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

// Builders. Each returns the whole frame (length prefix included) or an error naming its size
// when it would exceed `maxFrameBytes`.
Result<std::string> encodeHello(std::int32_t pid, std::size_t maxFrameBytes,
                                const std::string& engineKey = {});
Result<std::string> encodeLoadApp(const AppSpec& app, std::size_t maxFrameBytes);
Result<std::string> encodeAppLoaded(const std::string& name, bool ok, const std::string& error,
                                    std::size_t maxFrameBytes, const AppLoadReport& report = {});
Result<std::string> encodeRequest(std::uint64_t id, const AppRequest& request,
                                  std::uint32_t deadlineMs, std::size_t maxFrameBytes);
Result<std::string> encodeResponseHead(std::uint64_t id, const AppResponse& response,
                                       std::size_t maxFrameBytes);
// The whole answer in one frame (a ResponseHead that is `complete`), for a body that is not
// streamed and fits in one chunk (kBodyChunkBytes).
Result<std::string> encodeWholeResponse(std::uint64_t id, const AppResponse& response,
                                        std::size_t maxFrameBytes);
Result<std::string> encodeBodyChunk(std::uint64_t id, std::string_view data,
                                    std::size_t maxFrameBytes);
Result<std::string> encodeEnd(std::uint64_t id, std::size_t maxFrameBytes);
Result<std::string> encodeFailure(std::uint64_t id, FailureKind kind, const std::string& detail,
                                  std::size_t maxFrameBytes);
Result<std::string> encodeRequestBody(std::uint64_t id, std::string_view data, bool end,
                                      const std::string& error, std::size_t maxFrameBytes);
Result<std::string> encodeBodyCredit(std::uint64_t id, std::uint32_t bytes,
                                     std::size_t maxFrameBytes);
Result<std::string> encodeCredit(std::uint64_t id, std::uint32_t bytes, std::size_t maxFrameBytes);
// unstartedOnly: a withdrawal (see wire.fbs): only a request that has not started is given back.
Result<std::string> encodeCancel(std::uint64_t id, std::size_t maxFrameBytes,
                                 bool unstartedOnly = false);
Result<std::string> encodeHeartbeat(std::uint64_t seq, std::size_t maxFrameBytes);
Result<std::string> encodeHeartbeatAck(const wire::HeartbeatAckT& ack, std::size_t maxFrameBytes);
Result<std::string> encodeShutdown(std::uint32_t drainMs, std::size_t maxFrameBytes);

// Accumulates bytes from a stream socket and yields verified frames.
//
// Thread rule: one reader thread owns a FrameReader.
class FrameReader {
 public:
  explicit FrameReader(std::size_t maxFrameBytes) : maxFrameBytes_(maxFrameBytes) {}

  void append(const char* data, std::size_t n) { buffer_.append(data, n); }

  enum class Next { kFrame, kNeedMore, kError };
  // kFrame: *frame points into this reader and stays valid until the next call.
  // kError: *error says what was wrong (an oversized length names its size); the stream is
  // unusable after that.
  Next next(const wire::Frame** frame, std::string* error);

 private:
  const std::size_t maxFrameBytes_;
  std::string buffer_;
  std::size_t consumed_ = 0;            // bytes of buffer_ already handed out
  std::vector<std::uint64_t> scratch_;  // the current frame's payload, aligned
};

// Converts between wire headers and ours.
HeaderList headersFrom(const flatbuffers::Vector<flatbuffers::Offset<wire::Header>>* headers);
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Header>>> wireHeaders(
    flatbuffers::FlatBufferBuilder& fbb, const HeaderList& list);
// Length-prefixes the finished builder, or names the size that is over the ceiling.
Result<std::string> finishFrame(flatbuffers::FlatBufferBuilder& fbb, wire::Message type,
                                flatbuffers::Offset<void> message, std::size_t maxFrameBytes);

}  // namespace isolane

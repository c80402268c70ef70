#include "ipc/frame_codec.h"

#include <algorithm>
#include <cstring>

namespace isolane {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

namespace {
void putBigEndian32(char* out, std::uint32_t n) {
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
}
std::uint32_t readBigEndian32(const char* in) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(in);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}
std::size_t alignUp(std::size_t n) { return (n + kFrameAlign - 1) / kFrameAlign * kFrameAlign; }
std::string tooBig(std::size_t bytes, std::size_t max) {
  return "frame of " + std::to_string(bytes) + " bytes exceeds the ceiling of " +
         std::to_string(max) + " bytes";
}
}  // namespace

bool carriesTrailer(wire::Message type) {
  switch (type) {
    case wire::Message::Request:
    case wire::Message::RequestBody:
    case wire::Message::ResponseHead:
    case wire::Message::BodyChunk:
    case wire::Message::FetchCall:
    case wire::Message::FetchEvent:
      return true;
    default:
      return false;
  }
}

Result<std::string> finishFrame(FlatBufferBuilder& fbb, wire::Message type, Offset<void> message,
                                std::size_t maxFrameBytes, std::size_t trailerBytes) {
  fbb.Finish(wire::CreateFrame(fbb, type, message));
  std::size_t size = fbb.GetSize();
  // The message is padded at its end. FlatBuffers aligns its fields from the end of the buffer
  // and pads the whole to its largest alignment, so the start is aligned too; the reader keeps
  // every message's start 8-aligned.
  std::size_t padded = alignUp(size);
  if (padded + trailerBytes > maxFrameBytes) {
    return Error{tooBig(padded + trailerBytes, maxFrameBytes)};
  }
  if (trailerBytes > 0 && !carriesTrailer(type)) {
    return Error{"a " + std::string(wire::EnumNameMessage(type)) + " frame carries no trailer"};
  }
  std::string out;
  out.reserve(kFrameHeaderBytes + padded + trailerBytes + framePadding(trailerBytes));
  out.resize(kFrameHeaderBytes);
  putBigEndian32(out.data(), static_cast<std::uint32_t>(padded));
  putBigEndian32(out.data() + 4, static_cast<std::uint32_t>(trailerBytes));
  out.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), size);
  out.append(padded - size, '\0');
  return out;
}

Result<std::string> appendTrailer(Result<std::string> head, std::string_view trailer) {
  if (!head) return head;
  head.value().append(trailer);
  head.value().append(kFramePad, framePadding(trailer.size()));
  return head;
}

Offset<flatbuffers::Vector<Offset<wire::Header>>> wireHeaders(FlatBufferBuilder& fbb,
                                                              const HeaderList& list) {
  std::vector<Offset<wire::Header>> out;
  out.reserve(list.size());
  for (const auto& [name, value] : list) {
    out.push_back(wire::CreateHeader(fbb, fbb.CreateString(name), fbb.CreateString(value)));
  }
  return fbb.CreateVector(out);
}

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }
Result<std::string> finish(FlatBufferBuilder& fbb, wire::Message type, Offset<void> message,
                           std::size_t maxFrameBytes, std::size_t trailerBytes = 0) {
  return finishFrame(fbb, type, message, maxFrameBytes, trailerBytes);
}
auto headers(FlatBufferBuilder& fbb, const HeaderList& list) { return wireHeaders(fbb, list); }

}  // namespace

HeaderList headersFrom(const flatbuffers::Vector<Offset<wire::Header>>* list) {
  HeaderList out;
  if (!list) return out;
  out.reserve(list->size());
  for (const wire::Header* h : *list) {
    if (h) out.emplace_back(str(h->name()), str(h->value()));
  }
  return out;
}

Result<std::string> encodeHello(std::int32_t pid, std::size_t max, const std::string& engineKey) {
  FlatBufferBuilder fbb(64 + engineKey.size());
  auto m = wire::CreateHello(fbb, kProtocolVersion, pid, fbb.CreateString(engineKey));
  return finish(fbb, wire::Message::Hello, m.Union(), max);
}

Result<std::string> encodeLoadApp(const AppSpec& app, std::size_t max) {
  std::size_t moduleBytes = app.modules ? app.modules->bytes() : 0;
  if (moduleBytes + app.codeCache.size() > max) {
    return Error{"app " + app.name + ": its modules (" + std::to_string(moduleBytes) +
                 " bytes) and code cache do not fit the frame ceiling of " + std::to_string(max) +
                 " bytes"};
  }
  FlatBufferBuilder fbb(1024 + app.codeCache.size() + moduleBytes);
  auto cache = app.codeCache.empty()
                   ? flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>()
                   : fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(app.codeCache.data()),
                                      app.codeCache.size());
  std::vector<Offset<wire::ModuleFile>> files;
  if (app.modules) {
    for (const ModuleFile& f : app.modules->files) {
      std::vector<Offset<wire::ModuleImport>> imports;
      for (const ModuleFile::Import& im : f.imports) {
        imports.push_back(wire::CreateModuleImport(fbb, fbb.CreateString(im.specifier),
                                                   fbb.CreateString(im.path),
                                                   fbb.CreateString(im.error)));
      }
      files.push_back(wire::CreateModuleFile(fbb, fbb.CreateString(f.path),
                                             fbb.CreateString(f.source), fbb.CreateString(f.error),
                                             fbb.CreateVector(imports)));
    }
  }
  auto m = wire::CreateLoadApp(
      fbb, fbb.CreateString(app.name), fbb.CreateString(app.modulePath), headers(fbb, app.vars),
      fbb.CreateVectorOfStrings(app.fetchAllow), headers(fbb, app.services), cache,
      fbb.CreateString(app.sourceSha256), static_cast<std::uint32_t>(app.heapLimitMb),
      app.cpuLimitMs, app.modules ? fbb.CreateVector(files) : 0,
      fbb.CreateString(app.modules ? app.modules->error : std::string()));
  return finish(fbb, wire::Message::LoadApp, m.Union(), max);
}

AppSpec decodeLoadApp(const wire::LoadApp& m) {
  auto str = [](const flatbuffers::String* s) { return s ? s->str() : std::string(); };
  AppSpec spec{str(m.name()), str(m.module_()), headersFrom(m.vars())};
  if (m.fetch_allow()) {
    for (const flatbuffers::String* s : *m.fetch_allow()) {
      if (s) spec.fetchAllow.push_back(s->str());
    }
  }
  spec.services = headersFrom(m.services());
  if (m.code_cache()) spec.codeCache.assign(m.code_cache()->begin(), m.code_cache()->end());
  spec.sourceSha256 = str(m.source_sha256());
  spec.heapLimitMb = m.heap_limit_mb();
  spec.cpuLimitMs = m.cpu_limit_ms();
  if (m.modules()) {
    auto modules = std::make_shared<AppModules>();
    modules->error = str(m.modules_error());
    for (const wire::ModuleFile* f : *m.modules()) {
      if (!f) continue;
      ModuleFile file{str(f->path()), str(f->source()), str(f->error()), {}};
      if (f->imports()) {
        for (const wire::ModuleImport* im : *f->imports()) {
          if (im) file.imports.push_back({str(im->specifier()), str(im->path()), str(im->error())});
        }
      }
      modules->files.push_back(std::move(file));
    }
    spec.modules = std::move(modules);
  }
  return spec;
}

AppLoadReport decodeAppLoadReport(const wire::AppLoaded& m) {
  AppLoadReport report;
  switch (m.code_cache_use()) {
    case wire::CodeCacheUse::Accepted:
      report.cache = CodeCacheUse::kAccepted;
      break;
    case wire::CodeCacheUse::Rejected:
      report.cache = CodeCacheUse::kRejected;
      break;
    default:
      report.cache = CodeCacheUse::kNone;
  }
  if (m.source_sha256()) report.sourceSha256 = m.source_sha256()->str();
  if (m.code_cache()) report.producedCache.assign(m.code_cache()->begin(), m.code_cache()->end());
  return report;
}

Result<std::string> encodeAppLoaded(const std::string& name, bool ok, const std::string& error,
                                    std::size_t max, const AppLoadReport& report) {
  FlatBufferBuilder fbb(256 + report.producedCache.size());
  auto cache =
      report.producedCache.empty()
          ? flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>()
          : fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(report.producedCache.data()),
                             report.producedCache.size());
  auto m = wire::CreateAppLoaded(fbb, fbb.CreateString(name), ok, fbb.CreateString(error),
                                 static_cast<wire::CodeCacheUse>(report.cache),
                                 fbb.CreateString(report.sourceSha256), cache);
  return finish(fbb, wire::Message::AppLoaded, m.Union(), max);
}

Result<std::string> encodeRequest(std::uint64_t id, const AppRequest& r, std::uint32_t deadlineMs,
                                  std::size_t max, std::uint64_t sentNs) {
  // A body that is whole at dispatch is the trailer; a streamed one follows in RequestBody frames.
  FlatBufferBuilder fbb(512);
  auto m = wire::CreateRequest(fbb, id, fbb.CreateString(r.app), fbb.CreateString(r.requestId),
                               fbb.CreateString(r.method), fbb.CreateString(r.url),
                               headers(fbb, r.headers), 0, deadlineMs, r.bodyStream != nullptr,
                               sentNs);
  return appendTrailer(finish(fbb, wire::Message::Request, m.Union(), max, r.body.size()), r.body);
}

namespace {
// A ResponseHead; `whole`: complete, with the body in it.
Result<std::string> responseHead(std::uint64_t id, const AppResponse& r, std::size_t max,
                                 bool whole) {
  FlatBufferBuilder fbb(512);
  auto m = wire::CreateResponseHead(fbb, id, static_cast<std::uint16_t>(r.status),
                                    fbb.CreateString(r.statusText), headers(fbb, r.headers),
                                    r.streamed, whole);
  std::string_view body = whole ? std::string_view(r.body) : std::string_view();
  return appendTrailer(finish(fbb, wire::Message::ResponseHead, m.Union(), max, body.size()), body);
}
}  // namespace

Result<std::string> encodeResponseHead(std::uint64_t id, const AppResponse& r, std::size_t max) {
  return responseHead(id, r, max, /*whole=*/false);
}

Result<std::string> encodeWholeResponse(std::uint64_t id, const AppResponse& r, std::size_t max) {
  if (r.streamed || r.body.size() > kBodyChunkBytes) {
    return Error{"a whole response is not streamed and has at most " +
                 std::to_string(kBodyChunkBytes) + " bytes of body"};
  }
  return responseHead(id, r, max, /*whole=*/true);
}

Result<std::string> encodeBodyChunkHead(std::uint64_t id, std::size_t dataBytes,
                                        std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateBodyChunk(fbb, id);
  return finish(fbb, wire::Message::BodyChunk, m.Union(), max, dataBytes);
}

Result<std::string> encodeSharedBodyChunk(std::uint64_t id, std::uint32_t block,
                                          std::uint32_t size, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateBodyChunk(fbb, id, /*shared=*/true, block, size);
  return finish(fbb, wire::Message::BodyChunk, m.Union(), max);
}

Result<std::string> encodeBodyChunk(std::uint64_t id, std::string_view data, std::size_t max) {
  return appendTrailer(encodeBodyChunkHead(id, data.size(), max), data);
}

Result<std::string> encodeEnd(std::uint64_t id, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateEnd(fbb, id);
  return finish(fbb, wire::Message::End, m.Union(), max);
}

Result<std::string> encodeFailure(std::uint64_t id, FailureKind kind, const std::string& detail,
                                  std::size_t max) {
  FlatBufferBuilder fbb(256);
  // A detail is log text; cap it so a huge exception message cannot make the frame itself fail.
  std::string capped = detail.size() > std::size_t{64} * 1024
                           ? detail.substr(0, std::size_t{64} * 1024) + "..."
                           : detail;
  auto m = wire::CreateFailure(fbb, id, static_cast<std::uint8_t>(kind), fbb.CreateString(capped));
  return finish(fbb, wire::Message::Failure, m.Union(), max);
}

Result<std::string> encodeRequestBodyHead(std::uint64_t id, std::size_t dataBytes, bool end,
                                          const std::string& error, std::size_t max) {
  FlatBufferBuilder fbb(128);
  auto m = wire::CreateRequestBody(fbb, id, end, fbb.CreateString(error));
  return finish(fbb, wire::Message::RequestBody, m.Union(), max, dataBytes);
}

Result<std::string> encodeSharedRequestBody(std::uint64_t id, std::uint32_t block,
                                            std::uint32_t size, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateRequestBody(fbb, id, /*end=*/false, 0, /*shared=*/true, block, size);
  return finish(fbb, wire::Message::RequestBody, m.Union(), max);
}

Result<std::string> encodeRequestBody(std::uint64_t id, std::string_view data, bool end,
                                      const std::string& error, std::size_t max) {
  return appendTrailer(encodeRequestBodyHead(id, data.size(), end, error, max), data);
}

Result<std::string> encodeBodyCredit(std::uint64_t id, std::uint32_t bytes, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateBodyCredit(fbb, id, bytes);
  return finish(fbb, wire::Message::BodyCredit, m.Union(), max);
}

Result<std::string> encodeCredit(std::uint64_t id, std::uint32_t bytes, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateCredit(fbb, id, bytes);
  return finish(fbb, wire::Message::Credit, m.Union(), max);
}

Result<std::string> encodeCancel(std::uint64_t id, std::size_t max, bool unstartedOnly) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateCancel(fbb, id, unstartedOnly);
  return finish(fbb, wire::Message::Cancel, m.Union(), max);
}

Result<std::string> encodeHeartbeat(std::uint64_t seq, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateHeartbeat(fbb, seq);
  return finish(fbb, wire::Message::Heartbeat, m.Union(), max);
}

Result<std::string> encodeHeartbeatAck(const wire::HeartbeatAckT& ack, std::size_t max) {
  FlatBufferBuilder fbb(128);
  auto m = wire::CreateHeartbeatAck(fbb, &ack);
  return finish(fbb, wire::Message::HeartbeatAck, m.Union(), max);
}

Result<std::string> encodeShutdown(std::uint32_t drainMs, std::size_t max) {
  FlatBufferBuilder fbb(64);
  auto m = wire::CreateShutdown(fbb, drainMs);
  return finish(fbb, wire::Message::Shutdown, m.Union(), max);
}

std::size_t FrameReader::pendingFrameBytes() const {
  if (end_ - begin_ < kFrameHeaderBytes) return 0;
  std::size_t message = readBigEndian32(bytes() + begin_);
  std::size_t trailer = readBigEndian32(bytes() + begin_ + 4);
  if (message + trailer > maxFrameBytes_) return 0;
  return kFrameHeaderBytes + message + trailer + framePadding(trailer);
}

void FrameReader::reserve(std::size_t bytes) {
  std::size_t capacity = alignUp(std::max({bytes, capacity_ * 2, std::size_t{64} << 10}));
  auto grown = std::make_unique_for_overwrite<std::uint64_t[]>(capacity / sizeof(std::uint64_t));
  if (end_ > begin_) std::memcpy(grown.get(), this->bytes() + begin_, end_ - begin_);
  storage_ = std::move(grown);
  capacity_ = capacity;
  end_ -= begin_;
  begin_ = 0;
}

std::span<char> FrameReader::room(std::size_t atLeast) {
  trailer_ = {};
  // A buffer that held a large frame (an app's modules) is let go of once it is empty.
  constexpr std::size_t kKeptBytes = std::size_t{1} << 20;
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (capacity_ > kKeptBytes) {
      storage_.reset();
      capacity_ = 0;
    }
  }
  std::size_t frame = pendingFrameBytes();
  std::size_t need = std::max(atLeast, frame > buffered() ? frame - buffered() : 0);
  if (capacity_ - end_ < need) {
    if (begin_ > 0 && capacity_ - (end_ - begin_) >= need) {
      // Only the start of one frame is kept, moved to the front (a frame boundary stays 8-aligned).
      std::memmove(bytes(), bytes() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    } else {
      reserve(end_ - begin_ + need);
    }
  }
  return {bytes() + end_, capacity_ - end_};
}

void FrameReader::commit(std::size_t n) { end_ += std::min(n, capacity_ - end_); }

void FrameReader::append(const char* data, std::size_t n) {
  if (n == 0) return;
  std::span<char> to = room(n);
  std::memcpy(to.data(), data, n);
  commit(n);
}

FrameReader::Next FrameReader::next(const wire::Frame** frame, std::string* error) {
  trailer_ = {};
  std::size_t available = end_ - begin_;
  const char* at = bytes() + begin_;
  // An oversized message length is refused as soon as it is in, before the rest of the header.
  if (available >= 4 && readBigEndian32(at) > maxFrameBytes_) {
    *error = tooBig(readBigEndian32(at), maxFrameBytes_);
    return Next::kError;
  }
  if (available < kFrameHeaderBytes) return Next::kNeedMore;
  std::size_t length = readBigEndian32(at);
  std::size_t trailer = readBigEndian32(at + 4);
  if (length + trailer > maxFrameBytes_) {
    *error = tooBig(length + trailer, maxFrameBytes_);
    return Next::kError;
  }
  if (length < 8) {
    *error = "frame of " + std::to_string(length) + " bytes is too short to hold a message";
    return Next::kError;
  }
  if (length % kFrameAlign != 0) {
    *error = "a message of " + std::to_string(length) + " bytes, not a multiple of 8";
    return Next::kError;
  }
  std::size_t total = kFrameHeaderBytes + length + trailer + framePadding(trailer);
  if (available < total) return Next::kNeedMore;
  // Every frame is a multiple of 8 long and the buffer is 8-aligned, so the message is aligned
  // where it lies. Bounds, offsets, nesting and string termination are checked here; after this
  // the accessors cannot read outside the message.
  const auto* message = reinterpret_cast<const std::uint8_t*>(at + kFrameHeaderBytes);
  flatbuffers::Verifier verifier(message, length, /*max_depth=*/16, /*max_tables=*/100'000);
  if (!wire::VerifyFrameBuffer(verifier)) {
    *error = "malformed frame (" + std::to_string(length) + " bytes failed verification)";
    return Next::kError;
  }
  const wire::Frame* f = wire::GetFrame(message);
  if (f->message_type() == wire::Message::NONE || f->message() == nullptr) {
    *error = "frame without a message";
    return Next::kError;
  }
  if (trailer > 0 && !carriesTrailer(f->message_type())) {
    *error = "a trailer of " + std::to_string(trailer) + " bytes on a " +
             wire::EnumNameMessage(f->message_type()) + " frame, which carries none";
    return Next::kError;
  }
  begin_ += total;
  trailer_ = std::string_view(at + kFrameHeaderBytes + length, trailer);
  *frame = f;
  return Next::kFrame;
}

}  // namespace isolane

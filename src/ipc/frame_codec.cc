#include "ipc/frame_codec.h"

#include <cstring>

namespace isolane {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Result<std::string> finishFrame(FlatBufferBuilder& fbb, wire::Message type, Offset<void> message,
                                std::size_t maxFrameBytes) {
  fbb.Finish(wire::CreateFrame(fbb, type, message));
  std::size_t size = fbb.GetSize();
  if (size > maxFrameBytes) {
    return Error{"frame of " + std::to_string(size) + " bytes exceeds the ceiling of " +
                 std::to_string(maxFrameBytes) + " bytes"};
  }
  std::string out(kFrameHeaderBytes + size, '\0');
  auto n = static_cast<std::uint32_t>(size);
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  std::memcpy(out.data() + kFrameHeaderBytes, fbb.GetBufferPointer(), size);
  return out;
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
                           std::size_t maxFrameBytes) {
  return finishFrame(fbb, type, message, maxFrameBytes);
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
                                  std::size_t max) {
  if (r.body.size() > max) {
    return Error{"frame of more than " + std::to_string(r.body.size()) +
                 " bytes exceeds the ceiling of " + std::to_string(max) + " bytes"};
  }
  FlatBufferBuilder fbb(512 + r.body.size());
  auto body = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(r.body.data()), r.body.size());
  auto m =
      wire::CreateRequest(fbb, id, fbb.CreateString(r.app), fbb.CreateString(r.requestId),
                          fbb.CreateString(r.method), fbb.CreateString(r.url),
                          headers(fbb, r.headers), body, 0, deadlineMs, r.bodyStream != nullptr);
  return finish(fbb, wire::Message::Request, m.Union(), max);
}

namespace {
// A ResponseHead; `whole`: complete, with the body in it.
Result<std::string> responseHead(std::uint64_t id, const AppResponse& r, std::size_t max,
                                 bool whole) {
  FlatBufferBuilder fbb(512 + (whole ? r.body.size() : 0));
  Offset<flatbuffers::Vector<std::uint8_t>> body;
  if (whole) {
    body = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(r.body.data()), r.body.size());
  }
  auto m = wire::CreateResponseHead(fbb, id, static_cast<std::uint16_t>(r.status),
                                    fbb.CreateString(r.statusText), headers(fbb, r.headers),
                                    r.streamed, body, whole);
  return finish(fbb, wire::Message::ResponseHead, m.Union(), max);
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

Result<std::string> encodeBodyChunk(std::uint64_t id, std::string_view data, std::size_t max) {
  if (data.size() > max) {
    return Error{"frame of more than " + std::to_string(data.size()) +
                 " bytes exceeds the ceiling of " + std::to_string(max) + " bytes"};
  }
  FlatBufferBuilder fbb(64 + data.size());
  auto bytes = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  auto m = wire::CreateBodyChunk(fbb, id, bytes);
  return finish(fbb, wire::Message::BodyChunk, m.Union(), max);
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

Result<std::string> encodeRequestBody(std::uint64_t id, std::string_view data, bool end,
                                      const std::string& error, std::size_t max) {
  FlatBufferBuilder fbb(128 + data.size());
  auto bytes = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  auto m = wire::CreateRequestBody(fbb, id, bytes, end, fbb.CreateString(error));
  return finish(fbb, wire::Message::RequestBody, m.Union(), max);
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

FrameReader::Next FrameReader::next(const wire::Frame** frame, std::string* error) {
  // Drop what the previous call handed out; compact only when it is worth it.
  if (consumed_ > 0 && (consumed_ >= buffer_.size() || consumed_ > std::size_t{64} * 1024)) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  std::size_t available = buffer_.size() - consumed_;
  if (available < kFrameHeaderBytes) return Next::kNeedMore;
  const auto* p = reinterpret_cast<const std::uint8_t*>(buffer_.data() + consumed_);
  std::size_t length = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) |
                       (std::size_t{p[2]} << 8) | std::size_t{p[3]};
  if (length > maxFrameBytes_) {
    *error = "frame of " + std::to_string(length) + " bytes exceeds the ceiling of " +
             std::to_string(maxFrameBytes_) + " bytes";
    return Next::kError;
  }
  if (length < 8) {
    *error = "frame of " + std::to_string(length) + " bytes is too short to hold a message";
    return Next::kError;
  }
  if (available < kFrameHeaderBytes + length) return Next::kNeedMore;
  // FlatBuffers wants its scalars aligned; the payload sits 4 bytes into a byte stream, so it is
  // copied into 8-byte-aligned scratch first.
  scratch_.resize((length + 7) / 8);
  std::memcpy(scratch_.data(), p + kFrameHeaderBytes, length);
  const auto* payload = reinterpret_cast<const std::uint8_t*>(scratch_.data());
  // Bounds, offsets, nesting and string termination are checked here; after this the accessors
  // cannot read outside the payload.
  flatbuffers::Verifier verifier(payload, length, /*max_depth=*/16, /*max_tables=*/100'000);
  if (!wire::VerifyFrameBuffer(verifier)) {
    *error = "malformed frame (" + std::to_string(length) + " bytes failed verification)";
    return Next::kError;
  }
  const wire::Frame* f = wire::GetFrame(payload);
  if (f->message_type() == wire::Message::NONE || f->message() == nullptr) {
    *error = "frame without a message";
    return Next::kError;
  }
  consumed_ += kFrameHeaderBytes + length;
  *frame = f;
  return Next::kFrame;
}

}  // namespace isolane

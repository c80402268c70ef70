// libFuzzer target: whatever bytes a worker sends, the master's frame reader answers with frames
// it verified or a clear error, never a crash or a read out of bounds. Built with clang and
// -fsanitize=fuzzer,address by `make fuzz`; the unit suite runs the same entry point over a
// deterministic corpus (tests/ipc_test.cc).

#include <cstddef>
#include <cstdint>
#include <string>

#include "ipc/frame_codec.h"

namespace {

// Touches every field a master handler would read, and every byte of the trailer.
std::size_t touch(const isolane::wire::Frame& frame, std::string_view trailer) {
  using namespace isolane;
  std::size_t n = 0;
  for (char c : trailer) n += static_cast<unsigned char>(c);
  auto str = [&](const flatbuffers::String* s) { n += s ? s->size() : 0; };
  switch (frame.message_type()) {
    case wire::Message::Hello: n += frame.message_as_Hello()->version(); break;
    case wire::Message::AppLoaded: str(frame.message_as_AppLoaded()->error()); break;
    case wire::Message::ResponseHead: {
      const auto* m = frame.message_as_ResponseHead();
      str(m->status_text());
      n += headersFrom(m->headers()).size();
      n += m->complete();
      break;
    }
    case wire::Message::BodyChunk: n += frame.message_as_BodyChunk()->id(); break;
    case wire::Message::Failure: str(frame.message_as_Failure()->detail()); break;
    case wire::Message::HeartbeatAck: n += frame.message_as_HeartbeatAck()->rss_bytes(); break;
    case wire::Message::Request: {
      const auto* m = frame.message_as_Request();
      str(m->app());
      str(m->url());
      n += headersFrom(m->headers()).size();
      break;
    }
    case wire::Message::LoadApp: str(frame.message_as_LoadApp()->module_()); break;
    default: break;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  isolane::FrameReader reader(1 << 20);
  // Feed in two pieces, as a stream would deliver it.
  std::size_t half = size / 2;
  for (int part = 0; part < 2; ++part) {
    const auto* p = reinterpret_cast<const char*>(data) + (part ? half : 0);
    reader.append(p, part ? size - half : half);
    const isolane::wire::Frame* frame = nullptr;
    std::string error;
    isolane::FrameReader::Next next;
    while ((next = reader.next(&frame, &error)) == isolane::FrameReader::Next::kFrame) {
      volatile std::size_t sink = touch(*frame, reader.trailer());
      (void)sink;
    }
    if (next == isolane::FrameReader::Next::kError) return 0;
  }
  return 0;
}

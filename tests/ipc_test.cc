// The wire protocol: frames round-trip, the ceiling is enforced on both sides with the size named,
// and malformed input is an error, never a crash (with the fuzz target run over a corpus).

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ipc/frame_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace isolane {
namespace {

const wire::Frame* readOne(FrameReader& reader, const std::string& bytes) {
  reader.append(bytes.data(), bytes.size());
  const wire::Frame* frame = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&frame, &error), FrameReader::Next::kFrame) << error;
  return frame;
}

TEST(Frames, RequestRoundTrips) {
  AppRequest req{"app", "rid", "POST", "http://h/p", {{"a", "1"}, {"b", "2"}}, std::string("x\0y", 3)};
  auto bytes = encodeRequest(42, req, 5000, kDefaultMaxFrameBytes, 123'456'789'012);
  ASSERT_TRUE(bytes) << bytes.error();
  FrameReader reader(kDefaultMaxFrameBytes);
  const wire::Frame* f = readOne(reader, bytes.value());
  ASSERT_EQ(f->message_type(), wire::Message::Request);
  const wire::Request* m = f->message_as_Request();
  EXPECT_EQ(m->id(), 42u);
  EXPECT_EQ(m->url()->str(), "http://h/p");
  EXPECT_EQ(m->deadline_ms(), 5000u);
  EXPECT_EQ(m->sent_ns(), 123'456'789'012u);
  EXPECT_EQ(headersFrom(m->headers()), req.headers);
  EXPECT_EQ(reader.trailer(), req.body);  // the body is the frame's trailer
}

TEST(Frames, ManyFramesArrivingByteByByte) {
  std::string stream;
  for (std::uint64_t i = 0; i < 20; ++i) stream += encodeHeartbeat(i, 1 << 20).value();
  FrameReader reader(1 << 20);
  std::uint64_t seen = 0;
  for (char c : stream) {
    reader.append(&c, 1);
    const wire::Frame* f = nullptr;
    std::string error;
    while (reader.next(&f, &error) == FrameReader::Next::kFrame) {
      EXPECT_EQ(f->message_as_Heartbeat()->seq(), seen++);
    }
  }
  EXPECT_EQ(seen, 20u);
}

TEST(Frames, SenderRefusesAnOversizedFrameNamingItsSize) {
  AppRequest req{"a", "r", "POST", "http://h/", {}, std::string(2000, 'x')};
  auto bytes = encodeRequest(1, req, 0, 1024);
  ASSERT_FALSE(bytes);
  EXPECT_NE(bytes.error().find("exceeds the ceiling of 1024 bytes"), std::string::npos)
      << bytes.error();
}

TEST(Frames, ReceiverRefusesAnOversizedLengthBeforeReadingIt) {
  FrameReader reader(1024);
  std::string huge("\x7f\xff\xff\xff\0\0\0\0", 8);
  reader.append(huge.data(), huge.size());
  const wire::Frame* f = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kError);
  EXPECT_NE(error.find("frame of 2147483647 bytes exceeds the ceiling of 1024 bytes"),
            std::string::npos)
      << error;
}

TEST(Frames, GarbageIsAnError) {
  FrameReader reader(1 << 20);
  std::string garbage("\x00\x00\x00\x10\0\0\0\0" "0123456789abcdef", 24);
  reader.append(garbage.data(), garbage.size());
  const wire::Frame* f = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kError);
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
}

TEST(Frames, TruncatedFrameWaitsForMore) {
  std::string bytes = encodeEnd(7, 1 << 20).value();
  FrameReader reader(1 << 20);
  reader.append(bytes.data(), bytes.size() - 1);
  const wire::Frame* f = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kNeedMore);
  reader.append(bytes.data() + bytes.size() - 1, 1);
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame);
}

// A body crosses as the frame's trailer, padded so that the next frame starts 8-aligned; the
// reader hands it out where it lies, and the frame after it reads as well.
TEST(Frames, BodiesAreTrailersAndEveryFrameStaysAligned) {
  std::string stream;
  std::vector<std::string> bodies = {"", "a", "seven b", "eight by", std::string(70'001, 'z')};
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    std::string chunk = encodeBodyChunk(i, bodies[i], 1 << 20).value();
    EXPECT_EQ(chunk.size() % kFrameAlign, 0u) << i;
    stream += chunk + encodeEnd(i, 1 << 20).value();
  }
  FrameReader reader(1 << 20);
  reader.append(stream.data(), stream.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const wire::Frame* f = nullptr;
    std::string error;
    ASSERT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame) << error;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f) % alignof(std::uint32_t), 0u);
    ASSERT_EQ(f->message_type(), wire::Message::BodyChunk);
    EXPECT_EQ(f->message_as_BodyChunk()->id(), i);
    EXPECT_EQ(reader.trailer(), bodies[i]);
    ASSERT_EQ(reader.next(&f, &error), FrameReader::Next::kFrame) << error;
    EXPECT_EQ(f->message_type(), wire::Message::End);
    EXPECT_TRUE(reader.trailer().empty());
  }
  EXPECT_EQ(reader.buffered(), 0u);
}

// The split form (a head, and the body written from where it is) is the same frame on the wire.
TEST(Frames, AHeadAndItsTrailerApartAreTheWholeFrame) {
  std::string body(1000, 'q');
  std::string whole = encodeRequestBody(5, body, false, "", 1 << 20).value();
  std::string head = encodeRequestBodyHead(5, body.size(), false, "", 1 << 20).value();
  EXPECT_EQ(head + body + std::string(kFramePad, framePadding(body.size())), whole);
  // The ceiling counts the trailer.
  EXPECT_FALSE(encodeBodyChunkHead(1, 2000, 1024));
  EXPECT_FALSE(encodeBodyChunk(1, std::string(1020, 'x'), 1024));
}

TEST(Frames, ATrailerOnAMessageThatCarriesNoneIsAnError) {
  std::string end = encodeEnd(3, 1 << 20).value();
  end[7] = 8;  // the trailer's length
  end += "smuggled";
  FrameReader reader(1 << 20);
  reader.append(end.data(), end.size());
  const wire::Frame* f = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kError);
  EXPECT_NE(error.find("on a End frame, which carries none"), std::string::npos) << error;
  // And a sender cannot make one.
  flatbuffers::FlatBufferBuilder fbb;
  auto m = wire::CreateEnd(fbb, 3);
  EXPECT_FALSE(finishFrame(fbb, wire::Message::End, m.Union(), 1 << 20, 8));
}

TEST(Frames, AMessageLengthThatIsNotAMultipleOfEightIsAnError) {
  std::string odd("\x00\x00\x00\x0c\0\0\0\0" "twelve bytes", 20);
  FrameReader reader(1 << 20);
  reader.append(odd.data(), odd.size());
  const wire::Frame* f = nullptr;
  std::string error;
  EXPECT_EQ(reader.next(&f, &error), FrameReader::Next::kError);
  EXPECT_NE(error.find("not a multiple of 8"), std::string::npos) << error;
}

// Read in place: room() offers at least what was asked, and the whole rest of a frame under way
// (so one read can take a large body); a frame is handed out from where it was read.
TEST(Frames, ReadingInPlaceOffersRoomForTheFrameUnderWay) {
  std::string big = encodeBodyChunk(1, std::string(300'000, 'b'), 1 << 20).value();
  std::string small = encodeHeartbeat(9, 1 << 20).value();
  std::string stream = small + big + small;
  FrameReader reader(1 << 20);
  std::size_t at = 0;
  std::vector<std::string> seen;
  while (at < stream.size()) {
    std::span<char> room = reader.room(4096);
    ASSERT_GE(room.size(), 4096u);
    std::size_t n = std::min(room.size(), stream.size() - at);
    std::memcpy(room.data(), stream.data() + at, n);
    reader.commit(n);
    at += n;
    const wire::Frame* f = nullptr;
    std::string error;
    while (reader.next(&f, &error) == FrameReader::Next::kFrame) {
      seen.push_back(std::string(wire::EnumNameMessage(f->message_type())) + ":" +
                     std::to_string(reader.trailer().size()));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"Heartbeat:0", "BodyChunk:300000", "Heartbeat:0"}));
}

// The fuzz target over a deterministic corpus: valid frames, then each mutated many ways.
TEST(Frames, FuzzTargetSurvivesMutatedFrames) {
  std::vector<std::string> seeds = {
      encodeHello(1, 1 << 20).value(),
      encodeRequest(1, AppRequest{"a", "r", "GET", "http://x/", {{"k", "v"}}, "body"}, 0, 1 << 20)
          .value(),
      encodeResponseHead(2, AppResponse{200, "OK", {{"a", "b"}}, "", {}, "", ""}, 1 << 20).value(),
      encodeBodyChunk(2, "chunk", 1 << 20).value(),
      encodeFailure(3, FailureKind::kCpuLimit, "detail", 1 << 20).value(),
      encodeHeartbeatAck(wire::HeartbeatAckT{}, 1 << 20).value(),
      encodeLoadApp(AppSpec{"n", "/m.js", {{"K", "V"}}, {"127.0.0.1"}, {{"B", "b"}}}, 1 << 20)
          .value(),
  };
  std::mt19937 rng(12345);
  int runs = 0;
  for (const std::string& seed : seeds) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size());
    for (int i = 0; i < 3000; ++i) {
      std::string m = seed;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = rng() % m.size();
        switch (rng() % 3) {
          case 0: m[at] = static_cast<char>(rng()); break;
          case 1: m.erase(at, 1 + rng() % 8); break;
          default: m.insert(at, 1 + rng() % 8, static_cast<char>(rng())); break;
        }
        if (m.empty()) m = "x";
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(m.data()), m.size());
      ++runs;
    }
  }
  EXPECT_EQ(runs, 3000 * static_cast<int>(seeds.size()));
}

}  // namespace
}  // namespace isolane

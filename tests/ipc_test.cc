// The wire protocol: frames round-trip, the ceiling is enforced on both sides with the size named,
// and malformed input is an error, never a crash (with the fuzz target run over a corpus).

#include <gtest/gtest.h>

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
  auto bytes = encodeRequest(42, req, 5000, kDefaultMaxFrameBytes);
  ASSERT_TRUE(bytes) << bytes.error();
  FrameReader reader(kDefaultMaxFrameBytes);
  const wire::Frame* f = readOne(reader, bytes.value());
  ASSERT_EQ(f->message_type(), wire::Message::Request);
  const wire::Request* m = f->message_as_Request();
  EXPECT_EQ(m->id(), 42u);
  EXPECT_EQ(m->url()->str(), "http://h/p");
  EXPECT_EQ(m->deadline_ms(), 5000u);
  EXPECT_EQ(headersFrom(m->headers()), req.headers);
  EXPECT_EQ(std::string(m->body()->begin(), m->body()->end()), req.body);
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
  std::string huge("\x7f\xff\xff\xff", 4);
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
  std::string garbage("\x00\x00\x00\x10" "0123456789abcdef", 20);
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

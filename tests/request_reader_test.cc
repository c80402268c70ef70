// RequestReader on its own (no sockets): the strict rules, the bounds, pipelining, and the fuzz
// target over a deterministic corpus of valid and hostile requests, each mutated many ways.

#include "front/request_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace isolane {
namespace {

struct Outcome {
  std::vector<RequestHead> heads;
  std::vector<std::string> bodies;
  std::optional<RequestError> error;
};

Outcome readAll(const std::string& bytes, RequestLimits limits = {}) {
  Outcome out;
  RequestReader reader(limits);
  boost::beast::flat_buffer buffer;
  std::size_t at = 0;
  for (;;) {
    switch (reader.parse(buffer)) {
      case RequestReader::Event::kHead:
        continue;
      case RequestReader::Event::kComplete:
        out.heads.push_back(reader.head());
        out.bodies.push_back(reader.takeBody());
        reader.reset();
        continue;
      case RequestReader::Event::kError:
        out.error = reader.error();
        return out;
      case RequestReader::Event::kNeedMore: {
        if (at == bytes.size()) return out;
        std::size_t n = std::min(reader.bufferLimit() - buffer.size(), bytes.size() - at);
        auto space = buffer.prepare(n);
        std::memcpy(space.data(), bytes.data() + at, n);
        buffer.commit(n);
        at += n;
      }
    }
  }
}

TEST(RequestReader, ReadsPipelinedRequestsWithTheirBodies) {
  Outcome o = readAll(
      "POST /a?x=1 HTTP/1.1\r\nHost: h:8080\r\nContent-Length: 3\r\n\r\nabc"
      "PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;e=1\r\nhi\r\n0\r\nT: "
      "x\r\n\r\n"
      "GET http://other:9/c HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_FALSE(o.error) << o.error->message;
  ASSERT_EQ(o.heads.size(), 3u);
  EXPECT_EQ(o.heads[0].target, "/a?x=1");
  EXPECT_EQ(o.heads[0].host, "h:8080");
  EXPECT_EQ(o.bodies[0], "abc");
  EXPECT_EQ(o.bodies[1], "hi");
  EXPECT_EQ(o.heads[1].headers.size(), 2u) << "the trailer is not a header";
  EXPECT_EQ(o.heads[2].host, "other:9");
  EXPECT_EQ(o.heads[2].target, "/c");
}

// What the front sends whole, body inline: a Content-Length body all in the buffer, not above
// the bound; a chunked one, a larger one, or one still on its way streams.
TEST(RequestReader, SaysWhenASmallBodyCameWholeWithItsHead) {
  auto afterHead = [](const std::string& bytes, std::size_t max) {
    RequestReader reader({});
    boost::beast::flat_buffer buffer;
    auto space = buffer.prepare(bytes.size());
    std::memcpy(space.data(), bytes.data(), bytes.size());
    buffer.commit(bytes.size());
    EXPECT_EQ(reader.parse(buffer), RequestReader::Event::kHead) << bytes;
    return reader.bodyWhollyIn(buffer, max);
  };
  const std::string head = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n";
  EXPECT_TRUE(afterHead(head + "hello", 5));
  EXPECT_TRUE(afterHead(head + "helloGET / HTTP/1.1\r\nHost: h\r\n\r\n", 5)) << "pipelined";
  EXPECT_FALSE(afterHead(head + "hel", 5)) << "still on its way";
  EXPECT_FALSE(afterHead(head + "hello", 4)) << "over the bound";
  EXPECT_FALSE(afterHead("POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "5\r\nhello\r\n0\r\n\r\n",
                         1000))
      << "chunked";
}

TEST(RequestReader, RefusesWhatServersCouldReadTwoWays) {
  struct Case {
    const char* bytes;
    unsigned status;
    const char* code;
  } cases[] = {
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 400,
       "transfer-encoding"},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400,
       "transfer-encoding"},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "transfer-encoding"},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\nContent-Length: 0\r\n\r\n",
       400, "transfer-encoding"},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "host"},
      {"GET / HTTP/1.1\r\nHost: a/b?c#d\r\n\r\n", 400, "host"},
      {"GET / HTTP/1.1\r\n\r\n", 400, "host"},
      {"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 400, "malformed"},  // Beast reads only 1.0 and 1.1
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 400, "malformed"},
      {"GET /x#y HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target"},
      {"GET / HTTP/1.1\nHost: a\n\n", 400, "bare-lf"},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
       400, "obs-fold"},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\t5\r\n\r\nhello", 400, "obs-fold"},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\nhello", 400, "content-length"},
      {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400,
       "content-length"},
      {"GET /a\\b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "target"},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n", 400,
       "bare-lf"},
  };
  for (const Case& c : cases) {
    Outcome o = readAll(c.bytes);
    ASSERT_TRUE(o.error) << c.bytes;
    EXPECT_EQ(o.error->status, c.status) << c.bytes;
    EXPECT_STREQ(o.error->code, c.code) << c.bytes;
    EXPECT_TRUE(o.heads.empty()) << c.bytes;
  }
}

TEST(RequestReader, DotSegmentsAreResolvedBeforeRouting) {
  // The router must see the path the app's request.url (WHATWG URL) will show.
  struct Case {
    const char* target;
    const char* expected;
  } cases[] = {
      {"/admin/../x", "/x"},        {"/a/./b", "/a/b"},         {"/a/b/..", "/a/"},
      {"/..", "/"},                 {"/a/%2e%2E/b?q=/../", "/b?q=/../"}, {"/a//b/", "/a//b/"},
      {"/.%2e/a", "/a"},            {"/a/.", "/a/"},            {"/", "/"},
  };
  for (const Case& c : cases) {
    Outcome o = readAll(std::string("GET ") + c.target + " HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_FALSE(o.error) << c.target;
    ASSERT_EQ(o.heads.size(), 1u);
    EXPECT_EQ(o.heads[0].target, c.expected) << c.target;
  }
  Outcome abs = readAll("GET http://other:81/a/../b HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(abs.heads.size(), 1u);
  EXPECT_EQ(abs.heads[0].target, "/b");
  ASSERT_EQ(abs.heads[0].headers.size(), 1u);
  EXPECT_EQ(abs.heads[0].headers[0].second, "other:81") << "Host follows the target's authority";
}

TEST(RequestReader, BoundsEveryByteItHolds) {
  RequestLimits limits{1024, 100};
  Outcome head = readAll("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(2000, 'a'), limits);
  ASSERT_TRUE(head.error);
  EXPECT_EQ(head.error->status, 431u);
  Outcome ext = readAll(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(5000, 'e'),
      limits);
  ASSERT_TRUE(ext.error);
  EXPECT_STREQ(ext.error->code, "chunk-framing-too-large");
  std::string trailers;
  while (trailers.size() < 5000) trailers += "T: v\r\n";
  Outcome trail = readAll(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + trailers, limits);
  ASSERT_TRUE(trail.error);
  EXPECT_STREQ(trail.error->code, "chunk-framing-too-large");
  Outcome body = readAll("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", limits);
  ASSERT_TRUE(body.error);
  EXPECT_EQ(body.error->status, 413u);
}

TEST(RequestReader, FuzzTargetSurvivesMutatedRequests) {
  const std::vector<std::string> seeds = {
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
      "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: "
      "h\r\n\r\n",
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=\"q\"\r\nabc\r\n0\r\nTrailer: t\r\n\r\n",
      "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\nContent-Length: 0\r\n\r\n"
      "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n",
      "GET http://h:1/x?y HTTP/1.0\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [::1]:80\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
  };
  std::mt19937 rng(4242);
  int runs = 0;
  for (const std::string& seed : seeds) {
    for (int i = 0; i < 2000; ++i) {
      std::string m = std::string(1, static_cast<char>(rng())) + seed;
      int edits = i == 0 ? 0 : 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = 1 + rng() % (m.size() - 1);
        static const char kInteresting[] = "\r\n:;, \t0aF\x7f\x80";
        char c =
            rng() % 2 ? kInteresting[rng() % (sizeof kInteresting - 1)] : static_cast<char>(rng());
        switch (rng() % 3) {
          case 0:
            m[at] = c;
            break;
          case 1:
            m.erase(at, 1 + rng() % 8);
            break;
          default:
            m.insert(at, 1 + rng() % 8, c);
            break;
        }
        if (m.size() < 2) m += "x";
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(m.data()), m.size());
      ++runs;
    }
  }
  EXPECT_EQ(runs, 2000 * static_cast<int>(seeds.size()));
}

}  // namespace
}  // namespace isolane

// libFuzzer target: whatever bytes a client sends, the HTTP front's RequestReader yields requests
// that passed every check, or a refusal, never a crash, a read out of bounds or a buffer past its
// bound; and how the bytes were cut into reads changes nothing (a differential check: the same
// input read in the largest reads the front allows and in small, input-chosen pieces must give
// the same requests). Built with clang and -fsanitize=fuzzer,address by
// `make fuzz`; the unit suite runs the same entry point over a deterministic corpus
// (tests/request_reader_test.cc).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "front/request_reader.h"
#include "util/http_grammar.h"

namespace {

using isolane::RequestReader;

constexpr isolane::RequestLimits kLimits{1024, 4096};

// What a connection's bytes came to: each request as text, then how it ended.
std::vector<std::string> readAll(std::string_view input, const std::vector<std::size_t>& cuts) {
  std::vector<std::string> outcome;
  RequestReader reader(kLimits);
  boost::beast::flat_buffer buffer;
  std::size_t at = 0, cut = 0;
  for (;;) {
    RequestReader::Event event = reader.parse(buffer);
    if (event == RequestReader::Event::kHead) continue;
    if (event == RequestReader::Event::kComplete) {
      const isolane::RequestHead& head = reader.head();
      // Invariants of what reaches an app.
      if (!isolane::http_grammar::isToken(head.method) ||
          !isolane::http_grammar::isOriginForm(head.target) ||
          (!head.host.empty() && !isolane::http_grammar::isHostHeader(head.host))) {
        std::abort();
      }
      std::string text = head.method + " " + head.host + head.target;
      for (const auto& [name, value] : head.headers) {
        if (!isolane::http_grammar::isToken(name) || !isolane::http_grammar::isFieldValue(value)) {
          std::abort();
        }
        text += "|" + name + ":" + value;
      }
      std::string body = reader.takeBody();
      if (body.size() > kLimits.maxBodyBytes) std::abort();
      outcome.push_back(text + "|body:" + body);
      reader.reset();
      continue;
    }
    if (event == RequestReader::Event::kError) {
      outcome.push_back("refused " + std::to_string(reader.error().status));
      return outcome;
    }
    // kNeedMore: read as the session does, never past the reader's bound.
    if (buffer.size() > reader.bufferLimit()) std::abort();
    if (at == input.size()) {
      outcome.push_back(reader.atRequestStart() && buffer.size() == 0 ? "end" : "incomplete");
      return outcome;
    }
    std::size_t room = reader.bufferLimit() - buffer.size();
    std::size_t n = std::min(room, input.size() - at);
    if (cut < cuts.size()) n = std::min(n, cuts[cut++]);
    if (n == 0) std::abort();  // parse() must refuse a full buffer rather than ask for more
    auto space = buffer.prepare(n);
    std::memcpy(space.data(), input.data() + at, n);
    buffer.commit(n);
    at += n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses how the rest is cut into reads.
  unsigned seed = data[0];
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::size_t> cuts;
  for (std::size_t i = 0; i < input.size(); ++i) {
    seed = seed * 1103515245u + 12345u;
    cuts.push_back(1 + (seed >> 16) % 7);
  }
  std::vector<std::string> whole = readAll(input, {});
  std::vector<std::string> pieces = readAll(input, cuts);
  // The requests must be the same. How it ended may differ in one way only: Beast may refuse a
  // malformed head as soon as it sees it in one read, or wait for its end when it came in
  // pieces; either way no request came of it.
  auto ending = [](const std::string& s) {
    return s == "end" || s == "incomplete" || s.rfind("refused", 0) == 0;
  };
  bool same = whole.size() == pieces.size();
  for (std::size_t i = 0; same && i + 1 < whole.size(); ++i) same = whole[i] == pieces[i];
  if (same && !whole.empty()) {
    const std::string& a = whole.back();
    const std::string& b = pieces.back();
    same = a == b ||
           (ending(a) && ending(b) && (a == "incomplete" || b == "incomplete") && a != "end" &&
            b != "end") ||
           (a.rfind("refused", 0) == 0 && b.rfind("refused", 0) == 0);
  }
  if (!same) {
    // Say what differed before stopping, so the failing input explains itself.
    std::fprintf(stderr, "input: %s\n", std::string(input).c_str());
    for (const auto& o : whole) std::fprintf(stderr, "  whole:  %s\n", o.c_str());
    for (const auto& o : pieces) std::fprintf(stderr, "  pieces: %s\n", o.c_str());
    std::abort();
  }
  return 0;
}

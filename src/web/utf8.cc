#include "web/utf8.h"

namespace isolane::utf8 {
namespace {

// Expected sequence length for a lead byte and the allowed range of the byte after it; 0 length
// means the byte cannot start a sequence.
struct Lead {
  int length;
  std::uint8_t lo, hi;
};

Lead lead(std::uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing past U+10FFFF
  return {0, 0, 0};
}

// Length of the well-formed sequence at bytes[i], 0 if ill-formed, or -k if it is a valid prefix
// of k bytes cut off by the end of input.
int sequenceAt(const std::uint8_t* bytes, std::size_t n, std::size_t i) {
  Lead l = lead(bytes[i]);
  if (l.length <= 1) return l.length;
  for (int k = 1; k < l.length; ++k) {
    if (i + k >= n) return -k;
    std::uint8_t c = bytes[i + k];
    std::uint8_t lo = k == 1 ? l.lo : 0x80, hi = k == 1 ? l.hi : 0xBF;
    if (c < lo || c > hi) return 0;
  }
  return l.length;
}

}  // namespace

bool isValid(const std::uint8_t* bytes, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    if (bytes[i] < 0x80) {
      ++i;
      continue;
    }
    int len = sequenceAt(bytes, n, i);
    if (len <= 0) return false;
    i += static_cast<std::size_t>(len);
  }
  return true;
}

std::size_t incompleteTail(const std::uint8_t* bytes, std::size_t n) {
  // Only the last three bytes can hold an unfinished sequence.
  std::size_t start = n > 3 ? n - 3 : 0;
  for (std::size_t i = start; i < n; ++i) {
    if (bytes[i] >= 0x80 && lead(bytes[i]).length > 1) {
      int len = sequenceAt(bytes, n, i);
      if (len < 0) return n - i;
    }
  }
  return 0;
}

}  // namespace isolane::utf8

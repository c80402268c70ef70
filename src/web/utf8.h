#pragma once
// UTF-8 well-formedness per Unicode Table 3-7 (the WHATWG decoder's definition). V8 decodes with
// replacement already; this is what `fatal` decoding and streaming need on top. Hand-written: a
// dozen lines, and no Debian-packaged library offers these two questions alone.

#include <cstddef>
#include <cstdint>

namespace isolane::utf8 {

// True when bytes[0..n) is well-formed UTF-8.
bool isValid(const std::uint8_t* bytes, std::size_t n);

// How many bytes (0-3) at the end start a sequence that is valid so far but unfinished; a
// streaming decoder holds them back until more input arrives.
std::size_t incompleteTail(const std::uint8_t* bytes, std::size_t n);

}  // namespace isolane::utf8

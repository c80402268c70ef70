#pragma once
// SHA-256 of some bytes, as 64 lowercase hex digits ("" if OpenSSL fails). OpenSSL's EVP: in the
// master that is Debian's libcrypto, in the engine node's (the engine never loads Debian's).

#include <openssl/evp.h>

#include <string>
#include <string_view>

namespace isolane {

inline std::string sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr)) return {};
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace isolane

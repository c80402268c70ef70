#pragma once
// The natives behind crypto.subtle (W3C WebCrypto) over node's OpenSSL 3 (its headers in
// include/node/openssl; never Debian's: node exports its own copy). The JavaScript half
// (js/subtle*.js) does the WebCrypto rules: algorithm normalisation, usages, formats, JWK members.
// These functions do the cryptography and trust nothing they are given: every argument must have
// the exact type and a size within the bounds below, or they throw a TypeError. A failure of the
// operation itself throws an Error whose own `name` is the WebCrypto error to report
// ("DataError", "OperationError", ...), which js/subtle.js turns into a DOMException.
//
// Key material crosses as bytes: a secret key's raw bytes, a private key as PKCS #8 DER, a public
// key as SPKI DER. JavaScript keeps them in a CryptoKey's private field, where apps cannot reach
// them. The table of functions is in src/web/README.md.
//
// Thread rule: the isolate's executor thread (they are V8 callbacks).

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/host_ops.h"
#include "web/host_functions.h"

namespace isolane::subtle {

using Args = v8::FunctionCallbackInfo<v8::Value>;
using Bytes = std::vector<std::uint8_t>;

// Bounds on what JavaScript may ask for.
// Any one input buffer. Natives copy their inputs (no JavaScript runs while they work on them),
// and those copies are host memory the isolate's ArrayBuffer cap does not see: so a bound well
// below it.
constexpr std::size_t kMaxData = std::size_t{64} << 20;
constexpr std::size_t kMaxKeyBytes = std::size_t{64} * 1024;  // raw secrets, DER keys, JWK members
constexpr int kMinRsaBits = 1024;                             // generation and import
constexpr int kMaxRsaBits = 16384;                            // import (OpenSSL's own limit)
constexpr int kMaxRsaGenerateBits = 8192;                     // generation
constexpr double kMaxPbkdf2Iterations = 10'000'000;
constexpr double kMaxDerivedBits = 8 * 1024 * 8;  // 8 KiB of derived bytes

// RAII owners of OpenSSL objects.
struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
  void operator()(EVP_CIPHER_CTX* p) const { EVP_CIPHER_CTX_free(p); }
  void operator()(BIGNUM* p) const;
  void operator()(BN_CTX* p) const;
  void operator()(OSSL_PARAM* p) const;
  void operator()(OSSL_PARAM_BLD* p) const;
  void operator()(ECDSA_SIG* p) const;
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

// Empties OpenSSL's thread-local error queue when it goes out of scope: each native puts one at
// its top, so that what a failed operation left there never reaches a later caller.
struct ClearErrors {
  ClearErrors() = default;
  ClearErrors(const ClearErrors&) = delete;
  ClearErrors& operator=(const ClearErrors&) = delete;
  ~ClearErrors();
};

// WebCrypto error names a native may report (the JavaScript side maps them to DOMException).
constexpr const char* kDataError = "DataError";
constexpr const char* kOperationError = "OperationError";
constexpr const char* kNotSupportedError = "NotSupportedError";
constexpr const char* kInvalidAccessError = "InvalidAccessError";

// Throws an Error with an own `name` property (never a setter an app put on Error.prototype).
void throwNamed(v8::Isolate* isolate, const char* name, std::string_view message);
void throwType(v8::Isolate* isolate, std::string_view message);

// Copies the bytes of an ArrayBufferView (a detached one has none) into `out`; false unless
// `value` is a view of at most `max` bytes. Copying at once means nothing an app does later (a
// detach, a resize, a write from a callback) can reach the bytes the operation reads.
bool readBytes(v8::Local<v8::Value> value, Bytes* out, std::size_t max = kMaxData);
// A string argument of at most 64 bytes.
bool readName(v8::Isolate* isolate, v8::Local<v8::Value> value, std::string* out);
// An integral number within [min, max].
bool readInt(v8::Local<v8::Value> value, double min, double max, std::int64_t* out);

// The digest for "SHA-1", "SHA-256", "SHA-384", "SHA-512"; null otherwise.
const EVP_MD* digestByName(std::string_view name);

// A new ArrayBuffer / Uint8Array with these bytes; empty with a RangeError thrown when the
// isolate's allocator refuses.
v8::MaybeLocal<v8::ArrayBuffer> toArrayBuffer(v8::Isolate* isolate,
                                              std::span<const std::uint8_t> b);
v8::MaybeLocal<v8::Value> toUint8Array(v8::Isolate* isolate, std::span<const std::uint8_t> b);

// Keys from the DER the JavaScript side keeps: PKCS #8 for private keys, SPKI for public ones.
Owned<EVP_PKEY> privateKeyFromDer(std::span<const std::uint8_t> der);
Owned<EVP_PKEY> publicKeyFromDer(std::span<const std::uint8_t> der);
// Reads args[index] as key DER (private when `isPrivate`), throwing a TypeError (not bytes) or a
// DataError (not a key) into the isolate when it fails.
Owned<EVP_PKEY> keyArg(const Args& args, int index, bool isPrivate);
Bytes privateKeyToDer(EVP_PKEY* key);
Bytes publicKeyToDer(EVP_PKEY* key);

// Slow work (RSA key generation, PBKDF2) runs off the executor thread when JavaScript passes a
// callbacks object { onDone(...values), onError(name, message) } as args[index] and the context
// has host operations: then `work` is handed over (its outcome reaches the callbacks later, from
// the event loop) and nothing is returned. Otherwise the work runs here and its values are
// returned as an array of Uint8Arrays (or its error thrown), as onDone would have had them.
// `inputBytes` (the copies `work` holds) are charged to the isolate while the work waits.
void runOrOffload(const Args& args, int index, std::size_t inputBytes, OffloadWork work);

// The natives of each concern, in a fixed order (they are part of the snapshot's references).
std::span<const HostFunction> keyFunctions();
std::span<const HostFunction> signFunctions();
std::span<const HostFunction> cipherFunctions();
std::span<const HostFunction> deriveFunctions();

}  // namespace isolane::subtle

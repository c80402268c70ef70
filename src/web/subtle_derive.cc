// crypto.subtle natives for derivation: PBKDF2, HKDF, and ECDH / X25519 key agreement.
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <string>

#include "web/subtle_crypto.h"

namespace isolane::subtle {
namespace {

// HKDF's info is bounded by OpenSSL (1024 bytes); the salt and key by ours.
constexpr std::size_t kMaxHkdfInfo = 1024;

void returnBytes(const Args& args, const Bytes& out) {
  v8::Local<v8::ArrayBuffer> buffer;
  if (toArrayBuffer(args.GetIsolate(), out).ToLocal(&buffer)) args.GetReturnValue().Set(buffer);
}

// The derived length in bytes from a bit count in [8, kMaxDerivedBits], a multiple of 8.
bool readLength(v8::Local<v8::Value> value, std::size_t* bytes) {
  std::int64_t bits = 0;
  if (!readInt(value, 8, kMaxDerivedBits, &bits) || bits % 8 != 0) return false;
  *bytes = static_cast<std::size_t>(bits / 8);
  return true;
}

// subtlePbkdf2(hash, password, salt, iterations, bits, callbacks) -> [Uint8Array], or later
// through the callbacks (runOrOffload): many iterations take a while.
void pbkdf2(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  std::string hash;
  Bytes password, salt;
  std::int64_t iterations = 0;
  std::size_t size = 0;
  if (!readName(isolate, args[0], &hash) || !readBytes(args[1], &password, kMaxKeyBytes) ||
      !readBytes(args[2], &salt, kMaxKeyBytes) ||
      !readInt(args[3], 1, kMaxPbkdf2Iterations, &iterations) || !readLength(args[4], &size)) {
    return throwType(isolate, "pbkdf2: bad arguments");
  }
  const EVP_MD* md = digestByName(hash);
  if (md == nullptr) return throwType(isolate, "pbkdf2: unknown hash");
  // Each digest-sized block of output costs the iterations again: the product is what is bounded.
  std::size_t digestSize = static_cast<std::size_t>(EVP_MD_get_size(md));
  std::size_t blocks = (size + digestSize - 1) / digestSize;
  if (static_cast<double>(iterations) * static_cast<double>(blocks) > kMaxPbkdf2Iterations) {
    return throwType(isolate, "pbkdf2: iterations times output blocks over the bound");
  }
  std::size_t inputBytes = password.size() + salt.size();
  runOrOffload(
      args, 5, inputBytes, [md, password = std::move(password), salt = std::move(salt), iterations, size] {
        ClearErrors clear;
        OffloadResult result;
        Bytes out(size);
        static const unsigned char kEmpty = 0;
        if (PKCS5_PBKDF2_HMAC(password.empty() ? reinterpret_cast<const char*>(&kEmpty)
                                               : reinterpret_cast<const char*>(password.data()),
                              static_cast<int>(password.size()),
                              salt.empty() ? &kEmpty : salt.data(), static_cast<int>(salt.size()),
                              static_cast<int>(iterations), md, static_cast<int>(size),
                              out.data()) != 1) {
          result.errorName = kOperationError;
          result.error = "PBKDF2 failed";
        } else {
          result.values.push_back(std::move(out));
        }
        return result;
      });
}

// subtleHkdf(hash, key, salt, info, bits) -> ArrayBuffer (RFC 5869: extract, then expand).
void hkdf(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string hash;
  Bytes key, salt, info;
  std::size_t size = 0;
  if (!readName(isolate, args[0], &hash) || !readBytes(args[1], &key, kMaxKeyBytes) ||
      !readBytes(args[2], &salt, kMaxKeyBytes) || !readBytes(args[3], &info, kMaxHkdfInfo) ||
      !readLength(args[4], &size)) {
    return throwType(isolate, "hkdf: bad arguments (info is at most 1024 bytes)");
  }
  const EVP_MD* md = digestByName(hash);
  if (md == nullptr) return throwType(isolate, "hkdf: unknown hash");
  if (size > 255 * static_cast<std::size_t>(EVP_MD_get_size(md))) {
    return throwNamed(isolate, kOperationError, "HKDF cannot derive that many bits");
  }
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  Bytes out(size);
  std::size_t written = size;
  static const unsigned char kZero = 0;
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_hkdf_md(ctx.get(), md) != 1 ||
      EVP_PKEY_CTX_set1_hkdf_salt(ctx.get(), salt.empty() ? &kZero : salt.data(),
                                  static_cast<int>(salt.size())) != 1 ||
      EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), key.empty() ? &kZero : key.data(),
                                 static_cast<int>(key.size())) != 1 ||
      (!info.empty() &&
       EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), info.data(), static_cast<int>(info.size())) != 1) ||
      EVP_PKEY_derive(ctx.get(), out.data(), &written) != 1 || written != size) {
    return throwNamed(isolate, kOperationError, "HKDF failed");
  }
  returnBytes(args, out);
}

// subtleEcdh(privateKey, publicKey) -> ArrayBuffer: the whole shared secret (JavaScript keeps
// the bits asked for). privateKey is PKCS #8 DER, publicKey SPKI DER, of the same curve.
void ecdh(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  Owned<EVP_PKEY> own = keyArg(args, 0, true);
  if (!own) return;
  Owned<EVP_PKEY> peer = keyArg(args, 1, false);
  if (!peer) return;
  int id = EVP_PKEY_get_base_id(own.get());
  if ((id != EVP_PKEY_EC && id != EVP_PKEY_X25519) || EVP_PKEY_get_base_id(peer.get()) != id) {
    return throwNamed(isolate, kInvalidAccessError, "the keys are not of one key agreement type");
  }
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, own.get(), nullptr));
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1) {
    return throwNamed(isolate, kOperationError, "key agreement failed");
  }
  if (EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1) {
    return throwNamed(isolate, kInvalidAccessError, "the public key is not on the same curve");
  }
  std::size_t size = 0;
  Bytes out;
  if (EVP_PKEY_derive(ctx.get(), nullptr, &size) == 1) {
    out.resize(size);
    if (EVP_PKEY_derive(ctx.get(), out.data(), &size) == 1) {
      out.resize(size);
      return returnBytes(args, out);
    }
  }
  // X25519 with a small-order peer key yields all zeros, which OpenSSL refuses.
  throwNamed(isolate, kOperationError, "key agreement failed");
}

constexpr HostFunction kFunctions[] = {
    {"subtlePbkdf2", pbkdf2},
    {"subtleHkdf", hkdf},
    {"subtleEcdh", ecdh},
};

}  // namespace

std::span<const HostFunction> deriveFunctions() { return kFunctions; }

}  // namespace isolane::subtle

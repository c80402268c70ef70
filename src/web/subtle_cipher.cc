// crypto.subtle natives for encryption: AES-GCM, AES-CBC, AES-CTR, AES-KW and RSA-OAEP.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <climits>
#include <string>

#include "web/subtle_crypto.h"

namespace isolane::subtle {
namespace {

enum class Mode { kGcm, kCbc, kCtr, kKw };

// AES in `mode` for a key of 16, 24 or 32 bytes (the callers checked the size).
const EVP_CIPHER* cipherFor(Mode mode, std::size_t keyBytes) {
  using Maker = const EVP_CIPHER* (*)();
  static constexpr Maker kCiphers[][3] = {
      {EVP_aes_128_gcm, EVP_aes_192_gcm, EVP_aes_256_gcm},     // Mode::kGcm
      {EVP_aes_128_cbc, EVP_aes_192_cbc, EVP_aes_256_cbc},     // Mode::kCbc
      {EVP_aes_128_ctr, EVP_aes_192_ctr, EVP_aes_256_ctr},     // Mode::kCtr
      {EVP_aes_128_wrap, EVP_aes_192_wrap, EVP_aes_256_wrap},  // Mode::kKw
  };
  std::size_t size = keyBytes == 16 ? 0 : keyBytes == 24 ? 1 : 2;
  return kCiphers[static_cast<std::size_t>(mode)][size]();
}

// Runs `in` through an initialised context, appending to `out`; false when OpenSSL refuses
// (a bad padding or tag shows up in the final step).
bool run(EVP_CIPHER_CTX* ctx, const std::uint8_t* in, std::size_t size, Bytes* out,
         bool finish = true) {
  std::size_t at = out->size();
  out->resize(at + size + std::size_t{2} * EVP_MAX_BLOCK_LENGTH);
  int written = 0;
  if (size && EVP_CipherUpdate(ctx, out->data() + at, &written, in, static_cast<int>(size)) != 1) {
    return false;
  }
  at += static_cast<std::size_t>(written);
  if (finish) {
    int last = 0;
    if (EVP_CipherFinal_ex(ctx, out->data() + at, &last) != 1) return false;
    at += static_cast<std::size_t>(last);
  }
  out->resize(at);
  return true;
}

bool init(EVP_CIPHER_CTX* ctx, const EVP_CIPHER* cipher, const Bytes& key, const std::uint8_t* iv,
          bool encrypt) {
  return EVP_CipherInit_ex(ctx, cipher, nullptr, key.data(), iv, encrypt ? 1 : 0) == 1;
}

// AES-CTR whose counter is the low `length` bits of the block and wraps to zero there, as
// WebCrypto specifies (OpenSSL's CTR carries into the whole 128-bit block): the input is split at
// the wrap.
bool ctr(const Bytes& key, const Bytes& counter, std::int64_t length, bool encrypt,
         const Bytes& data, Bytes* out, const char** error) {
  using u128 = unsigned __int128;
  u128 block = 0;
  for (std::uint8_t b : counter) block = (block << 8) | b;
  u128 mask = length == 128 ? ~u128{0} : (u128{1} << length) - 1;
  u128 value = block & mask;
  u128 blocks = (data.size() + 15) / 16;
  // 2^length counter values in all: more blocks would reuse one.
  if (length < 128 && blocks > (u128{1} << length)) {
    *error = "the data is too long for the counter length";
    return false;
  }
  u128 left = mask - value;  // blocks after the first before the counter wraps
  const EVP_CIPHER* cipher = cipherFor(Mode::kCtr, key.size());
  Owned<EVP_CIPHER_CTX> ctx(EVP_CIPHER_CTX_new());
  if (!ctx || !init(ctx.get(), cipher, key, counter.data(), encrypt)) return false;
  if (blocks == 0 || blocks - 1 <= left) return run(ctx.get(), data.data(), data.size(), out);
  std::size_t first = static_cast<std::size_t>(left + 1) * 16;
  if (!run(ctx.get(), data.data(), first, out)) return false;
  std::uint8_t wrapped[16];
  u128 rest = block & ~mask;
  for (int i = 15; i >= 0; i--, rest >>= 8) wrapped[i] = static_cast<std::uint8_t>(rest);
  Owned<EVP_CIPHER_CTX> second(EVP_CIPHER_CTX_new());
  return second && init(second.get(), cipher, key, wrapped, encrypt) &&
         run(second.get(), data.data() + first, data.size() - first, out);
}

bool gcm(const Bytes& key, const Bytes& iv, const Bytes& aad, std::int64_t tagBits, bool encrypt,
         const Bytes& data, Bytes* out, const char** error) {
  std::size_t tagBytes = static_cast<std::size_t>(tagBits / 8);
  std::size_t size = data.size();
  if (!encrypt) {
    if (size < tagBytes) {
      *error = "the data is shorter than the tag";
      return false;
    }
    size -= tagBytes;
  }
  Owned<EVP_CIPHER_CTX> ctx(EVP_CIPHER_CTX_new());
  const EVP_CIPHER* cipher = cipherFor(Mode::kGcm, key.size());
  int ignored = 0;
  if (!ctx || EVP_CipherInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr, encrypt) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(iv.size()),
                          nullptr) != 1 ||
      !init(ctx.get(), nullptr, key, iv.data(), encrypt) ||
      (!aad.empty() && EVP_CipherUpdate(ctx.get(), nullptr, &ignored, aad.data(),
                                        static_cast<int>(aad.size())) != 1)) {
    return false;
  }
  if (!encrypt) {
    Bytes tag(data.begin() + static_cast<std::ptrdiff_t>(size), data.end());
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tagBytes),
                            tag.data()) != 1) {
      return false;
    }
    if (!run(ctx.get(), data.data(), size, out)) {
      *error = "the tag does not match: the data or the key is not the one encrypted";
      out->clear();
      return false;
    }
    return true;
  }
  if (!run(ctx.get(), data.data(), size, out)) return false;
  std::size_t at = out->size();
  out->resize(at + tagBytes);
  return EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tagBytes),
                             out->data() + at) == 1;
}

// subtleAes(mode, encrypt, key, iv, data, additionalData, tagLength | counterLength) ->
// ArrayBuffer. mode is "GCM" (iv 1..128 bytes, tagLength 32, 64, 96, 104..128 bits), "CBC" (iv
// 16 bytes, PKCS #7 padding), "CTR" (iv the 16-byte counter block, counterLength 1..128) or
// "KW" (RFC 3394; no iv).
void aes(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string modeName;
  Bytes key, iv, data, aad;
  if (!readName(isolate, args[0], &modeName) || !args[1]->IsBoolean() ||
      !readBytes(args[2], &key, 32) || !readBytes(args[4], &data)) {
    return throwType(isolate, "aes: bad arguments");
  }
  bool encrypt = args[1]->IsTrue();
  Mode mode = modeName == "GCM"   ? Mode::kGcm
              : modeName == "CBC" ? Mode::kCbc
              : modeName == "CTR" ? Mode::kCtr
              : modeName == "KW"  ? Mode::kKw
                                  : static_cast<Mode>(-1);
  if (key.size() != 16 && key.size() != 24 && key.size() != 32) {
    return throwType(isolate, "aes: the key must be 16, 24 or 32 bytes");
  }
  Bytes out;
  const char* error = "the operation failed";
  bool ok = false;
  std::int64_t number = 0;
  switch (mode) {
    case Mode::kGcm:
      if (!readBytes(args[3], &iv, 128) || iv.empty() || !readBytes(args[5], &aad) ||
          !readInt(args[6], 32, 128, &number) ||
          (number != 32 && number != 64 && number != 96 && (number < 104 || number % 8 != 0))) {
        return throwType(isolate, "aes: bad GCM parameters");
      }
      ok = gcm(key, iv, aad, number, encrypt, data, &out, &error);
      break;
    case Mode::kCbc: {
      if (!readBytes(args[3], &iv, 16) || iv.size() != 16) {
        return throwType(isolate, "aes: the CBC iv must be 16 bytes");
      }
      Owned<EVP_CIPHER_CTX> ctx(EVP_CIPHER_CTX_new());
      ok = ctx && init(ctx.get(), cipherFor(mode, key.size()), key, iv.data(), encrypt) &&
           run(ctx.get(), data.data(), data.size(), &out);
      if (!ok && !encrypt) error = "bad padding: the data or the key is not the one encrypted";
      break;
    }
    case Mode::kCtr:
      if (!readBytes(args[3], &iv, 16) || iv.size() != 16 || !readInt(args[6], 1, 128, &number)) {
        return throwType(isolate, "aes: bad CTR parameters");
      }
      ok = ctr(key, iv, number, encrypt, data, &out, &error);
      break;
    case Mode::kKw: {
      if (data.size() % 8 != 0 || data.size() < (encrypt ? 16u : 24u)) {
        return throwNamed(isolate, kOperationError, "AES-KW data must be 8-byte blocks");
      }
      Owned<EVP_CIPHER_CTX> ctx(EVP_CIPHER_CTX_new());
      if (ctx) EVP_CIPHER_CTX_set_flags(ctx.get(), EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
      ok = ctx && init(ctx.get(), cipherFor(mode, key.size()), key, nullptr, encrypt) &&
           run(ctx.get(), data.data(), data.size(), &out);
      if (!ok && !encrypt) error = "the wrapped key's integrity check failed";
      break;
    }
    default:
      return throwType(isolate, "aes: unknown mode");
  }
  if (!ok) return throwNamed(isolate, kOperationError, error);
  v8::Local<v8::ArrayBuffer> buffer;
  if (toArrayBuffer(isolate, out).ToLocal(&buffer)) args.GetReturnValue().Set(buffer);
}

// subtleRsaOaep(encrypt, hash, key, data, label) -> ArrayBuffer; key is SPKI DER to encrypt,
// PKCS #8 DER to decrypt.
void rsaOaep(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string hash;
  Bytes data, label;
  if (!args[0]->IsBoolean() || !readName(isolate, args[1], &hash) ||
      !readBytes(args[3], &data, kMaxKeyBytes) || !readBytes(args[4], &label)) {
    return throwType(isolate, "rsaOaep: bad arguments");
  }
  bool encrypt = args[0]->IsTrue();
  const EVP_MD* md = digestByName(hash);
  if (md == nullptr) return throwType(isolate, "rsaOaep: unknown hash");
  Owned<EVP_PKEY> key = keyArg(args, 2, !encrypt);
  if (!key) return;
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) {
    return throwNamed(isolate, kInvalidAccessError, "not an RSA key");
  }
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  if (!ctx ||
      (encrypt ? EVP_PKEY_encrypt_init(ctx.get()) : EVP_PKEY_decrypt_init(ctx.get())) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_OAEP_PADDING) != 1 ||
      EVP_PKEY_CTX_set_rsa_oaep_md(ctx.get(), md) != 1 ||
      EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.get(), md) != 1) {
    return throwNamed(isolate, kOperationError, "RSA-OAEP failed");
  }
  if (!label.empty()) {
    void* copy = OPENSSL_memdup(label.data(), label.size());
    if (copy == nullptr ||
        EVP_PKEY_CTX_set0_rsa_oaep_label(ctx.get(), copy, static_cast<int>(label.size())) != 1) {
      OPENSSL_free(copy);
      return throwNamed(isolate, kOperationError, "RSA-OAEP failed");
    }
  }
  auto step = encrypt ? EVP_PKEY_encrypt : EVP_PKEY_decrypt;
  std::size_t size = 0;
  Bytes out;
  if (step(ctx.get(), nullptr, &size, data.data(), data.size()) == 1) {
    out.resize(size);
    if (step(ctx.get(), out.data(), &size, data.data(), data.size()) == 1) {
      out.resize(size);
      v8::Local<v8::ArrayBuffer> buffer;
      if (toArrayBuffer(isolate, out).ToLocal(&buffer)) args.GetReturnValue().Set(buffer);
      return;
    }
  }
  throwNamed(isolate, kOperationError,
             encrypt ? "RSA-OAEP encryption failed (is the data too long for the key?)"
                     : "RSA-OAEP decryption failed");
}

constexpr HostFunction kFunctions[] = {
    {"subtleAes", aes},
    {"subtleRsaOaep", rsaOaep},
};

}  // namespace

std::span<const HostFunction> cipherFunctions() { return kFunctions; }

}  // namespace isolane::subtle

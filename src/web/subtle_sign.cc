// crypto.subtle natives for signatures: HMAC, ECDSA (WebCrypto's raw r||s, not DER),
// RSASSA-PKCS1-v1_5, RSA-PSS and Ed25519.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <string>

#include "web/subtle_crypto.h"

namespace isolane::subtle {
namespace {

enum class Scheme { kHmac, kEcdsa, kRsaPkcs1, kRsaPss, kEd25519 };

bool schemeByName(std::string_view name, Scheme* out) {
  if (name == "HMAC")
    *out = Scheme::kHmac;
  else if (name == "ECDSA")
    *out = Scheme::kEcdsa;
  else if (name == "RSASSA-PKCS1-v1_5")
    *out = Scheme::kRsaPkcs1;
  else if (name == "RSA-PSS")
    *out = Scheme::kRsaPss;
  else if (name == "Ed25519")
    *out = Scheme::kEd25519;
  else
    return false;
  return true;
}

// What sign and verify read from their arguments:
// (algorithm, hash | undefined, key, [signature,] data, saltLength | undefined).
struct Request {
  Scheme scheme;
  const EVP_MD* md = nullptr;
  Bytes key;
  Bytes signature;
  Bytes data;
  std::int64_t saltLength = 0;
};

bool readRequest(const Args& args, bool withSignature, Request* r) {
  v8::Isolate* isolate = args.GetIsolate();
  std::string name, hash;
  int next = 3;
  if (!readName(isolate, args[0], &name) || !schemeByName(name, &r->scheme) ||
      !readBytes(args[2], &r->key, kMaxKeyBytes) ||
      (withSignature && !readBytes(args[next++], &r->signature, kMaxKeyBytes)) ||
      !readBytes(args[next++], &r->data)) {
    throwType(isolate, "sign/verify: bad arguments");
    return false;
  }
  if (r->scheme != Scheme::kEd25519) {
    r->md = readName(isolate, args[1], &hash) ? digestByName(hash) : nullptr;
    if (r->md == nullptr) {
      throwType(isolate, "sign/verify: unknown hash");
      return false;
    }
  }
  if (r->scheme == Scheme::kRsaPss && !readInt(args[next], 0, 8192, &r->saltLength)) {
    throwType(isolate, "sign/verify: saltLength must be an integer from 0 to 8192");
    return false;
  }
  return true;
}

bool hmac(const Request& r, Bytes* out) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  static const std::uint8_t kEmpty = 0;
  if (HMAC(r.md, r.key.empty() ? &kEmpty : r.key.data(), static_cast<int>(r.key.size()),
           r.data.empty() ? &kEmpty : r.data.data(), r.data.size(), mac, &size) == nullptr) {
    return false;
  }
  out->assign(mac, mac + size);
  return true;
}

// The size in bytes of an EC key's order (each of r and s in a raw signature).
std::size_t ecScalarBytes(EVP_PKEY* key) {
  return static_cast<std::size_t>((EVP_PKEY_get_bits(key) + 7) / 8);
}

bool derToRaw(const Bytes& der, std::size_t n, Bytes* out) {
  const unsigned char* p = der.data();
  Owned<ECDSA_SIG> sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())));
  if (!sig) return false;
  out->assign(2 * n, 0);
  return BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), out->data(), static_cast<int>(n)) >= 0 &&
         BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), out->data() + n, static_cast<int>(n)) >= 0;
}

bool rawToDer(const Bytes& raw, std::size_t n, Bytes* out) {
  if (raw.size() != 2 * n) return false;
  Owned<ECDSA_SIG> sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(raw.data(), static_cast<int>(n), nullptr);
  BIGNUM* s = BN_bin2bn(raw.data() + n, static_cast<int>(n), nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return false;
  }
  int size = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (size <= 0) return false;
  out->resize(static_cast<std::size_t>(size));
  unsigned char* p = out->data();
  return i2d_ECDSA_SIG(sig.get(), &p) == size;
}

// A digest-sign or digest-verify context for the key, with the scheme's padding.
Owned<EVP_MD_CTX> signingContext(const Request& r, EVP_PKEY* key, bool sign) {
  int expected = r.scheme == Scheme::kEcdsa     ? EVP_PKEY_EC
                 : r.scheme == Scheme::kEd25519 ? EVP_PKEY_ED25519
                                                : EVP_PKEY_RSA;
  if (EVP_PKEY_get_base_id(key) != expected) return nullptr;
  Owned<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  if (!ctx || (sign ? EVP_DigestSignInit(ctx.get(), &pctx, r.md, nullptr, key)
                    : EVP_DigestVerifyInit(ctx.get(), &pctx, r.md, nullptr, key)) != 1) {
    return nullptr;
  }
  if (r.scheme == Scheme::kRsaPkcs1 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
    return nullptr;
  }
  if (r.scheme == Scheme::kRsaPss &&
      (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
       EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, r.md) != 1 ||
       EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, static_cast<int>(r.saltLength)) != 1)) {
    return nullptr;
  }
  return ctx;
}

// subtleSign(algorithm, hash, key, data, saltLength) -> ArrayBuffer. key is the secret's bytes
// for HMAC, else PKCS #8 DER.
void sign(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  Request r;
  if (!readRequest(args, false, &r)) return;
  Bytes out;
  if (r.scheme == Scheme::kHmac) {
    if (!hmac(r, &out)) return throwNamed(isolate, kOperationError, "HMAC failed");
  } else {
    Owned<EVP_PKEY> key = privateKeyFromDer(r.key);
    if (!key) return throwNamed(isolate, kDataError, "invalid key data");
    Owned<EVP_MD_CTX> ctx = signingContext(r, key.get(), true);
    if (!ctx) return throwNamed(isolate, kInvalidAccessError, "the key cannot sign this way");
    std::size_t size = 0;
    if (EVP_DigestSign(ctx.get(), nullptr, &size, r.data.data(), r.data.size()) != 1) {
      return throwNamed(isolate, kOperationError, "signing failed");
    }
    out.resize(size);
    if (EVP_DigestSign(ctx.get(), out.data(), &size, r.data.data(), r.data.size()) != 1) {
      // RSA-PSS with a salt too long for the key lands here.
      return throwNamed(isolate, kOperationError, "signing failed");
    }
    out.resize(size);
    if (r.scheme == Scheme::kEcdsa) {
      Bytes raw;
      if (!derToRaw(out, ecScalarBytes(key.get()), &raw)) {
        return throwNamed(isolate, kOperationError, "signing failed");
      }
      out = std::move(raw);
    }
  }
  v8::Local<v8::ArrayBuffer> buffer;
  if (toArrayBuffer(isolate, out).ToLocal(&buffer)) args.GetReturnValue().Set(buffer);
}

// subtleVerify(algorithm, hash, key, signature, data, saltLength) -> boolean. key is the
// secret's bytes for HMAC, else SPKI DER.
void verify(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  Request r;
  if (!readRequest(args, true, &r)) return;
  bool ok = false;
  if (r.scheme == Scheme::kHmac) {
    Bytes mac;
    if (!hmac(r, &mac)) return throwNamed(isolate, kOperationError, "HMAC failed");
    ok = mac.size() == r.signature.size() &&
         CRYPTO_memcmp(mac.data(), r.signature.data(), mac.size()) == 0;
  } else {
    Owned<EVP_PKEY> key = publicKeyFromDer(r.key);
    if (!key) return throwNamed(isolate, kDataError, "invalid key data");
    Owned<EVP_MD_CTX> ctx = signingContext(r, key.get(), false);
    if (!ctx) return throwNamed(isolate, kInvalidAccessError, "the key cannot verify this way");
    Bytes signature;
    if (r.scheme == Scheme::kEcdsa) {
      // A raw signature of the wrong size is not valid (not an error).
      if (!rawToDer(r.signature, ecScalarBytes(key.get()), &signature)) signature.clear();
    } else {
      signature = std::move(r.signature);
    }
    ok = !signature.empty() && EVP_DigestVerify(ctx.get(), signature.data(), signature.size(),
                                                r.data.data(), r.data.size()) == 1;
  }
  args.GetReturnValue().Set(ok);
}

constexpr HostFunction kFunctions[] = {
    {"subtleSign", sign},
    {"subtleVerify", verify},
};

}  // namespace

std::span<const HostFunction> signFunctions() { return kFunctions; }

}  // namespace isolane::subtle

// crypto.subtle natives for keys: generation of key pairs, import (spki, pkcs8, raw, JWK
// members) and export (JWK members, raw). Secret keys never come here: their bytes are random
// bytes or the app's own, kept by JavaScript as they are.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <array>
#include <cstring>
#include <string>

#include "web/subtle_crypto.h"

namespace isolane::subtle {
namespace {

// What a key of each WebCrypto family is to OpenSSL.
struct Kind {
  const char* name;  // as JavaScript passes it
  int id;            // EVP_PKEY_get_base_id()
  const char* openssl;
};
constexpr Kind kKinds[] = {
    {"RSA", EVP_PKEY_RSA, "RSA"},
    {"EC", EVP_PKEY_EC, "EC"},
    {"Ed25519", EVP_PKEY_ED25519, "ED25519"},
    {"X25519", EVP_PKEY_X25519, "X25519"},
};

const Kind* kindByName(std::string_view name) {
  for (const Kind& k : kKinds) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

struct Curve {
  const char* name;     // WebCrypto's namedCurve
  const char* openssl;  // OpenSSL's group name
  std::size_t bytes;    // size of a coordinate
};
constexpr Curve kCurves[] = {
    {"P-256", "prime256v1", 32},
    {"P-384", "secp384r1", 48},
    {"P-521", "secp521r1", 66},
};

const Curve* curveByName(std::string_view name) {
  for (const Curve& c : kCurves) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const Curve* curveOf(EVP_PKEY* key) {
  char group[64] = {};
  std::size_t length = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                     &length) != 1) {
    return nullptr;
  }
  for (const Curve& c : kCurves) {
    if (std::string_view(group, length) == c.openssl) return &c;
  }
  return nullptr;
}

Bytes bnParam(EVP_PKEY* key, const char* name, std::size_t pad = 0) {
  BIGNUM* raw = nullptr;
  Bytes out;
  if (EVP_PKEY_get_bn_param(key, name, &raw) != 1) return out;
  Owned<BIGNUM> bn(raw);
  std::size_t size = pad ? pad : static_cast<std::size_t>(BN_num_bytes(bn.get()));
  out.resize(size);
  if (pad ? BN_bn2binpad(bn.get(), out.data(), static_cast<int>(pad)) < 0
          : BN_bn2bin(bn.get(), out.data()) < 0) {
    out.clear();
  }
  return out;
}

Owned<BIGNUM> keyBn(EVP_PKEY* key, const char* name) {
  BIGNUM* raw = nullptr;
  EVP_PKEY_get_bn_param(key, name, &raw);
  return Owned<BIGNUM>(raw);
}

// An RSA key's members agree: n = pq, dp = d mod (p-1), dq = d mod (q-1), e dp = 1 mod (p-1),
// e dq = 1 mod (q-1), qi q = 1 mod p; n and e odd. What Chrome checks (BoringSSL's
// RSA_check_key): no primality test, which OpenSSL's pairwise check runs and which takes
// seconds for large keys on the executor thread.
bool rsaConsistent(EVP_PKEY* key, bool isPrivate) {
  Owned<BIGNUM> n = keyBn(key, OSSL_PKEY_PARAM_RSA_N), e = keyBn(key, OSSL_PKEY_PARAM_RSA_E);
  if (!n || !e || !BN_is_odd(n.get()) || !BN_is_odd(e.get()) || BN_is_one(e.get())) return false;
  if (!isPrivate) return true;
  Owned<BIGNUM> d = keyBn(key, OSSL_PKEY_PARAM_RSA_D), p = keyBn(key, OSSL_PKEY_PARAM_RSA_FACTOR1),
                q = keyBn(key, OSSL_PKEY_PARAM_RSA_FACTOR2),
                dp = keyBn(key, OSSL_PKEY_PARAM_RSA_EXPONENT1),
                dq = keyBn(key, OSSL_PKEY_PARAM_RSA_EXPONENT2),
                qi = keyBn(key, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  Owned<BN_CTX> ctx(BN_CTX_new());
  Owned<BIGNUM> t(BN_new()), p1(BN_new()), q1(BN_new());
  if (!d || !p || !q || !dp || !dq || !qi || !ctx || !t || !p1 || !q1) return false;
  if (BN_cmp(p.get(), BN_value_one()) <= 0 || BN_cmp(q.get(), BN_value_one()) <= 0) return false;
  auto is = [&](bool ok, const BIGNUM* expected) {
    return ok && (expected ? BN_cmp(t.get(), expected) == 0 : BN_is_one(t.get()));
  };
  return is(BN_mul(t.get(), p.get(), q.get(), ctx.get()) == 1, n.get()) &&
         BN_sub(p1.get(), p.get(), BN_value_one()) == 1 &&
         BN_sub(q1.get(), q.get(), BN_value_one()) == 1 &&
         is(BN_mod(t.get(), d.get(), p1.get(), ctx.get()) == 1, dp.get()) &&
         is(BN_mod(t.get(), d.get(), q1.get(), ctx.get()) == 1, dq.get()) &&
         is(BN_mod_mul(t.get(), e.get(), dp.get(), p1.get(), ctx.get()) == 1, nullptr) &&
         is(BN_mod_mul(t.get(), e.get(), dq.get(), q1.get(), ctx.get()) == 1, nullptr) &&
         is(BN_mod_mul(t.get(), qi.get(), q.get(), p.get(), ctx.get()) == 1, nullptr);
}

// The key's halves belong together (a private key), or its public half is valid: for RSA
// rsaConsistent, for EC and OKP OpenSSL's checks (a point on the curve; cheap).
bool keyConsistent(EVP_PKEY* key, bool isPrivate) {
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) {
    int bits = EVP_PKEY_get_bits(key);
    return bits >= kMinRsaBits && bits <= kMaxRsaBits && rsaConsistent(key, isPrivate);
  }
  Owned<EVP_PKEY_CTX> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  return check && (isPrivate ? EVP_PKEY_pairwise_check(check.get()) == 1
                             : EVP_PKEY_public_check(check.get()) == 1);
}

Bytes octetParam(EVP_PKEY* key, const char* name) {
  std::size_t size = 0;
  Bytes out;
  if (EVP_PKEY_get_octet_string_param(key, name, nullptr, 0, &size) != 1) return out;
  out.resize(size);
  if (EVP_PKEY_get_octet_string_param(key, name, out.data(), size, &size) != 1) out.clear();
  out.resize(size);
  return out;
}

Bytes rawKey(EVP_PKEY* key, bool isPrivate) {
  std::size_t size = 0;
  auto get = isPrivate ? EVP_PKEY_get_raw_private_key : EVP_PKEY_get_raw_public_key;
  Bytes out;
  if (get(key, nullptr, &size) != 1) return out;
  out.resize(size);
  if (get(key, out.data(), &size) != 1) out.clear();
  return out;
}

bool setArray(v8::Isolate* isolate, const Args& args, std::span<const v8::Local<v8::Value>> items) {
  args.GetReturnValue().Set(
      v8::Array::New(isolate, const_cast<v8::Local<v8::Value>*>(items.data()), items.size()));
  return true;
}

// Checks that an imported key is of `kind` and describes it to JavaScript as
// [der, modulusLength, publicExponent] (RSA), [der, namedCurve] (EC) or [der] (OKP), where der is
// the key re-encoded (PKCS #8 or SPKI): what JavaScript keeps.
void describeKey(const Args& args, const Kind& kind, EVP_PKEY* key, bool isPrivate) {
  v8::Isolate* isolate = args.GetIsolate();
  if (EVP_PKEY_get_base_id(key) != kind.id) {
    return throwNamed(isolate, kDataError, "the key is not of the algorithm's type");
  }
  Bytes der = isPrivate ? privateKeyToDer(key) : publicKeyToDer(key);
  v8::Local<v8::Value> derValue;
  if (der.empty()) return throwNamed(isolate, kDataError, "the key could not be encoded");
  if (!toUint8Array(isolate, der).ToLocal(&derValue)) return;
  if (kind.id == EVP_PKEY_RSA) {
    int bits = EVP_PKEY_get_bits(key);
    if (bits < kMinRsaBits || bits > kMaxRsaBits) {
      return throwNamed(isolate, kDataError, "RSA modulus must be 1024 to 16384 bits");
    }
    Bytes exponent = bnParam(key, OSSL_PKEY_PARAM_RSA_E);
    v8::Local<v8::Value> e;
    if (!toUint8Array(isolate, exponent).ToLocal(&e)) return;
    v8::Local<v8::Value> items[] = {derValue, v8::Integer::New(isolate, bits), e};
    setArray(isolate, args, items);
  } else if (kind.id == EVP_PKEY_EC) {
    const Curve* curve = curveOf(key);
    if (curve == nullptr) return throwNamed(isolate, kNotSupportedError, "unsupported curve");
    v8::Local<v8::Value> items[] = {derValue,
                                    v8::String::NewFromUtf8(isolate, curve->name).ToLocalChecked()};
    setArray(isolate, args, items);
  } else {
    v8::Local<v8::Value> items[] = {derValue};
    setArray(isolate, args, items);
  }
}

// What a key pair is generated from, checked on the executor thread.
struct PairSpec {
  const Kind* kind = nullptr;
  int bits = 0;
  Bytes exponent;
  const Curve* curve = nullptr;
};

// Generates a key pair: values {pkcs8, spki}. Touches no V8: it may run on a helper thread.
OffloadResult generatePair(const PairSpec& spec) {
  ClearErrors clear;
  OffloadResult result;
  auto fail = [&result](const char* message) {
    result.errorName = kOperationError;
    result.error = message;
    return result;
  };
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, spec.kind->openssl, nullptr));
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1) return fail("key generation failed");
  if (spec.kind->id == EVP_PKEY_RSA) {
    Owned<BIGNUM> e(
        BN_bin2bn(spec.exponent.data(), static_cast<int>(spec.exponent.size()), nullptr));
    if (!e || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx.get(), spec.bits) != 1 ||
        EVP_PKEY_CTX_set1_rsa_keygen_pubexp(ctx.get(), e.get()) != 1) {
      return fail("key generation failed");
    }
  } else if (spec.curve != nullptr &&
             EVP_PKEY_CTX_set_group_name(ctx.get(), spec.curve->openssl) != 1) {
    return fail("key generation failed");
  }
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_generate(ctx.get(), &raw) != 1) return fail("key generation failed");
  Owned<EVP_PKEY> key(raw);
  Bytes pkcs8 = privateKeyToDer(key.get()), spki = publicKeyToDer(key.get());
  if (pkcs8.empty() || spki.empty()) return fail("key encoding failed");
  result.values.push_back(std::move(pkcs8));
  result.values.push_back(std::move(spki));
  return result;
}

// subtleGenerateKeyPair(kind, modulusBits | namedCurve | undefined, publicExponent, callbacks)
// -> [pkcs8, spki], or later through the callbacks (runOrOffload).
void generateKeyPair(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  PairSpec spec;
  std::string kindName;
  spec.kind = readName(isolate, args[0], &kindName) ? kindByName(kindName) : nullptr;
  if (spec.kind == nullptr) return throwType(isolate, "unknown key kind");
  if (spec.kind->id == EVP_PKEY_RSA) {
    std::int64_t bits = 0;
    if (!readInt(args[1], kMinRsaBits, kMaxRsaGenerateBits, &bits) || bits % 8 != 0) {
      return throwNamed(isolate, kOperationError,
                        "modulusLength must be a multiple of 8 from 1024 to 8192");
    }
    spec.bits = static_cast<int>(bits);
    if (!readBytes(args[2], &spec.exponent, kMaxKeyBytes)) {
      return throwType(isolate, "publicExponent must be bytes");
    }
    Owned<BIGNUM> e(
        BN_bin2bn(spec.exponent.data(), static_cast<int>(spec.exponent.size()), nullptr));
    // As Chrome: 3 or 65537 (another odd exponent is valid RSA, but nobody needs one).
    if (!e || (!BN_is_word(e.get(), 3) && !BN_is_word(e.get(), 65537))) {
      return throwNamed(isolate, kOperationError, "publicExponent must be 3 or 65537");
    }
  } else if (spec.kind->id == EVP_PKEY_EC) {
    std::string curveName;
    spec.curve = readName(isolate, args[1], &curveName) ? curveByName(curveName) : nullptr;
    if (spec.curve == nullptr) return throwNamed(isolate, kNotSupportedError, "unsupported curve");
  }
  runOrOffload(args, 3, spec.exponent.size(), [spec = std::move(spec)] { return generatePair(spec); });
}

// A public key from a raw encoding: an EC point, or an OKP key's 32 bytes.
Owned<EVP_PKEY> rawPublicKey(const Kind& kind, const Curve* curve,
                             std::span<const std::uint8_t> raw) {
  if (kind.id == EVP_PKEY_ED25519 || kind.id == EVP_PKEY_X25519) {
    if (raw.size() != 32) return nullptr;
    return Owned<EVP_PKEY>(EVP_PKEY_new_raw_public_key(kind.id, nullptr, raw.data(), raw.size()));
  }
  if (kind.id != EVP_PKEY_EC || curve == nullptr) return nullptr;
  Owned<OSSL_PARAM_BLD> build(OSSL_PARAM_BLD_new());
  if (!build ||
      OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve->openssl, 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, raw.data(),
                                       raw.size()) != 1) {
    return nullptr;
  }
  Owned<OSSL_PARAM> params(OSSL_PARAM_BLD_to_param(build.get()));
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return nullptr;
  }
  Owned<EVP_PKEY> owned(key);
  Owned<EVP_PKEY_CTX> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) return nullptr;
  return owned;
}

// subtleImportKey(kind, format, data[, namedCurve]) with format "spki" | "pkcs8" | "raw" (public
// keys only) -> as describeKey.
void importKey(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string kindName, format, curveName;
  const Kind* kind = readName(isolate, args[0], &kindName) ? kindByName(kindName) : nullptr;
  Bytes data;
  if (kind == nullptr || !readName(isolate, args[1], &format) ||
      !readBytes(args[2], &data, kMaxKeyBytes)) {
    return throwType(isolate, "importKey takes a kind, a format and at most 64 KiB of bytes");
  }
  Owned<EVP_PKEY> key;
  bool isPrivate = format == "pkcs8";
  if (format == "spki") {
    key = publicKeyFromDer(data);
  } else if (format == "pkcs8") {
    key = privateKeyFromDer(data);
  } else if (format == "raw") {
    const Curve* curve = readName(isolate, args[3], &curveName) ? curveByName(curveName) : nullptr;
    key = rawPublicKey(*kind, curve, data);
  } else {
    return throwType(isolate, "unknown key format");
  }
  if (!key) return throwNamed(isolate, kDataError, "invalid key data");
  // A private key's halves must belong together (an EC or OKP PKCS #8 may carry both).
  if (isPrivate && !keyConsistent(key.get(), true)) {
    return throwNamed(isolate, kDataError, "invalid private key");
  }
  describeKey(args, *kind, key.get(), isPrivate);
}

// The members of args[index] (an array of Uint8Array or undefined), at most `count`.
bool readParts(const Args& args, int index, std::size_t count, std::vector<Bytes>* parts) {
  v8::Local<v8::Value> value = args[index];
  if (!value->IsArray()) return false;
  auto array = value.As<v8::Array>();
  if (array->Length() > count) return false;
  v8::Local<v8::Context> context = args.GetIsolate()->GetCurrentContext();
  for (std::uint32_t i = 0; i < array->Length(); i++) {
    v8::Local<v8::Value> item;
    // Own elements only: a hole would be looked up on Array.prototype.
    if (!array->HasRealIndexedProperty(context, i).FromMaybe(false) ||
        !array->Get(context, i).ToLocal(&item)) {
      return false;
    }
    Bytes bytes;
    if (!item->IsUndefined() && !readBytes(item, &bytes, kMaxKeyBytes)) return false;
    parts->push_back(std::move(bytes));
  }
  return true;
}

Owned<EVP_PKEY> fromParams(const char* type, OSSL_PARAM_BLD* build, bool isPrivate) {
  Owned<OSSL_PARAM> params(OSSL_PARAM_BLD_to_param(build));
  Owned<EVP_PKEY_CTX> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, isPrivate ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY,
                        params.get()) != 1) {
    return nullptr;
  }
  Owned<EVP_PKEY> owned(key);
  return keyConsistent(key, isPrivate) ? std::move(owned) : nullptr;
}

bool pushBn(OSSL_PARAM_BLD* build, const char* name, const Bytes& bytes,
            std::vector<Owned<BIGNUM>>* keep) {
  if (bytes.empty()) return false;
  Owned<BIGNUM> bn(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
  if (!bn || OSSL_PARAM_BLD_push_BN(build, name, bn.get()) != 1) return false;
  keep->push_back(std::move(bn));  // the builder refers to it until to_param
  return true;
}

// subtleImportJwk(kind, namedCurve | undefined, members) -> as describeKey. members are the
// decoded base64url members: RSA [n, e] or [n, e, d, p, q, dp, dq, qi]; EC [x, y] or [x, y, d];
// OKP [x] or [x, d].
void importJwk(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string kindName, curveName;
  const Kind* kind = readName(isolate, args[0], &kindName) ? kindByName(kindName) : nullptr;
  std::vector<Bytes> parts;
  if (kind == nullptr || !readParts(args, 2, 8, &parts)) {
    return throwType(isolate, "importJwk takes a kind, a curve and the key's members");
  }
  Owned<OSSL_PARAM_BLD> build(OSSL_PARAM_BLD_new());
  std::vector<Owned<BIGNUM>> keep;
  Owned<EVP_PKEY> key;
  bool isPrivate = false;
  if (!build) return throwNamed(isolate, kOperationError, "out of memory");
  if (kind->id == EVP_PKEY_RSA) {
    static constexpr const char* kNames[] = {
        OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
        OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
        OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
        OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
    if (parts.size() != 2 && parts.size() != 8) {
      return throwNamed(isolate, kDataError, "RSA JWK needs n, e and, if private, all of d..qi");
    }
    if (parts[0].size() > kMaxRsaBits / 8 + 1) {
      return throwNamed(isolate, kDataError, "RSA modulus too large");
    }
    isPrivate = parts.size() == 8;
    for (std::size_t i = 0; i < parts.size(); i++) {
      if (!pushBn(build.get(), kNames[i], parts[i], &keep)) {
        return throwNamed(isolate, kDataError, "invalid RSA JWK member");
      }
    }
    key = fromParams("RSA", build.get(), isPrivate);
  } else if (kind->id == EVP_PKEY_EC) {
    const Curve* curve = readName(isolate, args[1], &curveName) ? curveByName(curveName) : nullptr;
    if (curve == nullptr) return throwNamed(isolate, kNotSupportedError, "unsupported curve");
    if ((parts.size() != 2 && parts.size() != 3) || parts[0].size() != curve->bytes ||
        parts[1].size() != curve->bytes || (parts.size() == 3 && parts[2].size() != curve->bytes)) {
      return throwNamed(isolate, kDataError, "EC JWK members x, y (and d) must fit the curve");
    }
    isPrivate = parts.size() == 3;
    Bytes point{0x04};
    point.insert(point.end(), parts[0].begin(), parts[0].end());
    point.insert(point.end(), parts[1].begin(), parts[1].end());
    if (OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve->openssl,
                                        0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                         point.size()) != 1 ||
        (isPrivate && !pushBn(build.get(), OSSL_PKEY_PARAM_PRIV_KEY, parts[2], &keep))) {
      return throwNamed(isolate, kDataError, "invalid EC JWK");
    }
    key = fromParams("EC", build.get(), isPrivate);
  } else {
    if ((parts.size() != 1 && parts.size() != 2) || parts[0].size() != 32 ||
        (parts.size() == 2 && parts[1].size() != 32)) {
      return throwNamed(isolate, kDataError, "OKP JWK members x (and d) must be 32 bytes");
    }
    isPrivate = parts.size() == 2;
    if (isPrivate) {
      key.reset(EVP_PKEY_new_raw_private_key(kind->id, nullptr, parts[1].data(), 32));
      // x must be the public key of d.
      if (key && rawKey(key.get(), false) != parts[0]) key.reset();
    } else {
      key.reset(EVP_PKEY_new_raw_public_key(kind->id, nullptr, parts[0].data(), 32));
    }
  }
  if (!key) return throwNamed(isolate, kDataError, "invalid key data");
  describeKey(args, *kind, key.get(), isPrivate);
}

// subtleExportKey(der, isPrivate, format) with format "jwk" -> the members as importJwk takes
// them (each a Uint8Array), or "raw" -> the public key's raw encoding (an uncompressed EC point,
// an OKP key's 32 bytes).
void exportKey(const Args& args) {
  v8::Isolate* isolate = args.GetIsolate();
  ClearErrors clear;
  std::string format;
  if (!args[1]->IsBoolean() || !readName(isolate, args[2], &format)) {
    return throwType(isolate, "exportKey takes key bytes, isPrivate and a format");
  }
  bool isPrivate = args[1]->IsTrue();
  Owned<EVP_PKEY> key = keyArg(args, 0, isPrivate);
  if (!key) return;
  int id = EVP_PKEY_get_base_id(key.get());
  std::vector<Bytes> parts;
  if (format == "raw") {
    if (isPrivate) return throwNamed(isolate, kInvalidAccessError, "raw export of a private key");
    Bytes raw = id == EVP_PKEY_EC ? octetParam(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY)
                                  : rawKey(key.get(), false);
    if (raw.empty()) return throwNamed(isolate, kOperationError, "key export failed");
    v8::Local<v8::Value> out;
    if (toUint8Array(isolate, raw).ToLocal(&out)) args.GetReturnValue().Set(out);
    return;
  }
  if (format != "jwk") return throwType(isolate, "unknown key format");
  if (id == EVP_PKEY_RSA) {
    static constexpr const char* kNames[] = {
        OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
        OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
        OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
        OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
    for (std::size_t i = 0; i < (isPrivate ? 8u : 2u); i++) {
      parts.push_back(bnParam(key.get(), kNames[i]));
    }
  } else if (id == EVP_PKEY_EC) {
    const Curve* curve = curveOf(key.get());
    Bytes point = octetParam(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY);
    if (curve == nullptr || point.size() != 1 + 2 * curve->bytes || point[0] != 0x04) {
      return throwNamed(isolate, kOperationError, "key export failed");
    }
    auto size = static_cast<std::ptrdiff_t>(curve->bytes);
    parts.emplace_back(point.begin() + 1, point.begin() + 1 + size);
    parts.emplace_back(point.begin() + 1 + size, point.end());
    if (isPrivate) parts.push_back(bnParam(key.get(), OSSL_PKEY_PARAM_PRIV_KEY, curve->bytes));
  } else {
    parts.push_back(rawKey(key.get(), false));
    if (isPrivate) parts.push_back(rawKey(key.get(), true));
  }
  std::vector<v8::Local<v8::Value>> items;
  for (const Bytes& part : parts) {
    if (part.empty()) return throwNamed(isolate, kOperationError, "key export failed");
    v8::Local<v8::Value> item;
    if (!toUint8Array(isolate, part).ToLocal(&item)) return;
    items.push_back(item);
  }
  setArray(isolate, args, items);
}

constexpr HostFunction kFunctions[] = {
    {"subtleGenerateKeyPair", generateKeyPair},
    {"subtleImportKey", importKey},
    {"subtleImportJwk", importJwk},
    {"subtleExportKey", exportKey},
};

}  // namespace

std::span<const HostFunction> keyFunctions() { return kFunctions; }

}  // namespace isolane::subtle

// Helpers shared by the crypto.subtle natives (subtle_crypto.h).
#include "web/subtle_crypto.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>

#include <cmath>
#include <string>

#include "runtime/array_buffers.h"
#include "runtime/context_state.h"
#include "runtime/memory_budget.h"

namespace isolane::subtle {

void Free::operator()(BIGNUM* p) const { BN_clear_free(p); }
void Free::operator()(BN_CTX* p) const { BN_CTX_free(p); }
void Free::operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
void Free::operator()(OSSL_PARAM_BLD* p) const { OSSL_PARAM_BLD_free(p); }
void Free::operator()(ECDSA_SIG* p) const { ECDSA_SIG_free(p); }

ClearErrors::~ClearErrors() { ERR_clear_error(); }

namespace {

v8::Local<v8::String> newString(v8::Isolate* isolate, std::string_view s) {
  return v8::String::NewFromUtf8(isolate, s.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(s.size()))
      .ToLocalChecked();
}

}  // namespace

void throwNamed(v8::Isolate* isolate, const char* name, std::string_view message) {
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  v8::Local<v8::Value> error = v8::Exception::Error(newString(isolate, message));
  std::ignore = error.As<v8::Object>()->CreateDataProperty(context, newString(isolate, "name"),
                                                           newString(isolate, name));
  isolate->ThrowException(error);
}

void throwType(v8::Isolate* isolate, std::string_view message) {
  isolate->ThrowException(v8::Exception::TypeError(newString(isolate, message)));
}

bool readBytes(v8::Local<v8::Value> value, Bytes* out, std::size_t max) {
  if (value.IsEmpty() || !value->IsArrayBufferView()) return false;
  auto view = value.As<v8::ArrayBufferView>();
  std::size_t size = view->ByteLength();
  if (size > max) return false;
  out->resize(size);
  if (size) out->resize(view->CopyContents(out->data(), size));
  return true;
}

bool readName(v8::Isolate* isolate, v8::Local<v8::Value> value, std::string* out) {
  if (value.IsEmpty() || !value->IsString()) return false;
  auto s = value.As<v8::String>();
  if (s->Length() > 64 || !s->ContainsOnlyOneByte()) return false;
  out->resize(static_cast<std::size_t>(s->Length()));
  s->WriteOneByte(isolate, reinterpret_cast<std::uint8_t*>(out->data()), 0, s->Length(),
                  v8::String::NO_NULL_TERMINATION);
  return true;
}

bool readInt(v8::Local<v8::Value> value, double min, double max, std::int64_t* out) {
  if (value.IsEmpty() || !value->IsNumber()) return false;
  double d = value.As<v8::Number>()->Value();
  if (!(d >= min && d <= max) || std::trunc(d) != d) return false;
  *out = static_cast<std::int64_t>(d);
  return true;
}

const EVP_MD* digestByName(std::string_view name) {
  return name == "SHA-1"     ? EVP_sha1()
         : name == "SHA-256" ? EVP_sha256()
         : name == "SHA-384" ? EVP_sha384()
         : name == "SHA-512" ? EVP_sha512()
                             : nullptr;
}

v8::MaybeLocal<v8::ArrayBuffer> toArrayBuffer(v8::Isolate* isolate,
                                              std::span<const std::uint8_t> b) {
  return newArrayBuffer(isolate, b.size(), b.data());
}

v8::MaybeLocal<v8::Value> toUint8Array(v8::Isolate* isolate, std::span<const std::uint8_t> b) {
  v8::Local<v8::ArrayBuffer> buffer;
  if (!newArrayBuffer(isolate, b.size(), b.data()).ToLocal(&buffer)) return {};
  return v8::Uint8Array::New(buffer, 0, b.size());
}

void runOrOffload(const Args& args, int index, std::size_t inputBytes, OffloadWork work) {
  v8::Isolate* isolate = args.GetIsolate();
  ContextState* state = ContextState::from(isolate->GetCurrentContext());
  if (args[index]->IsObject() && state != nullptr && state->ops != nullptr) {
    // The copies the work holds live until it has run: charged to the isolate meanwhile.
    ByteCharge charge = chargeIsolateOrThrow(isolate, inputBytes, "crypto.subtle");
    if (!charge) return;
    auto held = std::make_shared<ByteCharge>(std::move(charge));
    state->ops->offload(
        *state, [work = std::move(work), held] { return work(); }, args[index].As<v8::Object>());
    return;
  }
  OffloadResult result = work();
  if (!result.errorName.empty()) {
    return throwNamed(isolate, result.errorName.c_str(), result.error);
  }
  std::vector<v8::Local<v8::Value>> items;
  for (const Bytes& value : result.values) {
    v8::Local<v8::Value> item;
    if (!toUint8Array(isolate, value).ToLocal(&item)) return;
    items.push_back(item);
  }
  args.GetReturnValue().Set(v8::Array::New(isolate, items.data(), items.size()));
}

Owned<EVP_PKEY> privateKeyFromDer(std::span<const std::uint8_t> der) {
  const unsigned char* p = der.data();
  PKCS8_PRIV_KEY_INFO* info = d2i_PKCS8_PRIV_KEY_INFO(nullptr, &p, static_cast<long>(der.size()));
  if (info == nullptr) return nullptr;
  Owned<EVP_PKEY> key(p == der.data() + der.size() ? EVP_PKCS82PKEY(info) : nullptr);
  PKCS8_PRIV_KEY_INFO_free(info);
  return key;
}

Owned<EVP_PKEY> publicKeyFromDer(std::span<const std::uint8_t> der) {
  const unsigned char* p = der.data();
  Owned<EVP_PKEY> key(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  if (key && p != der.data() + der.size()) return nullptr;  // trailing bytes
  return key;
}

Owned<EVP_PKEY> keyArg(const Args& args, int index, bool isPrivate) {
  Bytes der;
  if (!readBytes(args[index], &der, kMaxKeyBytes)) {
    throwType(args.GetIsolate(), "key must be a Uint8Array of DER");
    return nullptr;
  }
  Owned<EVP_PKEY> key = isPrivate ? privateKeyFromDer(der) : publicKeyFromDer(der);
  if (!key) throwNamed(args.GetIsolate(), kDataError, "invalid key data");
  return key;
}

Bytes privateKeyToDer(EVP_PKEY* key) {
  Bytes out;
  PKCS8_PRIV_KEY_INFO* info = EVP_PKEY2PKCS8(key);
  if (info == nullptr) return out;
  int size = i2d_PKCS8_PRIV_KEY_INFO(info, nullptr);
  if (size > 0) {
    out.resize(static_cast<std::size_t>(size));
    unsigned char* p = out.data();
    if (i2d_PKCS8_PRIV_KEY_INFO(info, &p) != size) out.clear();
  }
  PKCS8_PRIV_KEY_INFO_free(info);
  return out;
}

Bytes publicKeyToDer(EVP_PKEY* key) {
  Bytes out;
  int size = i2d_PUBKEY(key, nullptr);
  if (size > 0) {
    out.resize(static_cast<std::size_t>(size));
    unsigned char* p = out.data();
    if (i2d_PUBKEY(key, &p) != size) out.clear();
  }
  return out;
}

}  // namespace isolane::subtle

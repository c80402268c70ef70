// SubtleCrypto (W3C WebCrypto §14): digest, encrypt/decrypt, sign/verify, generateKey,
// importKey/exportKey, deriveBits/deriveKey, wrapKey/unwrapKey, over the natives in
// src/web/subtle_*.cc. Every method returns a promise: an argument error is a rejection
// (WebIDL), never a throw. Hand-written: see subtle_util.js.
import { host } from './host.js';
import {
  ArrayPrototypeIncludes, JSONParse, JSONStringify, NumberCtor, NumberIsFinite, MathTrunc,
  ObjectSetPrototypeOf,
  PromisePrototypeThen, PromiseReject, PromiseResolve, ReflectApply, SafePromise, TypeErrorCtor, TypedArrayPrototypeGetByteLength,
  TypedArrayPrototypeGetBuffer, Uint8ArrayCtor,
} from './primordials.js';
import {
  callNative, callNativeAsync, copyBufferSource, domError, normalize, requireBytes, toKeyUsages,
} from './subtle_util.js';
import { exportKey, generateKey, importKey, keyRecord } from './subtle_keys.js';
import { exposeInterface, requireArgs } from './util.js';

const INTERNAL = Symbol('internal');
const EMPTY = new Uint8ArrayCtor(0);
const FORMATS = ['raw', 'spki', 'pkcs8', 'jwk'];
const GCM_TAGS = [32, 64, 96, 104, 112, 120, 128];
// Bounds the natives also enforce (src/web/subtle_crypto.h); here they become WebCrypto errors.
const MAX_IV = 128; // OpenSSL's bound on a GCM iv
const MAX_DERIVED_BITS = 65536;
const MAX_ITERATIONS = 10000000;
const MAX_RSA_BYTES = 2048;  // 16384 bits
const MAX_SIGNATURE_BYTES = 65536;

function what(method) {
  return `Failed to execute '${method}' on 'SubtleCrypto'`;
}

function toFormat(value, method) {
  const format = `${value}`;
  if (!ArrayPrototypeIncludes(FORMATS, format)) {
    throw new TypeErrorCtor(`${what(method)}: The provided value '${format}' is not a valid enum value of type KeyFormat.`);
  }
  return format;
}

function toKey(value, method, position) {
  const record = keyRecord(value);
  if (record === null) {
    throw new TypeErrorCtor(`${what(method)}: parameter ${position} is not of type 'CryptoKey'.`);
  }
  return record;
}

// The checks every operation with a key makes: the algorithm is the key's, and the key has the
// usage.
function checkKey(alg, record, usage) {
  if (alg.name !== record.algorithm.name) {
    throw domError(`The key is a ${record.algorithm.name} key, not ${alg.name}`, 'InvalidAccessError');
  }
  if (!ArrayPrototypeIncludes(record.usages, usage)) {
    throw domError(`The key does not have the '${usage}' usage`, 'InvalidAccessError');
  }
}

function requireType(record, type) {
  if (record.type !== type) {
    throw domError(`The operation needs a ${type} key, not a ${record.type} key`, 'InvalidAccessError');
  }
}

// Encrypts or decrypts with a checked key; an ArrayBuffer.
function cipher(encrypt, alg, record, data) {
  const name = alg.name;
  const key = record.material;
  if (name === 'AES-GCM') {
    const ivSize = TypedArrayPrototypeGetByteLength(alg.iv);
    if (ivSize === 0 || ivSize > MAX_IV) throw domError('AES-GCM iv must be 1 to 128 bytes', 'OperationError');
    const tagLength = alg.tagLength === undefined ? 128 : alg.tagLength;
    if (!ArrayPrototypeIncludes(GCM_TAGS, tagLength)) throw domError(`Invalid AES-GCM tagLength ${tagLength}`, 'OperationError');
    return callNative('subtleAes', ['GCM', encrypt, key, alg.iv, data, alg.additionalData ?? EMPTY, tagLength]);
  }
  if (name === 'AES-CBC') {
    if (TypedArrayPrototypeGetByteLength(alg.iv) !== 16) throw domError('AES-CBC iv must be 16 bytes', 'OperationError');
    return callNative('subtleAes', ['CBC', encrypt, key, alg.iv, data, EMPTY, 0]);
  }
  if (name === 'AES-CTR') {
    if (TypedArrayPrototypeGetByteLength(alg.counter) !== 16) throw domError('AES-CTR counter must be 16 bytes', 'OperationError');
    if (alg.length === 0 || alg.length > 128) throw domError('AES-CTR length must be 1 to 128', 'OperationError');
    return callNative('subtleAes', ['CTR', encrypt, key, alg.counter, data, EMPTY, alg.length]);
  }
  if (name === 'AES-KW') {
    return callNative('subtleAes', ['KW', encrypt, key, EMPTY, data, EMPTY, 0]);
  }
  // RSA-OAEP: the data is at most one modulus long (16384 bits); more is refused here, before
  // the native's bound on key-sized inputs.
  requireType(record, encrypt ? 'public' : 'private');
  if (TypedArrayPrototypeGetByteLength(data) > MAX_RSA_BYTES) {
    throw domError('The data is too long for RSA-OAEP', 'OperationError');
  }
  return callNative('subtleRsaOaep', [encrypt, record.algorithm.hash, key, data, alg.label ?? EMPTY]);
}

// ECDSA takes its hash from the operation's parameters; HMAC and RSA from the key.
function hashOf(alg, record) {
  return alg.name === 'ECDSA' ? alg.hash : record.algorithm.hash;
}

function deriveBitsOf(alg, record, length) {
  const name = alg.name;
  if (name === 'PBKDF2' || name === 'HKDF') {
    if (length === null || length === 0 || length % 8 !== 0) {
      throw domError(`${name} length must be a positive multiple of 8`, 'OperationError');
    }
    if (length > MAX_DERIVED_BITS) throw domError(`${name} length is at most ${MAX_DERIVED_BITS} bits here`, 'OperationError');
    if (name === 'HKDF') {
      if (TypedArrayPrototypeGetByteLength(alg.info) > 1024) throw domError('HKDF info is at most 1024 bytes here', 'OperationError');
      return callNative('subtleHkdf', [alg.hash, record.material, alg.salt, alg.info, length]);
    }
    if (alg.iterations === 0) throw domError('PBKDF2 iterations must not be zero', 'OperationError');
    if (alg.iterations > MAX_ITERATIONS) throw domError(`PBKDF2 iterations are at most ${MAX_ITERATIONS} here`, 'OperationError');
    // Each hash-sized block of output costs the iterations again: bound the product.
    const blocks = MathTrunc((length / 8 + hashBytes(alg.hash) - 1) / hashBytes(alg.hash));
    if (alg.iterations * blocks > MAX_ITERATIONS) {
      throw domError(`PBKDF2 iterations times output blocks are at most ${MAX_ITERATIONS} here`, 'OperationError');
    }
    // Many iterations take a while: off the executor thread.
    return PromisePrototypeThen(
      callNativeAsync('subtlePbkdf2', [alg.hash, record.material, alg.salt, alg.iterations, length]),
      (values) => TypedArrayPrototypeGetBuffer(values[0]));
  }
  // ECDH, X25519
  requireType(record, 'private');
  const peer = keyRecord(alg.public);
  if (peer.type !== 'public') throw domError('The public member must be a public key', 'InvalidAccessError');
  if (peer.algorithm.name !== name || peer.algorithm.namedCurve !== record.algorithm.namedCurve) {
    throw domError('The public key is not of the same algorithm and curve', 'InvalidAccessError');
  }
  const secret = callNative('subtleEcdh', [record.material, peer.material]);
  if (length === null) return secret;
  const full = new Uint8ArrayCtor(secret);
  if (length > TypedArrayPrototypeGetByteLength(full) * 8) {
    throw domError('The requested length is longer than the shared secret', 'OperationError');
  }
  const out = new Uint8ArrayCtor(MathTrunc((length + 7) / 8));
  for (let i = 0; i < out.length; i++) out[i] = full[i];
  if (length % 8 !== 0) out[out.length - 1] &= (0xff << (8 - (length % 8))) & 0xff;
  return TypedArrayPrototypeGetBuffer(out);
}

// A digest's output in bytes.
function hashBytes(hash) {
  return hash === 'SHA-1' ? 20 : hash === 'SHA-256' ? 32 : hash === 'SHA-384' ? 48 : 64;
}

function blockBits(hash) {
  return hash === 'SHA-384' || hash === 'SHA-512' ? 1024 : 512;
}

// "get key length" of a derived key's algorithm: bits, or null for PBKDF2 and HKDF.
function keyLength(alg) {
  if (alg.name === 'HMAC') {
    const length = alg.length === undefined ? blockBits(alg.hash) : alg.length;
    if (length === 0) throw new TypeErrorCtor('HMAC length must not be zero');
    return length;
  }
  if (alg.name === 'PBKDF2' || alg.name === 'HKDF') return null;
  if (alg.length !== 128 && alg.length !== 192 && alg.length !== 256) {
    throw domError('AES key length must be 128, 192 or 256 bits', 'OperationError');
  }
  return alg.length;
}

// unsigned long? (no EnforceRange): null, or the value modulo 2^32.
function toOptionalLength(value) {
  if (value === undefined || value === null) return null;
  const n = NumberCtor(value);
  if (!NumberIsFinite(n)) return 0;
  const t = MathTrunc(n) % 4294967296;
  return t < 0 ? t + 4294967296 : t;
}

// normalize(wrapKey or unwrapKey), else normalize(encrypt or decrypt), as the spec says.
function normalizeWrap(algorithm, op, fallback, method) {
  try {
    return normalize(algorithm, op, what(method));
  } catch (e) {
    if (e === null || typeof e !== 'object' || e.name !== 'NotSupportedError') throw e;
  }
  return normalize(algorithm, fallback, what(method));
}

// Runs `fn` as a promise-returning WebIDL operation: its result resolves, what it throws rejects.
function operation(self, given, needed, method, fn) {
  try {
    if (!(isSubtle(self))) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(given, needed, what(method));
    return PromiseResolve(fn());
  } catch (e) {
    return PromiseReject(e);
  }
}

let isSubtle;

// encrypt() and decrypt(): `method` names the one called.
function encryptOrDecrypt(self, argc, method, algorithm, key, data) {
  return operation(self, argc, 3, method, () => {
    const record = toKey(key, method, 2);
    const bytes = requireBytes(data, `${what(method)}: parameter 3`);
    const alg = normalize(algorithm, method, what(method));
    checkKey(alg, record, method);
    return cipher(method === 'encrypt', alg, record, bytes);
  });
}

class SubtleCrypto {
  #brand = true;

  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
  }

  static {
    isSubtle = (value) => typeof value === 'object' && value !== null && #brand in value;
  }

  digest(algorithm, data) {
    return operation(this, arguments.length, 2, 'digest', () => {
      const bytes = copyBufferSource(data);
      if (bytes === null) {
        throw new TypeErrorCtor(`${what('digest')}: parameter 2 is not of type '(ArrayBuffer or ArrayBufferView)'.`);
      }
      const alg = normalize(algorithm, 'digest', what('digest'));
      return ReflectApply(host.digest, host, [alg.name, bytes]);
    });
  }

  encrypt(algorithm, key, data) {
    return encryptOrDecrypt(this, arguments.length, 'encrypt', algorithm, key, data);
  }

  decrypt(algorithm, key, data) {
    return encryptOrDecrypt(this, arguments.length, 'decrypt', algorithm, key, data);
  }

  sign(algorithm, key, data) {
    return operation(this, arguments.length, 3, 'sign', () => {
      const record = toKey(key, 'sign', 2);
      const bytes = requireBytes(data, `${what('sign')}: parameter 3`);
      const alg = normalize(algorithm, 'sign', what('sign'));
      checkKey(alg, record, 'sign');
      requireType(record, alg.name === 'HMAC' ? 'secret' : 'private');
      if (alg.name === 'RSA-PSS' && alg.saltLength > record.algorithm.modulusLength / 8) {
        throw domError('RSA-PSS saltLength is too long for the key', 'OperationError');
      }
      return callNative('subtleSign',
        [alg.name, hashOf(alg, record), record.material, bytes, alg.saltLength ?? 0]);
    });
  }

  verify(algorithm, key, signature, data) {
    return operation(this, arguments.length, 4, 'verify', () => {
      const record = toKey(key, 'verify', 2);
      const sig = requireBytes(signature, `${what('verify')}: parameter 3`);
      const bytes = requireBytes(data, `${what('verify')}: parameter 4`);
      const alg = normalize(algorithm, 'verify', what('verify'));
      checkKey(alg, record, 'verify');
      requireType(record, alg.name === 'HMAC' ? 'secret' : 'public');
      if (alg.name === 'RSA-PSS' && alg.saltLength > record.algorithm.modulusLength / 8) return false;
      // No signature of ours is this long (the native refuses more as a type error).
      if (TypedArrayPrototypeGetByteLength(sig) > MAX_SIGNATURE_BYTES) return false;
      return callNative('subtleVerify',
        [alg.name, hashOf(alg, record), record.material, sig, bytes, alg.saltLength ?? 0]);
    });
  }

  generateKey(algorithm, extractable, keyUsages) {
    return operation(this, arguments.length, 3, 'generateKey', () => {
      const usages = toKeyUsages(keyUsages, what('generateKey'));
      const alg = normalize(algorithm, 'generateKey', what('generateKey'));
      return generateKey(alg, !!extractable, usages);
    });
  }

  importKey(format, keyData, algorithm, extractable, keyUsages) {
    return operation(this, arguments.length, 5, 'importKey', () => {
      const f = toFormat(format, 'importKey');
      let data;
      if (f === 'jwk') {
        if (typeof keyData !== 'object' || keyData === null) {
          throw new TypeErrorCtor(`${what('importKey')}: The provided value is not of type 'JsonWebKey'.`);
        }
        data = keyData;
      } else {
        data = requireBytes(keyData, `${what('importKey')}: parameter 2`);
      }
      const usages = toKeyUsages(keyUsages, what('importKey'));
      const alg = normalize(algorithm, 'importKey', what('importKey'));
      return importKey(f, data, alg, !!extractable, usages);
    });
  }

  exportKey(format, key) {
    return operation(this, arguments.length, 2, 'exportKey', () => {
      const f = toFormat(format, 'exportKey');
      toKey(key, 'exportKey', 2);
      return exportKey(f, key);
    });
  }

  deriveBits(algorithm, baseKey, length = null) {
    return operation(this, arguments.length, 2, 'deriveBits', () => {
      const record = toKey(baseKey, 'deriveBits', 2);
      const bits = toOptionalLength(length);
      const alg = normalize(algorithm, 'deriveBits', what('deriveBits'));
      checkKey(alg, record, 'deriveBits');
      return deriveBitsOf(alg, record, bits);
    });
  }

  deriveKey(algorithm, baseKey, derivedKeyType, extractable, keyUsages) {
    return operation(this, arguments.length, 5, 'deriveKey', () => {
      const record = toKey(baseKey, 'deriveKey', 2);
      const usages = toKeyUsages(keyUsages, what('deriveKey'));
      const alg = normalize(algorithm, 'deriveBits', what('deriveKey'));
      const importAlg = normalize(derivedKeyType, 'importKey', what('deriveKey'));
      const lengthAlg = normalize(derivedKeyType, 'getKeyLength', what('deriveKey'));
      checkKey(alg, record, 'deriveKey');
      const length = keyLength(lengthAlg);
      const secret = deriveBitsOf(alg, record, length);
      const finish = (bits) => importKey('raw', new Uint8ArrayCtor(bits), importAlg, !!extractable, usages);
      return secret instanceof SafePromise ? PromisePrototypeThen(secret, finish) : finish(secret);
    });
  }

  wrapKey(format, key, wrappingKey, wrapAlgorithm) {
    return operation(this, arguments.length, 4, 'wrapKey', () => {
      const f = toFormat(format, 'wrapKey');
      toKey(key, 'wrapKey', 2);
      const record = toKey(wrappingKey, 'wrapKey', 3);
      const alg = normalizeWrap(wrapAlgorithm, 'wrapKey', 'encrypt', 'wrapKey');
      checkKey(alg, record, 'wrapKey');
      const exported = exportKey(f, key);
      const bytes = f === 'jwk'
        ? ReflectApply(host.utf8Encode, host, [JSONStringify(exported)])
        : new Uint8ArrayCtor(exported);
      return cipher(true, alg, record, bytes);
    });
  }

  unwrapKey(format, wrappedKey, unwrappingKey, unwrapAlgorithm, unwrappedKeyAlgorithm, extractable,
    keyUsages) {
    return operation(this, arguments.length, 7, 'unwrapKey', () => {
      const f = toFormat(format, 'unwrapKey');
      const wrapped = requireBytes(wrappedKey, `${what('unwrapKey')}: parameter 2`);
      const record = toKey(unwrappingKey, 'unwrapKey', 3);
      const usages = toKeyUsages(keyUsages, what('unwrapKey'));
      const alg = normalizeWrap(unwrapAlgorithm, 'unwrapKey', 'decrypt', 'unwrapKey');
      const importAlg = normalize(unwrappedKeyAlgorithm, 'importKey', what('unwrapKey'));
      checkKey(alg, record, 'unwrapKey');
      const bytes = new Uint8ArrayCtor(cipher(false, alg, record, wrapped));
      let data = bytes;
      if (f === 'jwk') {
        try {
          data = JSONParse(ReflectApply(host.utf8Decode, host, [bytes, false]));
        } catch {
          throw domError('The unwrapped key is not JSON', 'DataError');
        }
        if (typeof data !== 'object' || data === null) throw domError('The unwrapped key is not a JWK', 'DataError');
        // Parsed here, not by the app: members the JWK lacks must not be looked up on
        // Object.prototype, where an app's getter would see the unwrapped key material.
        ObjectSetPrototypeOf(data, null);
      }
      return importKey(f, data, importAlg, !!extractable, usages);
    });
  }
}

exposeInterface(SubtleCrypto, 'SubtleCrypto');

export const subtle = new SubtleCrypto(INTERNAL);

// CryptoKey and the key operations of crypto.subtle: importKey, exportKey, generateKey (W3C
// WebCrypto §14, and the per-algorithm sections). A key's material lives in a private field of
// its CryptoKey (a secret's bytes, a private key's PKCS #8 DER, a public key's SPKI DER), which no
// app code can reach; the natives (src/web/subtle_keys.cc) parse and check it. Hand-written: see
// subtle_util.js.
import { host } from './host.js';
import {
  ArrayIsArray, ArrayPrototypeIncludes, ArrayPrototypePush, ObjectDefineProperty, ObjectFreeze,
  PromisePrototypeThen, ReflectApply,
  StringPrototypeSlice, TypeErrorCtor, TypedArrayPrototypeGetBuffer,
  TypedArrayPrototypeGetByteLength, Uint8ArrayCtor,
} from './primordials.js';
import {
  base64url, callNative, callNativeAsync, checkUsages, domError, fromBase64url, intersectUsages, setKeyBrandCheck,
} from './subtle_util.js';
import { copyBytes, exposeInterface } from './util.js';

const INTERNAL = Symbol('internal');
const ENC = ['encrypt', 'decrypt', 'wrapKey', 'unwrapKey'];
const DERIVE = ['deriveKey', 'deriveBits'];
const SIGNING = { public: ['verify'], private: ['sign'] };
const AGREEMENT = { public: [], private: DERIVE };
// The usages a key of each algorithm and type may have.
export const USAGES = {
  __proto__: null,
  HMAC: { secret: ['sign', 'verify'] },
  'AES-GCM': { secret: ENC },
  'AES-CBC': { secret: ENC },
  'AES-CTR': { secret: ENC },
  'AES-KW': { secret: ['wrapKey', 'unwrapKey'] },
  PBKDF2: { secret: DERIVE },
  HKDF: { secret: DERIVE },
  'RSASSA-PKCS1-v1_5': SIGNING,
  'RSA-PSS': SIGNING,
  ECDSA: SIGNING,
  Ed25519: SIGNING,
  'RSA-OAEP': { public: ['encrypt', 'wrapKey'], private: ['decrypt', 'unwrapKey'] },
  ECDH: AGREEMENT,
  X25519: AGREEMENT,
};
const RSA = ['RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP'];
const EC = ['ECDSA', 'ECDH'];
const OKP = ['Ed25519', 'X25519'];
const AES = ['AES-GCM', 'AES-CBC', 'AES-CTR', 'AES-KW'];
const CURVES = ['P-256', 'P-384', 'P-521'];
const HASH_BITS = { __proto__: null, 'SHA-1': '1', 'SHA-256': '256', 'SHA-384': '384', 'SHA-512': '512' };

let recordOf;

// WebCrypto's CryptoKey: not constructible by apps. Its record (type, extractable, algorithm,
// usages, material) is private; `algorithm` and `usages` give the app its own copies, made once.
class CryptoKey {
  #record;
  #algorithm = undefined;
  #usages = undefined;

  constructor(token = undefined, record = undefined) {
    if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
    this.#record = record;
  }

  get type() {
    if (!(#record in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#record.type;
  }

  get extractable() {
    if (!(#record in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#record.extractable;
  }

  get algorithm() {
    if (!(#record in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#algorithm === undefined) this.#algorithm = publicAlgorithm(this.#record.algorithm);
    return this.#algorithm;
  }

  get usages() {
    if (!(#record in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#usages === undefined) {
      const list = [];
      const usages = this.#record.usages;
      for (let i = 0; i < usages.length; i++) list[i] = usages[i];
      this.#usages = list;
    }
    return this.#usages;
  }

  static {
    recordOf = (value) => (typeof value === 'object' && value !== null && #record in value
      ? value.#record : null);
  }
}
exposeInterface(CryptoKey, 'CryptoKey');
setKeyBrandCheck((value) => recordOf(value) !== null);

// The key's record ({ type, extractable, algorithm, usages, material }), or null.
export function keyRecord(value) {
  return recordOf(value);
}

function publicAlgorithm(a) {
  const out = { name: a.name };
  if (a.modulusLength !== undefined) {
    define(out, 'modulusLength', a.modulusLength);
    define(out, 'publicExponent', copyBytes(a.publicExponent));
  }
  if (a.hash !== undefined) define(out, 'hash', { name: a.hash });
  if (a.length !== undefined) define(out, 'length', a.length);
  if (a.namedCurve !== undefined) define(out, 'namedCurve', a.namedCurve);
  return out;
}

function makeKey(type, extractable, algorithm, usages, material) {
  const record = { __proto__: null, type, extractable, algorithm: ObjectFreeze(algorithm), usages, material };
  return new CryptoKey(INTERNAL, ObjectFreeze(record));
}

function requireUsagesFor(record) {
  if ((record.type === 'secret' || record.type === 'private') && record.usages.length === 0) {
    throw domError('Usages cannot be empty when creating a key.', 'SyntaxError');
  }
}

function randomBytes(n) {
  const out = new Uint8ArrayCtor(n);
  ReflectApply(host.getRandomValues, host, [out]);
  return out;
}

function blockBits(hash) {
  return hash === 'SHA-384' || hash === 'SHA-512' ? 1024 : 512;
}

// generateKey with a normalised algorithm and converted usages: a CryptoKey or a key pair.
export function generateKey(alg, extractable, usages) {
  const name = alg.name;
  if (name === 'HMAC' || ArrayPrototypeIncludes(AES, name)) {
    checkUsages(usages, USAGES[name].secret);
    let length;
    if (name === 'HMAC') {
      length = alg.length === undefined ? blockBits(alg.hash) : alg.length;
      if (length === 0 || length % 8 !== 0 || length > 65536 * 8) {
        throw domError('HMAC key length must be a positive multiple of 8, at most 524288', 'OperationError');
      }
    } else {
      length = alg.length;
      if (length !== 128 && length !== 192 && length !== 256) {
        throw domError('AES key length must be 128, 192 or 256 bits', 'OperationError');
      }
    }
    if (usages.length === 0) throw domError('Usages cannot be empty when creating a key.', 'SyntaxError');
    const algorithm = name === 'HMAC' ? { name, hash: alg.hash, length } : { name, length };
    return makeKey('secret', extractable, algorithm, usages, randomBytes(length / 8));
  }
  const allowed = USAGES[name];
  const all = [];
  for (let i = 0; i < allowed.public.length; i++) ArrayPrototypePush(all, allowed.public[i]);
  for (let i = 0; i < allowed.private.length; i++) ArrayPrototypePush(all, allowed.private[i]);
  checkUsages(usages, all);
  const privateUsages = intersectUsages(usages, allowed.private);
  if (privateUsages.length === 0) throw domError('Usages cannot be empty when creating a key.', 'SyntaxError');
  const publicUsages = intersectUsages(usages, allowed.public);
  const keyPair = (algorithm, pair) => ({
    publicKey: makeKey('public', true, algorithm, publicUsages, pair[1]),
    privateKey: makeKey('private', extractable, { ...algorithm }, privateUsages, pair[0]),
  });
  if (ArrayPrototypeIncludes(RSA, name)) {
    const algorithm = { name, modulusLength: alg.modulusLength, publicExponent: alg.publicExponent, hash: alg.hash };
    // Seconds for large moduli: off the executor thread.
    return PromisePrototypeThen(
      callNativeAsync('subtleGenerateKeyPair', ['RSA', alg.modulusLength, alg.publicExponent]),
      (pair) => keyPair(algorithm, pair));
  }
  if (ArrayPrototypeIncludes(EC, name)) {
    if (!ArrayPrototypeIncludes(CURVES, alg.namedCurve)) {
      throw domError(`Unsupported namedCurve: ${alg.namedCurve}`, 'NotSupportedError');
    }
    return keyPair({ name, namedCurve: alg.namedCurve },
      callNative('subtleGenerateKeyPair', ['EC', alg.namedCurve, undefined, undefined]));
  }
  return keyPair({ name }, callNative('subtleGenerateKeyPair', [name, undefined, undefined, undefined]));
}

// The JWK `alg` value for a key, or undefined where the spec has none (EC and OKP keys).
function jwkAlg(algorithm) {
  const name = algorithm.name;
  if (name === 'HMAC') return `HS${HASH_BITS[algorithm.hash]}`;
  if (ArrayPrototypeIncludes(AES, name)) return `A${algorithm.length}${StringPrototypeSlice(name, 4)}`;
  if (name === 'RSASSA-PKCS1-v1_5') return `RS${HASH_BITS[algorithm.hash]}`;
  if (name === 'RSA-PSS') return `PS${HASH_BITS[algorithm.hash]}`;
  if (name === 'RSA-OAEP') return algorithm.hash === 'SHA-1' ? 'RSA-OAEP' : `RSA-OAEP-${HASH_BITS[algorithm.hash]}`;
  return undefined;
}

// A JWK member: undefined when absent, else its string value (WebIDL DOMString conversion).
function member(jwk, key) {
  const value = jwk[key];
  return value === undefined ? undefined : `${value}`;
}

// Key material larger than this is refused (the natives' bound: src/web/subtle_crypto.h).
const MAX_KEY_BYTES = 65536;

function checkKeySize(bytes) {
  if (TypedArrayPrototypeGetByteLength(bytes) > MAX_KEY_BYTES) {
    throw domError('Key data larger than 64 KiB is not supported', 'DataError');
  }
  return bytes;
}

function memberBytes(jwk, key) {
  const bytes = fromBase64url(member(jwk, key));
  if (bytes === null) throw domError(`JWK member ${key} is missing or not base64url`, 'DataError');
  return checkKeySize(bytes);
}

// The checks of a JWK every algorithm makes: kty, use, key_ops, ext, alg.
function checkJwk(jwk, kty, use, usages, extractable, alg) {
  if (member(jwk, 'kty') !== kty) throw domError(`JWK kty must be ${kty}`, 'DataError');
  const jwkUse = member(jwk, 'use');
  if (usages.length !== 0 && jwkUse !== undefined && jwkUse !== use) {
    throw domError(`JWK use must be ${use}`, 'DataError');
  }
  const ops = jwk.key_ops;
  if (ops !== undefined) {
    if (!ArrayIsArray(ops)) throw new TypeErrorCtor('JWK key_ops must be a sequence');
    const list = [];
    for (let i = 0; i < ops.length; i++) {
      const op = `${ops[i]}`;
      if (ArrayPrototypeIncludes(list, op)) throw domError('JWK key_ops has duplicates', 'DataError');
      ArrayPrototypePush(list, op);
    }
    for (let i = 0; i < usages.length; i++) {
      if (!ArrayPrototypeIncludes(list, usages[i])) {
        throw domError('The JWK key_ops do not allow the requested usages', 'DataError');
      }
    }
  }
  const ext = jwk.ext;
  if (ext !== undefined && !ext && extractable) {
    throw domError('The JWK is not extractable (ext is false)', 'DataError');
  }
  const jwkAlgValue = member(jwk, 'alg');
  if (jwkAlgValue !== undefined && alg !== undefined && !ArrayPrototypeIncludes(alg, jwkAlgValue)) {
    throw domError(`The JWK alg ${jwkAlgValue} does not match the algorithm`, 'DataError');
  }
}

function importSecret(format, keyData, alg, extractable, usages) {
  const name = alg.name;
  checkUsages(usages, USAGES[name].secret);
  let bytes;
  if (format === 'raw') {
    bytes = keyData;
  } else if (format === 'jwk' && name !== 'PBKDF2' && name !== 'HKDF') {
    bytes = memberBytes(keyData, 'k');
    const bits = TypedArrayPrototypeGetByteLength(bytes) * 8;
    const expected = name === 'HMAC' ? [`HS${HASH_BITS[alg.hash]}`] : [`A${bits}${StringPrototypeSlice(name, 4)}`];
    checkJwk(keyData, 'oct', name === 'HMAC' ? 'sig' : 'enc', usages, extractable, expected);
  } else {
    throw domError(`Unsupported key format for ${name}: ${format}`, 'NotSupportedError');
  }
  const size = TypedArrayPrototypeGetByteLength(bytes);
  let algorithm;
  if (name === 'HMAC') {
    if (size === 0) throw domError('HMAC key data must not be empty', 'DataError');
    let length = size * 8;
    if (alg.length !== undefined) {
      if (alg.length > length || alg.length <= length - 8) {
        throw domError('The HMAC length does not match the key data', 'DataError');
      }
      length = alg.length;
    }
    algorithm = { name, hash: alg.hash, length };
  } else if (name === 'PBKDF2' || name === 'HKDF') {
    if (extractable) throw domError(`${name} keys cannot be extractable`, 'SyntaxError');
    algorithm = { name };
  } else {
    if (size !== 16 && size !== 24 && size !== 32) {
      throw domError('AES key data must be 128, 192 or 256 bits', 'DataError');
    }
    algorithm = { name, length: size * 8 };
  }
  return makeKey('secret', extractable, algorithm, usages, bytes);
}

const RSA_MEMBERS = ['n', 'e', 'd', 'p', 'q', 'dp', 'dq', 'qi'];

function importAsymmetric(format, keyData, alg, extractable, usages) {
  const name = alg.name;
  const isRsa = ArrayPrototypeIncludes(RSA, name);
  const isEc = ArrayPrototypeIncludes(EC, name);
  const kind = isRsa ? 'RSA' : isEc ? 'EC' : name;
  if (isEc && !ArrayPrototypeIncludes(CURVES, alg.namedCurve)) {
    throw domError(`Unsupported namedCurve: ${alg.namedCurve}`, 'NotSupportedError');
  }
  let type;
  let info;
  if (format === 'spki' || format === 'pkcs8' || (format === 'raw' && !isRsa)) {
    type = format === 'pkcs8' ? 'private' : 'public';
    checkUsages(usages, USAGES[name][type]);
    info = callNative('subtleImportKey', [kind, format, keyData, alg.namedCurve]);
  } else if (format === 'jwk') {
    type = keyData.d !== undefined ? 'private' : 'public';
    checkUsages(usages, USAGES[name][type]);
    let parts;
    let expected;
    if (isRsa) {
      checkJwk(keyData, 'RSA', name === 'RSA-OAEP' ? 'enc' : 'sig', usages, extractable, [jwkAlg(alg)]);
      if (keyData.oth !== undefined) throw domError('multi-prime RSA keys are not supported', 'NotSupportedError');
      parts = [];
      for (let i = 0; i < (type === 'private' ? 8 : 2); i++) ArrayPrototypePush(parts, memberBytes(keyData, RSA_MEMBERS[i]));
    } else if (isEc) {
      if (name === 'ECDSA') {
        expected = [alg.namedCurve === 'P-256' ? 'ES256' : alg.namedCurve === 'P-384' ? 'ES384' : 'ES512'];
      }
      checkJwk(keyData, 'EC', name === 'ECDSA' ? 'sig' : 'enc', usages, extractable, expected);
      if (member(keyData, 'crv') !== alg.namedCurve) throw domError('The JWK crv does not match the namedCurve', 'DataError');
      parts = [memberBytes(keyData, 'x'), memberBytes(keyData, 'y')];
      if (type === 'private') ArrayPrototypePush(parts, memberBytes(keyData, 'd'));
    } else {
      checkJwk(keyData, 'OKP', name === 'Ed25519' ? 'sig' : 'enc', usages, extractable,
        name === 'Ed25519' ? ['EdDSA', 'Ed25519'] : undefined);
      if (member(keyData, 'crv') !== name) throw domError(`The JWK crv must be ${name}`, 'DataError');
      parts = [memberBytes(keyData, 'x')];
      if (type === 'private') ArrayPrototypePush(parts, memberBytes(keyData, 'd'));
    }
    info = callNative('subtleImportJwk', [kind, alg.namedCurve, parts]);
  } else {
    throw domError(`Unsupported key format for ${name}: ${format}`, 'NotSupportedError');
  }
  let algorithm;
  if (isRsa) {
    algorithm = { name, modulusLength: info[1], publicExponent: info[2], hash: alg.hash };
  } else if (isEc) {
    if (info[1] !== alg.namedCurve) throw domError('The key is not on the namedCurve', 'DataError');
    algorithm = { name, namedCurve: alg.namedCurve };
  } else {
    algorithm = { name };
  }
  return makeKey(type, extractable, algorithm, usages, info[0]);
}

// importKey with a converted format, key data (bytes, or the app's JWK object), normalised
// algorithm and usages.
export function importKey(format, keyData, alg, extractable, usages) {
  const name = alg.name;
  if (format !== 'jwk') checkKeySize(keyData);
  const key = ArrayPrototypeIncludes(RSA, name) || ArrayPrototypeIncludes(EC, name) || ArrayPrototypeIncludes(OKP, name)
    ? importAsymmetric(format, keyData, alg, extractable, usages)
    : importSecret(format, keyData, alg, extractable, usages);
  requireUsagesFor(recordOf(key));
  return key;
}

function copyBuffer(bytes) {
  return TypedArrayPrototypeGetBuffer(copyBytes(bytes));
}

// exportKey: an ArrayBuffer, or a JWK object.
export function exportKey(format, key) {
  const record = recordOf(key);
  const { type, algorithm } = record;
  const name = algorithm.name;
  if (!record.extractable) throw domError('key is not extractable', 'InvalidAccessError');
  if (name === 'PBKDF2' || name === 'HKDF') {
    throw domError(`${name} keys cannot be exported`, 'NotSupportedError');
  }
  if (type === 'secret') {
    if (format === 'raw') return copyBuffer(record.material);
    if (format !== 'jwk') throw domError(`Unsupported key format for ${name}: ${format}`, 'NotSupportedError');
    return {
      kty: 'oct', k: base64url(record.material), alg: jwkAlg(algorithm), key_ops: copyUsages(record),
      ext: record.extractable,
    };
  }
  if (format === 'spki' || format === 'pkcs8') {
    if ((format === 'spki') !== (type === 'public')) {
      throw domError(`A ${type} key cannot be exported as ${format}`, 'InvalidAccessError');
    }
    return copyBuffer(record.material);
  }
  if (format === 'raw') {
    if (ArrayPrototypeIncludes(RSA, name)) throw domError('RSA keys have no raw format', 'NotSupportedError');
    if (type !== 'public') throw domError('Only public keys can be exported raw', 'InvalidAccessError');
    return TypedArrayPrototypeGetBuffer(callNative('subtleExportKey', [record.material, false, 'raw']));
  }
  const parts = callNative('subtleExportKey', [record.material, type === 'private', 'jwk']);
  let jwk;
  if (ArrayPrototypeIncludes(RSA, name)) {
    jwk = { kty: 'RSA', alg: jwkAlg(algorithm) };
    for (let i = 0; i < parts.length; i++) define(jwk, RSA_MEMBERS[i], base64url(parts[i]));
  } else if (ArrayPrototypeIncludes(EC, name)) {
    jwk = { kty: 'EC', crv: algorithm.namedCurve, x: base64url(parts[0]), y: base64url(parts[1]) };
    if (parts.length === 3) define(jwk, 'd', base64url(parts[2]));
  } else {
    jwk = { kty: 'OKP', crv: name, x: base64url(parts[0]) };
    if (parts.length === 2) define(jwk, 'd', base64url(parts[1]));
  }
  define(jwk, 'key_ops', copyUsages(record));
  define(jwk, 'ext', record.extractable);
  return jwk;
}

// Adds a data property without running a setter an app may have put on Object.prototype.
function define(object, key, value) {
  ObjectDefineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

function copyUsages(record) {
  const list = [];
  for (let i = 0; i < record.usages.length; i++) list[i] = record.usages[i];
  return list;
}

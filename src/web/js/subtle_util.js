// Shared pieces of crypto.subtle (W3C WebCrypto): copies of BufferSource arguments, base64url,
// the spec's algorithm normalisation, KeyUsage conversion, and calling the natives (their named
// errors become DOMExceptions). Hand-written: WebCrypto's argument rules are not a library of
// their own; the natives in src/web/subtle_*.cc do the cryptography.
//
// Apps call crypto.subtle with objects of their own (their getters run, as the spec says, and
// what they throw becomes the rejection); everything else goes through the primordials.
import { host } from './host.js';
import { DOMException } from './domexception.js';
import {
  ArrayBufferIsView, ArrayBufferPrototypeGetDetached, ArrayIsArray, ArrayPrototypeIncludes,
  ArrayPrototypePush, copyArray, NumberCtor, NumberIsFinite, MathTrunc, ObjectGetOwnPropertyDescriptor,
  ReflectApply, StringCtor, StringPrototypeCharCodeAt, StringPrototypeToUpperCase, TypeErrorCtor,
  SafePromise, TypedArrayPrototypeGetByteLength, TypedArrayPrototypeGetByteOffset,
  TypedArrayPrototypeGetBuffer, TypedArrayPrototypeGetSymbolToStringTag, TypedArrayPrototypeSet,
  Uint8ArrayCtor, uncurryGetter,
} from './primordials.js';
import { isArrayBuffer } from './util.js';

export const StringFromCharCode = String.fromCharCode;
const abByteLength = uncurryGetter(ArrayBuffer.prototype, 'byteLength');
const dataViewBuffer = uncurryGetter(DataView.prototype, 'buffer');
const dataViewByteOffset = uncurryGetter(DataView.prototype, 'byteOffset');
const dataViewByteLength = uncurryGetter(DataView.prototype, 'byteLength');

export function domError(message, name) {
  return new DOMException(message, name);
}

// A copy of a BufferSource's bytes (WebIDL "get a copy of the bytes held by the buffer source"),
// or null when `value` is not one. A detached buffer holds no bytes. Copying now means nothing
// the app does later (a detach, a resize, a write) changes what the operation reads.
export function copyBufferSource(value) {
  let buffer;
  let offset;
  let length;
  if (ArrayBufferIsView(value)) {
    if (TypedArrayPrototypeGetSymbolToStringTag(value) !== undefined) {
      buffer = TypedArrayPrototypeGetBuffer(value);
      offset = TypedArrayPrototypeGetByteOffset(value);
      length = TypedArrayPrototypeGetByteLength(value);
    } else {
      buffer = dataViewBuffer(value);
      if (!isArrayBuffer(buffer)) return null;
      if (ArrayBufferPrototypeGetDetached(buffer)) return new Uint8ArrayCtor(0);
      offset = dataViewByteOffset(value);
      length = dataViewByteLength(value);
    }
    if (!isArrayBuffer(buffer)) return null;  // a SharedArrayBuffer
  } else if (isArrayBuffer(value)) {
    buffer = value;
    offset = 0;
    length = abByteLength(value);
  } else {
    return null;
  }
  if (ArrayBufferPrototypeGetDetached(buffer)) return new Uint8ArrayCtor(0);
  const out = new Uint8ArrayCtor(length);
  TypedArrayPrototypeSet(out, new Uint8ArrayCtor(buffer, offset, length));
  return out;
}

export function requireBytes(value, context) {
  const bytes = copyBufferSource(value);
  if (bytes === null) {
    throw new TypeErrorCtor(`${context} is not of type '(ArrayBuffer or ArrayBufferView)'.`);
  }
  return bytes;
}

// base64url without padding (RFC 7515 §2), as JWK members are written.
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const B64_DECODE = new Int8Array(128);
for (let i = 0; i < 128; i++) B64_DECODE[i] = -1;
for (let i = 0; i < 64; i++) B64_DECODE[StringPrototypeCharCodeAt(B64, i)] = i;

export function base64url(bytes) {
  let s = '';
  const n = TypedArrayPrototypeGetByteLength(bytes);
  for (let i = 0; i < n; i += 3) {
    const a = bytes[i];
    const b = i + 1 < n ? bytes[i + 1] : 0;
    const c = i + 2 < n ? bytes[i + 2] : 0;
    s += B64[a >> 2] + B64[((a & 3) << 4) | (b >> 4)];
    if (i + 1 < n) s += B64[((b & 15) << 2) | (c >> 6)];
    if (i + 2 < n) s += B64[c & 63];
  }
  return s;
}

// The bytes of a base64url string (padding tolerated), or null when it is not one.
export function fromBase64url(s) {
  if (typeof s !== 'string') return null;
  let len = s.length;
  while (len > 0 && StringPrototypeCharCodeAt(s, len - 1) === 0x3d) len--;
  if (len % 4 === 1) return null;
  const out = new Uint8ArrayCtor(MathTrunc((len * 6) / 8));
  let buffer = 0;
  let bits = 0;
  let j = 0;
  for (let i = 0; i < len; i++) {
    const c = StringPrototypeCharCodeAt(s, i);
    const v = c < 128 ? B64_DECODE[c] : -1;
    if (v < 0) return null;
    buffer = ((buffer << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (buffer >> bits) & 0xff;
    }
  }
  return out;
}

// WebIDL conversions of dictionary members.
export function toEnforcedInt(value, max, context) {
  const n = NumberCtor(value);
  if (!NumberIsFinite(n)) throw new TypeErrorCtor(`${context}: Value is not a finite number.`);
  const t = MathTrunc(n);
  if (t < 0 || t > max) throw new TypeErrorCtor(`${context}: Value is outside the accepted range.`);
  return t === 0 ? 0 : t;
}

const KEY_USAGES = ['encrypt', 'decrypt', 'sign', 'verify', 'deriveKey', 'deriveBits', 'wrapKey',
  'unwrapKey'];

// sequence<KeyUsage> -> a new array of the distinct usages, in the order of KEY_USAGES.
export function toKeyUsages(value, context) {
  if (typeof value !== 'object' || value === null) {
    throw new TypeErrorCtor(`${context}: The provided value cannot be converted to a sequence.`);
  }
  const given = [];
  if (ArrayIsArray(value)) {
    for (let i = 0; i < value.length; i++) ArrayPrototypePush(given, value[i]);
  } else {
    for (const item of value) ArrayPrototypePush(given, item);
  }
  const seen = [];
  for (let i = 0; i < given.length; i++) {
    const usage = `${given[i]}`;
    if (!ArrayPrototypeIncludes(KEY_USAGES, usage)) {
      throw new TypeErrorCtor(`${context}: The provided value '${usage}' is not a valid enum value of type KeyUsage.`);
    }
    if (!ArrayPrototypeIncludes(seen, usage)) ArrayPrototypePush(seen, usage);
  }
  const out = [];
  for (let i = 0; i < KEY_USAGES.length; i++) {
    if (ArrayPrototypeIncludes(seen, KEY_USAGES[i])) ArrayPrototypePush(out, KEY_USAGES[i]);
  }
  return out;
}

// Throws SyntaxError unless every usage is one of `allowed`.
export function checkUsages(usages, allowed) {
  for (let i = 0; i < usages.length; i++) {
    if (!ArrayPrototypeIncludes(allowed, usages[i])) {
      throw domError(`Cannot create a key using the specified key usages.`, 'SyntaxError');
    }
  }
}

export function intersectUsages(usages, allowed) {
  const out = [];
  for (let i = 0; i < usages.length; i++) {
    if (ArrayPrototypeIncludes(allowed, usages[i])) ArrayPrototypePush(out, usages[i]);
  }
  return out;
}

// Recognised names per operation (upper-cased -> the spec's spelling), and the members each
// algorithm's dictionary has for that operation.
const NAMES = {};
for (const name of ['HMAC', 'ECDSA', 'ECDH', 'RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP', 'Ed25519',
  'X25519', 'AES-GCM', 'AES-CBC', 'AES-CTR', 'AES-KW', 'PBKDF2', 'HKDF', 'SHA-1', 'SHA-256',
  'SHA-384', 'SHA-512']) {
  NAMES[StringPrototypeToUpperCase(name)] = name;
}

const RSA_GEN = ['modulusLength', 'publicExponent', 'hash'];
const SUPPORTED = {
  digest: { 'SHA-1': [], 'SHA-256': [], 'SHA-384': [], 'SHA-512': [] },
  sign: { HMAC: [], ECDSA: ['hash'], 'RSASSA-PKCS1-v1_5': [], 'RSA-PSS': ['saltLength'], Ed25519: [] },
  encrypt: {
    'AES-GCM': ['iv', 'additionalData', 'tagLength'], 'AES-CBC': ['iv'],
    'AES-CTR': ['counter', 'length'], 'RSA-OAEP': ['label'],
  },
  generateKey: {
    HMAC: ['hash', 'length'], 'AES-GCM': ['length'], 'AES-CBC': ['length'], 'AES-CTR': ['length'],
    'AES-KW': ['length'], 'RSASSA-PKCS1-v1_5': RSA_GEN, 'RSA-PSS': RSA_GEN, 'RSA-OAEP': RSA_GEN,
    ECDSA: ['namedCurve'], ECDH: ['namedCurve'], Ed25519: [], X25519: [],
  },
  importKey: {
    HMAC: ['hash', 'length'], 'AES-GCM': [], 'AES-CBC': [], 'AES-CTR': [], 'AES-KW': [],
    'RSASSA-PKCS1-v1_5': ['hash'], 'RSA-PSS': ['hash'], 'RSA-OAEP': ['hash'],
    ECDSA: ['namedCurve'], ECDH: ['namedCurve'], Ed25519: [], X25519: [], PBKDF2: [], HKDF: [],
  },
  deriveBits: {
    PBKDF2: ['salt', 'iterations', 'hash'], HKDF: ['hash', 'salt', 'info'], ECDH: ['public'],
    X25519: ['public'],
  },
  getKeyLength: {
    HMAC: ['hash', 'length'], 'AES-GCM': ['length'], 'AES-CBC': ['length'], 'AES-CTR': ['length'],
    'AES-KW': ['length'], PBKDF2: [], HKDF: [],
  },
  wrapKey: { 'AES-KW': [] },
};
SUPPORTED.verify = SUPPORTED.sign;
SUPPORTED.decrypt = SUPPORTED.encrypt;
SUPPORTED.unwrapKey = SUPPORTED.wrapKey;

const BUFFER_MEMBERS = ['iv', 'additionalData', 'counter', 'label', 'salt', 'info', 'publicExponent'];
const OPTIONAL = ['additionalData', 'tagLength', 'label', 'length'];

let isCryptoKey = null;
export function setKeyBrandCheck(fn) { isCryptoKey = fn; }

// The spec's "normalize an algorithm": a new null-prototype record { name, ...members } with the
// members converted (hash normalised to its name string, BufferSources copied, integers
// range-checked), or NotSupportedError for a name the operation does not know.
export function normalize(algorithm, op, context) {
  let object;
  if (typeof algorithm === 'string') {
    object = { name: algorithm };
  } else if (typeof algorithm === 'object' && algorithm !== null) {
    object = algorithm;
  } else {
    throw new TypeErrorCtor(`${context}: Algorithm: Not an object`);
  }
  const rawName = object.name;
  if (rawName === undefined) throw new TypeErrorCtor(`${context}: Algorithm: name: Missing or not a string`);
  const given = `${rawName}`;
  const name = NAMES[StringPrototypeToUpperCase(given)];
  const table = SUPPORTED[op];
  const members = name !== undefined && ObjectGetOwnPropertyDescriptor(table, name) !== undefined
    ? table[name] : undefined;
  if (members === undefined) {
    throw domError(`Unrecognized algorithm name: ${given}`, 'NotSupportedError');
  }
  const out = { __proto__: null, name };
  // If the algorithm was given as a string, any required member is missing.
  for (let i = 0; i < members.length; i++) {
    const member = members[i];
    const value = object[member];
    const where = `${context}: ${name}: ${member}`;
    if (value === undefined) {
      if (ArrayPrototypeIncludes(OPTIONAL, member) && (member !== 'length' || name === 'HMAC')) continue;
      throw new TypeErrorCtor(`${where}: Missing`);
    }
    if (member === 'hash') {
      out.hash = normalize(value, 'digest', context).name;
    } else if (member === 'namedCurve') {
      out.namedCurve = `${value}`;
    } else if (member === 'public') {
      if (!isCryptoKey(value)) throw new TypeErrorCtor(`${where}: Not a CryptoKey`);
      out.public = value;
    } else if (ArrayPrototypeIncludes(BUFFER_MEMBERS, member)) {
      if (member === 'publicExponent' && TypedArrayPrototypeGetSymbolToStringTag(value) !== 'Uint8Array') {
        throw new TypeErrorCtor(`${where}: Not a Uint8Array`);
      }
      out[member] = requireBytes(value, where);
    } else if (member === 'tagLength') {
      out.tagLength = toEnforcedInt(value, 255, where);
    } else if (member === 'length') {
      out.length = toEnforcedInt(value, name === 'AES-CTR' && op !== 'generateKey' && op !== 'getKeyLength' ? 255 : 4294967295, where);
    } else {
      out[member] = toEnforcedInt(value, 4294967295, where);
    }
  }
  return out;
}

const NATIVE_ERRORS = ['DataError', 'OperationError', 'NotSupportedError', 'InvalidAccessError'];

// Calls host[fn](...args); an Error a native threw with one of WebCrypto's names becomes that
// DOMException.
export function callNative(fn, args) {
  try {
    return ReflectApply(host[fn], host, args);
  } catch (e) {
    if (typeof e === 'object' && e !== null) {
      const desc = ObjectGetOwnPropertyDescriptor(e, 'name');
      if (desc !== undefined && ArrayPrototypeIncludes(NATIVE_ERRORS, desc.value)) {
        const message = ObjectGetOwnPropertyDescriptor(e, 'message');
        throw domError(message !== undefined ? StringCtor(message.value) : '', desc.value);
      }
    }
    throw e;
  }
}

// Calls host[fn](...args, callbacks) for work the native runs off the executor thread (RSA key
// generation, PBKDF2): a SafePromise of its values (an array of Uint8Arrays), rejected with the
// WebCrypto error. The native may also finish at once and return the values.
export function callNativeAsync(fn, args) {
  return new SafePromise((resolve, reject) => {
    const callbacks = {
      __proto__: null,
      onDone(a, b) { resolve(b === undefined ? [a] : [a, b]); },
      onError(name, message) { reject(domError(`${message}`, `${name}`)); },
    };
    const list = copyArray(args);
    list[args.length] = callbacks;
    const values = callNative(fn, list);
    if (values !== undefined) resolve(values);
  });
}

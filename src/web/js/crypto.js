// crypto.getRandomValues, crypto.randomUUID and crypto.subtle.digest (W3C WebCrypto), over the
// host's OpenSSL natives. Hand-written: the natives do the cryptography; this file does the
// WebCrypto argument rules and errors. Other SubtleCrypto methods are not provided yet.
import { host } from './host.js';
import { DOMException } from './domexception.js';
import { bufferSourceView, defineGlobal, exposeInterface, requireArgs, typedArrayName } from './util.js';

const INTERNAL = Symbol('internal');
const INTEGER_ARRAYS = new Set([
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'BigInt64Array', 'BigUint64Array',
]);
// Upper-cased recognised name -> the name the native expects.
const DIGESTS = { 'SHA-1': 'SHA-1', 'SHA-256': 'SHA-256', 'SHA-384': 'SHA-384', 'SHA-512': 'SHA-512' };

class SubtleCrypto {
  #brand = true;

  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeError('Illegal constructor');
  }

  // Returns a promise in every case: WebIDL turns argument errors of promise-returning operations
  // into rejections.
  digest(algorithm, data) {
    try {
      if (!(#brand in this)) throw new TypeError('Illegal invocation');
      requireArgs(arguments.length, 2, "Failed to execute 'digest' on 'SubtleCrypto'");
      let name;
      if (typeof algorithm === 'object' && algorithm !== null) {
        if (algorithm.name === undefined) {
          throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': Algorithm: name: Missing or not a string");
        }
        name = `${algorithm.name}`;
      } else {
        name = `${algorithm}`;
      }
      const bytes = bufferSourceView(data);
      if (bytes === null) {
        throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': parameter 2 is not of type '(ArrayBuffer or ArrayBufferView)'.");
      }
      const canonical = DIGESTS[name.toUpperCase()];
      if (canonical === undefined) {
        throw new DOMException(`Unrecognized algorithm name: ${name}`, 'NotSupportedError');
      }
      return Promise.resolve(host.digest(canonical, bytes));
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

const subtle = new SubtleCrypto(INTERNAL);

class Crypto {
  #brand = true;

  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeError('Illegal constructor');
  }

  get subtle() {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    return subtle;
  }

  getRandomValues(array) {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'getRandomValues' on 'Crypto'");
    if (!ArrayBuffer.isView(array)) {
      throw new TypeError("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
    }
    if (!INTEGER_ARRAYS.has(typedArrayName(array))) {
      throw new DOMException(
        "Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.",
        'TypeMismatchError');
    }
    if (array.byteLength > 65536) {
      throw new DOMException(
        `Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536).`,
        'QuotaExceededError');
    }
    host.getRandomValues(array);
    return array;
  }

  randomUUID() {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    return host.randomUUID();
  }
}

exposeInterface(Crypto, 'Crypto');
exposeInterface(SubtleCrypto, 'SubtleCrypto');
const crypto = new Crypto(INTERNAL);
defineGlobal('crypto', crypto);

export { crypto };

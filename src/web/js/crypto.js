// crypto.getRandomValues, crypto.randomUUID and crypto.subtle (W3C WebCrypto), over the host's
// OpenSSL natives. Hand-written: the natives do the cryptography; this file does the WebCrypto
// argument rules and errors. SubtleCrypto and CryptoKey are in subtle*.js.
import { host } from './host.js';
import { DOMException } from './domexception.js';
import { subtle } from './subtle.js';
import { defineGlobal, exposeInterface, requireArgs, typedArrayName } from './util.js';
import { ArrayBufferIsView, SafeSet, TypedArrayPrototypeGetByteLength } from './primordials.js';

const INTERNAL = Symbol('internal');
const INTEGER_ARRAYS = new SafeSet([
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'BigInt64Array', 'BigUint64Array',
]);

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
    if (!ArrayBufferIsView(array)) {
      throw new TypeError("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
    }
    if (!INTEGER_ARRAYS.has(typedArrayName(array))) {
      throw new DOMException(
        "Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.",
        'TypeMismatchError');
    }
    if (TypedArrayPrototypeGetByteLength(array) > 65536) {
      throw new DOMException(
        `Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${TypedArrayPrototypeGetByteLength(array)}) exceeds the number of bytes of entropy available via this API (65536).`,
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
const crypto = new Crypto(INTERNAL);
defineGlobal('crypto', crypto);

export { crypto };

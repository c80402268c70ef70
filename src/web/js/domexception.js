// DOMException (WebIDL §"DOMException"). Hand-written: no small library provides it, and the
// streams and event-target libraries pick up whatever DOMException is on globalThis when they load,
// so this module must be evaluated (and installed) before them.
import { exposeInterface } from './util.js';

// name -> legacy code, per the WebIDL error names table. Names not listed have code 0.
const CODES = {
  IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
  NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InUseAttributeError: 10,
  InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
  InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19,
  AbortError: 20, URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23,
  InvalidNodeTypeError: 24, DataCloneError: 25,
};

// The legacy constants exposed on both the constructor and the prototype.
const CONSTANTS = {
  INDEX_SIZE_ERR: 1, DOMSTRING_SIZE_ERR: 2, HIERARCHY_REQUEST_ERR: 3, WRONG_DOCUMENT_ERR: 4,
  INVALID_CHARACTER_ERR: 5, NO_DATA_ALLOWED_ERR: 6, NO_MODIFICATION_ALLOWED_ERR: 7,
  NOT_FOUND_ERR: 8, NOT_SUPPORTED_ERR: 9, INUSE_ATTRIBUTE_ERR: 10, INVALID_STATE_ERR: 11,
  SYNTAX_ERR: 12, INVALID_MODIFICATION_ERR: 13, NAMESPACE_ERR: 14, INVALID_ACCESS_ERR: 15,
  VALIDATION_ERR: 16, TYPE_MISMATCH_ERR: 17, SECURITY_ERR: 18, NETWORK_ERR: 19, ABORT_ERR: 20,
  URL_MISMATCH_ERR: 21, QUOTA_EXCEEDED_ERR: 22, TIMEOUT_ERR: 23, INVALID_NODE_TYPE_ERR: 24,
  DATA_CLONE_ERR: 25,
};

// Extends Error so that instances get a V8 stack trace and `instanceof Error` holds (WebIDL makes
// DOMException.prototype inherit from Error.prototype). name/message/code are prototype getters
// over private state, as WebIDL specifies, rather than own data properties.
class DOMException extends Error {
  #name;
  #message;

  constructor(message = '', name = 'Error') {
    super();
    this.#message = `${message}`;
    this.#name = `${name}`;
  }

  get name() {
    if (!(#name in this)) throw new TypeError('Illegal invocation');
    return this.#name;
  }

  get message() {
    if (!(#message in this)) throw new TypeError('Illegal invocation');
    return this.#message;
  }

  get code() {
    if (!(#name in this)) throw new TypeError('Illegal invocation');
    return Object.hasOwn(CODES, this.#name) ? CODES[this.#name] : 0;
  }
}

for (const [key, value] of Object.entries(CONSTANTS)) {
  const desc = { value, writable: false, enumerable: true, configurable: false };
  Object.defineProperty(DOMException, key, desc);
  Object.defineProperty(DOMException.prototype, key, desc);
}

exposeInterface(DOMException, 'DOMException');

export { DOMException };

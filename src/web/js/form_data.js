// FormData (XMLHttpRequest Standard §5): an ordered list of (name, value) entries whose values are
// strings or Files. Hand-written: formdata-polyfill, the npm implementation, needs fetch-blob
// (a Node module) and looks methods up on app-reachable prototypes at run time.
import { blobBodyBytes, blobType, fileInfo, isBlob, makeFile } from './blob.js';
import { exposeInterface, requireArgs, toUSVString } from './util.js';
import {
  ArrayPrototypePush, DateNow, ReflectApply, TypeErrorCtor, copyArray,
} from './primordials.js';

const INTERNAL = Symbol('internal');

export let formDataEntries; // (formData) -> its live entry list: [[name, value], ...]
export let makeFormData;    // (entries owned by the new FormData) -> FormData
export let isFormData;

// "create an entry": a Blob that is not a File becomes a File named `filename` or "blob"; a File
// given a filename becomes a File of that name. The File shares the Blob's bytes (both immutable).
function makeEntry(name, value, filename) {
  const key = toUSVString(name);
  if (!isBlob(value)) return [key, toUSVString(value)];
  const file = fileInfo(value); // null for a Blob that is not a File
  if (file !== null && filename === undefined) return [key, value];
  const fileName = filename !== undefined ? toUSVString(filename) : file !== null ? file.name : 'blob';
  const lastModified = file !== null ? file.lastModified : DateNow();
  return [key, makeFile(blobBodyBytes(value), fileName, blobType(value), lastModified)];
}

// The two-or-three-argument rule of WebIDL's overloads: with a filename, the value must be a Blob.
function checkValue(value, argc, method) {
  if (argc > 2 && !isBlob(value)) {
    throw new TypeErrorCtor(`Failed to execute '${method}' on 'FormData': parameter 2 is not of type 'Blob'.`);
  }
}

class FormData {
  #entries = [];

  constructor(form = undefined, submitter = undefined) {
    if (form === INTERNAL) return;
    if (form !== undefined) {
      // There are no HTML forms here: the only valid argument is none.
      throw new TypeErrorCtor("Failed to construct 'FormData': parameter 1 is not of type 'HTMLFormElement'.");
    }
  }

  append(name, value, filename = undefined) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 2, "Failed to execute 'append' on 'FormData'");
    checkValue(value, arguments.length, 'append');
    ArrayPrototypePush(this.#entries, makeEntry(name, value, filename));
  }

  delete(name) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'FormData'");
    const key = toUSVString(name);
    const kept = [];
    for (let i = 0; i < this.#entries.length; i++) {
      if (this.#entries[i][0] !== key) ArrayPrototypePush(kept, this.#entries[i]);
    }
    this.#entries = kept;
  }

  get(name) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'get' on 'FormData'");
    const key = toUSVString(name);
    for (let i = 0; i < this.#entries.length; i++) {
      if (this.#entries[i][0] === key) return this.#entries[i][1];
    }
    return null;
  }

  getAll(name) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'getAll' on 'FormData'");
    const key = toUSVString(name);
    const values = [];
    for (let i = 0; i < this.#entries.length; i++) {
      if (this.#entries[i][0] === key) ArrayPrototypePush(values, this.#entries[i][1]);
    }
    return values;
  }

  has(name) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'has' on 'FormData'");
    const key = toUSVString(name);
    for (let i = 0; i < this.#entries.length; i++) {
      if (this.#entries[i][0] === key) return true;
    }
    return false;
  }

  set(name, value, filename = undefined) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 2, "Failed to execute 'set' on 'FormData'");
    checkValue(value, arguments.length, 'set');
    const entry = makeEntry(name, value, filename);
    const kept = [];
    let placed = false;
    for (let i = 0; i < this.#entries.length; i++) {
      if (this.#entries[i][0] !== entry[0]) {
        ArrayPrototypePush(kept, this.#entries[i]);
      } else if (!placed) {
        ArrayPrototypePush(kept, entry);
        placed = true;
      }
    }
    if (!placed) ArrayPrototypePush(kept, entry);
    this.#entries = kept;
  }

  forEach(callback, thisArg = undefined) {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    if (typeof callback !== 'function') {
      throw new TypeErrorCtor("Failed to execute 'forEach' on 'FormData': The callback provided as parameter 1 is not a function.");
    }
    // Live, as WebIDL's iterable forEach: entries added by the callback are visited too.
    for (let i = 0; i < this.#entries.length; i++) {
      const entry = this.#entries[i];
      ReflectApply(callback, thisArg, [entry[1], entry[0], this]);
    }
  }

  entries() {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    return new FormDataIterator(this, 'key+value');
  }

  keys() {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    return new FormDataIterator(this, 'key');
  }

  values() {
    if (!(#entries in this)) throw new TypeErrorCtor('Illegal invocation');
    return new FormDataIterator(this, 'value');
  }

  static {
    formDataEntries = (f) => f.#entries;
    makeFormData = (entries) => {
      const f = new FormData(INTERNAL);
      f.#entries = entries;
      return f;
    };
    isFormData = (value) => typeof value === 'object' && value !== null && #entries in value;
  }
}

// WebIDL's default iterator for a pair iterable: it walks the list as it is when next() is
// called, so entries appended meanwhile are seen.
const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
class FormDataIterator {
  #target;
  #kind;
  #index = 0;

  constructor(target, kind) {
    this.#target = target;
    this.#kind = kind;
  }

  next() {
    if (!(#target in this)) throw new TypeErrorCtor('Illegal invocation');
    const entries = formDataEntries(this.#target);
    if (this.#index >= entries.length) return { value: undefined, done: true };
    const entry = entries[this.#index++];
    const value = this.#kind === 'key' ? entry[0] : this.#kind === 'value' ? entry[1] : copyArray(entry);
    return { value, done: false };
  }
}
Object.setPrototypeOf(FormDataIterator.prototype, IteratorPrototype);
Object.defineProperty(FormDataIterator.prototype, Symbol.toStringTag, {
  value: 'FormData Iterator', configurable: true,
});
Object.defineProperty(FormDataIterator.prototype, 'next', { enumerable: true });

exposeInterface(FormData, 'FormData');
Object.defineProperty(FormData.prototype, Symbol.iterator, {
  value: FormData.prototype.entries, writable: true, configurable: true,
});

export { FormData };

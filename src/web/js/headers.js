// Headers (Fetch §5.2). Hand-written: no small, engine-neutral library implements it (undici's
// is tied to Node), and its storage is shaped here for the dispatch path.
//
// Storage: a Map from lowercased name to the combined value ("a, b" in append order), plus the
// Set-Cookie values kept apart, unjoined. That is everything the Headers API can observe (names
// are only ever seen lowercased), and it makes get()/has()/set() O(1). The sorted view that
// iteration needs is built on demand and cached until the next change.
//
// Guards: "immutable" (Response.error(), Response.redirect()) rejects changes. Forbidden header
// names are not enforced: they protect browsers' users, and server runtimes (Workers, Deno,
// Node) do not apply them either.
import { registerInspector, shownAs } from './inspect.js';
import { exposeInterface, requireArgs } from './util.js';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INVALID_VALUE = /[\0\r\n\u0100-\uffff]/;
const HTTP_WS_EDGES = /^[\t\n\r ]+|[\t\n\r ]+$/g;

// Header names and values from the spec's productions, with clear TypeErrors.
export function normalizeName(name, context) {
  const s = typeof name === 'string' ? name : `${name}`;
  if (!TOKEN.test(s)) throw new TypeError(`${context}: Invalid header name: "${s}"`);
  return s.toLowerCase();
}

export function normalizeValue(value, name, context) {
  let s = typeof value === 'string' ? value : `${value}`;
  // Strip leading/trailing HTTP whitespace only when there is some (the common case has none).
  const n = s.length;
  if (n > 0) {
    const first = s.charCodeAt(0);
    const last = s.charCodeAt(n - 1);
    if (first <= 32 || last <= 32) s = s.replace(HTTP_WS_EDGES, '');
  }
  if (INVALID_VALUE.test(s)) throw new TypeError(`${context}: Invalid value for header "${name}": ${JSON.stringify(s)}`);
  return s;
}

const INTERNAL = Symbol('internal');

export let headersFromPairs;   // (pairs, guard) -> Headers from trusted wire pairs
export let headersFromCopy;    // (headers, guard = same guard) -> Headers: a copy
export let headersToPairs;     // (headers) -> [[name, value]...] sorted, combined, cookies apart
export let headersSetGuard;    // (headers, guard) -> void
export let headersHas;         // (headers, lowercaseName) -> boolean, unchecked
export let headersAppendTrusted; // (headers, lowercaseName, value) -> void, unchecked
export let isHeaders;
let iteratorList;              // (headers) -> the cached sorted list, for HeadersIterator

class Headers {
  #map = new Map();
  #cookies = null; // string[] of Set-Cookie values, or null
  #guard = 'none';
  #sorted = null;  // cached sort-and-combine result, or null

  constructor(init = undefined) {
    if (init === INTERNAL) return;
    if (init !== undefined) this.#fill(init);
  }

  #fill(init) {
    const context = "Failed to construct 'Headers'";
    if (init === null || (typeof init !== 'object' && typeof init !== 'function')) {
      throw new TypeError(`${context}: The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.`);
    }
    if (#map in init) {
      this.#copyFrom(init);
      return;
    }
    const iter = init[Symbol.iterator];
    if (iter !== undefined && iter !== null) {
      if (typeof iter !== 'function') throw new TypeError(`${context}: The object's Symbol.iterator is not callable.`);
      for (const pair of iter.call(init)) {
        if (pair === null || typeof pair !== 'object' || typeof pair[Symbol.iterator] !== 'function') {
          throw new TypeError(`${context}: The provided value cannot be converted to a sequence.`);
        }
        const items = [...pair];
        if (items.length !== 2) {
          throw new TypeError(`${context}: Invalid value: each header pair must be [name, value], got ${items.length} item(s).`);
        }
        this.#append(items[0], items[1], context);
      }
      return;
    }
    // record<ByteString, ByteString>: own enumerable keys, in order. Symbol keys cannot be
    // ByteStrings.
    for (const s of Object.getOwnPropertySymbols(init)) {
      if (Object.prototype.propertyIsEnumerable.call(init, s)) {
        throw new TypeError(`${context}: Cannot convert a Symbol value to a string.`);
      }
    }
    for (const key of Object.keys(init)) this.#append(key, init[key], context);
  }

  #copyFrom(other) {
    for (const [k, v] of other.#map) this.#map.set(k, v);
    if (other.#cookies !== null) this.#cookies = other.#cookies.slice();
  }

  #append(name, value, context) {
    const key = normalizeName(name, context);
    const v = normalizeValue(value, key, context);
    if (this.#guard === 'immutable') throw new TypeError(`${context}: Headers are immutable.`);
    this.#appendTrusted(key, v);
  }

  #appendTrusted(key, v) {
    this.#sorted = null;
    if (key === 'set-cookie') {
      (this.#cookies ??= []).push(v);
      return;
    }
    const prev = this.#map.get(key);
    this.#map.set(key, prev === undefined ? v : `${prev}, ${v}`);
  }

  // "sort and combine": [name, value] pairs sorted by name, Set-Cookie values kept separate.
  #sortedList() {
    if (this.#sorted !== null) return this.#sorted;
    const names = [...this.#map.keys()];
    if (this.#cookies !== null && this.#cookies.length > 0) names.push('set-cookie');
    names.sort();
    const list = [];
    for (const name of names) {
      if (name === 'set-cookie') {
        for (const c of this.#cookies) list.push([name, c]);
      } else {
        list.push([name, this.#map.get(name)]);
      }
    }
    this.#sorted = list;
    return list;
  }

  append(name, value) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    requireArgs(arguments.length, 2, "Failed to execute 'append' on 'Headers'");
    this.#append(name, value, "Failed to execute 'append' on 'Headers'");
  }

  delete(name) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    const context = "Failed to execute 'delete' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    if (this.#guard === 'immutable') throw new TypeError(`${context}: Headers are immutable.`);
    if (key === 'set-cookie') {
      if (this.#cookies !== null) { this.#cookies = null; this.#sorted = null; }
    } else if (this.#map.delete(key)) {
      this.#sorted = null;
    }
  }

  get(name) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    const context = "Failed to execute 'get' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    if (key === 'set-cookie') {
      return this.#cookies === null || this.#cookies.length === 0 ? null : this.#cookies.join(', ');
    }
    const v = this.#map.get(key);
    return v === undefined ? null : v;
  }

  getSetCookie() {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    return this.#cookies === null ? [] : this.#cookies.slice();
  }

  has(name) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    const context = "Failed to execute 'has' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    return key === 'set-cookie' ? this.#cookies !== null && this.#cookies.length > 0 : this.#map.has(key);
  }

  set(name, value) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    const context = "Failed to execute 'set' on 'Headers'";
    requireArgs(arguments.length, 2, context);
    const key = normalizeName(name, context);
    const v = normalizeValue(value, key, context);
    if (this.#guard === 'immutable') throw new TypeError(`${context}: Headers are immutable.`);
    this.#sorted = null;
    if (key === 'set-cookie') this.#cookies = [v];
    else this.#map.set(key, v);
  }

  // WebIDL iterable<ByteString, ByteString>: the list is re-read at every step, so changes made
  // by the callback are seen, as the spec's "value pairs to iterate over" are.
  forEach(callback, thisArg = undefined) {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'forEach' on 'Headers'");
    if (typeof callback !== 'function') {
      throw new TypeError("Failed to execute 'forEach' on 'Headers': parameter 1 is not of type 'Function'.");
    }
    for (let i = 0; ; i++) {
      const list = this.#sortedList();
      if (i >= list.length) break;
      const [name, value] = list[i];
      callback.call(thisArg, value, name, this);
    }
  }

  keys() {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    return new HeadersIterator(this, 'key');
  }

  values() {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    return new HeadersIterator(this, 'value');
  }

  entries() {
    if (!(#map in this)) throw new TypeError('Illegal invocation');
    return new HeadersIterator(this, 'key+value');
  }

  static {
    // Pairs from the HTTP parser, which has already checked them against the HTTP grammar.
    headersFromPairs = (pairs, guard) => {
      const h = new Headers(INTERNAL);
      for (let i = 0; i < pairs.length; i++) {
        const pair = pairs[i];
        h.#appendTrusted(pair[0].toLowerCase(), pair[1]);
      }
      h.#guard = guard;
      return h;
    };
    headersFromCopy = (other, guard = other.#guard) => {
      const h = new Headers(INTERNAL);
      h.#copyFrom(other);
      h.#guard = guard;
      return h;
    };
    headersToPairs = (h) => {
      if (h.#cookies === null && h.#map.size === 1) return [...h.#map]; // nothing to sort
      return h.#sortedList().slice();
    };
    headersSetGuard = (h, guard) => { h.#guard = guard; };
    headersHas = (h, key) => (key === 'set-cookie' ? h.#cookies !== null && h.#cookies.length > 0 : h.#map.has(key));
    headersAppendTrusted = (h, key, value) => h.#appendTrusted(key, value);
    isHeaders = (value) => typeof value === 'object' && value !== null && #map in value;
    iteratorList = (h) => h.#sortedList();
  }
}

// The "Headers Iterator" objects of WebIDL's default iterator, inheriting %IteratorPrototype%.
const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));

class HeadersIterator {
  #headers;
  #kind;
  #index = 0;

  constructor(headers, kind) {
    this.#headers = headers;
    this.#kind = kind;
  }

  next() {
    if (!(#headers in this)) throw new TypeError('Illegal invocation');
    const list = iteratorList(this.#headers);
    if (this.#index >= list.length) return { value: undefined, done: true };
    const [name, value] = list[this.#index++];
    const kind = this.#kind;
    return { value: kind === 'key' ? name : kind === 'value' ? value : [name, value], done: false };
  }
}
Object.setPrototypeOf(HeadersIterator.prototype, IteratorPrototype);
Object.defineProperty(HeadersIterator.prototype, 'next', { enumerable: true });
Object.defineProperty(HeadersIterator.prototype, Symbol.toStringTag, { value: 'Headers Iterator', configurable: true });

Object.defineProperty(Headers.prototype, Symbol.iterator, {
  value: Headers.prototype.entries, writable: true, enumerable: false, configurable: true,
});

exposeInterface(Headers, 'Headers');

registerInspector(Headers.prototype, (h) => {
  if (!isHeaders(h)) return undefined;
  const props = {};
  for (const [name, value] of iteratorList(h)) {
    props[name] = Object.hasOwn(props, name) ? [].concat(props[name], value) : value;
  }
  return shownAs(Headers.prototype, props);
});

export { Headers };

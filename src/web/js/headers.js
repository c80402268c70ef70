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
import { exposeInterface, requireArgs, sequenceOf, trimHttpWhitespace } from './util.js';
import {
  ArrayPrototypeJoin, ArrayPrototypePush, ArrayPrototypeSort, copyArray, JSONStringify, ObjectDefineProperty,
  ObjectGetOwnPropertySymbols, ObjectGetPrototypeOf, ObjectHasOwn, ObjectKeys,
  ObjectPrototypePropertyIsEnumerable, ReflectApply, RegExpTest, SafeMap, StringPrototypeToLowerCase, SymbolIterator, TypeErrorCtor,
} from './primordials.js';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INVALID_VALUE = /[\0\r\n\u0100-\uffff]/;

// Header names and values from the spec's productions, with clear TypeErrors. (The server checks
// them again in C++ before anything reaches the wire.)
export function normalizeName(name, context) {
  const s = typeof name === 'string' ? name : `${name}`;
  if (!RegExpTest(TOKEN, s)) throw new TypeErrorCtor(`${context}: Invalid header name: "${s}"`);
  return StringPrototypeToLowerCase(s);
}

export function normalizeValue(value, name, context) {
  const s = trimHttpWhitespace(typeof value === 'string' ? value : `${value}`);
  if (RegExpTest(INVALID_VALUE, s)) {
    throw new TypeErrorCtor(`${context}: Invalid value for header "${name}": ${JSONStringify(s)}`);
  }
  return s;
}

const INTERNAL = Symbol('internal');

export let headersFromList;    // (flat [name, value, ...] from the wire, guard) -> Headers
export let headersFromCopy;    // (headers, guard = same guard) -> Headers: a copy
export let headersToList;      // (headers) -> flat [name, value, ...]: sorted, combined, cookies apart
export let headersSetGuard;    // (headers, guard) -> void
export let headersHas;         // (headers, lowercaseName) -> boolean, unchecked
export let headersGet;         // (headers, lowercaseName other than set-cookie) -> string or null
export let headersAppendTrusted; // (headers, lowercaseName, value) -> void, unchecked
export let isHeaders;
let iteratorList;              // (headers) -> the cached sorted list, for HeadersIterator

class Headers {
  #map = new SafeMap();
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
      throw new TypeErrorCtor(`${context}: The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.`);
    }
    if (#map in init) {
      this.#copyFrom(init);
      return;
    }
    // sequence<sequence<ByteString>>: WebIDL reads it through the object's own iterator (what an
    // app made of Array.prototype[Symbol.iterator] is its own business). Each pair is read by
    // index after the conversion, never through our own array iteration.
    const iter = init[SymbolIterator];
    if (iter !== undefined && iter !== null) {
      if (typeof iter !== 'function') throw new TypeErrorCtor(`${context}: The object's Symbol.iterator is not callable.`);
      const pairs = sequenceOf(init, iter, context);
      for (let i = 0; i < pairs.length; i++) {
        const items = sequenceOf(pairs[i], null, context);
        if (items.length !== 2) {
          throw new TypeErrorCtor(`${context}: Invalid value: each header pair must be [name, value], got ${items.length} item(s).`);
        }
        this.#append(items[0], items[1], context);
      }
      return;
    }
    // record<ByteString, ByteString>: own enumerable keys, in order. Symbol keys cannot be
    // ByteStrings.
    const symbols = ObjectGetOwnPropertySymbols(init);
    for (let i = 0; i < symbols.length; i++) {
      if (ObjectPrototypePropertyIsEnumerable(init, symbols[i])) {
        throw new TypeErrorCtor(`${context}: Cannot convert a Symbol value to a string.`);
      }
    }
    const keys = ObjectKeys(init);
    for (let i = 0; i < keys.length; i++) this.#append(keys[i], init[keys[i]], context);
  }

  #copyFrom(other) {
    other.#map.forEach((v, k) => { this.#map.set(k, v); });
    if (other.#cookies !== null) this.#cookies = copyArray(other.#cookies);
  }

  #append(name, value, context) {
    const key = normalizeName(name, context);
    const v = normalizeValue(value, key, context);
    if (this.#guard === 'immutable') throw new TypeErrorCtor(`${context}: Headers are immutable.`);
    this.#appendTrusted(key, v);
  }

  #appendTrusted(key, v) {
    this.#sorted = null;
    if (key === 'set-cookie') {
      ArrayPrototypePush(this.#cookies ??= [], v);
      return;
    }
    const prev = this.#map.get(key);
    this.#map.set(key, prev === undefined ? v : `${prev}, ${v}`);
  }

  // "sort and combine": [name, value] pairs sorted by name, Set-Cookie values kept separate.
  #sortedList() {
    if (this.#sorted !== null) return this.#sorted;
    const names = [];
    this.#map.forEach((_, name) => { ArrayPrototypePush(names, name); });
    if (this.#cookies !== null && this.#cookies.length > 0) ArrayPrototypePush(names, 'set-cookie');
    ArrayPrototypeSort(names);
    const list = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (name === 'set-cookie') {
        const cookies = this.#cookies;
        for (let j = 0; j < cookies.length; j++) ArrayPrototypePush(list, [name, cookies[j]]);
      } else {
        ArrayPrototypePush(list, [name, this.#map.get(name)]);
      }
    }
    this.#sorted = list;
    return list;
  }

  append(name, value) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 2, "Failed to execute 'append' on 'Headers'");
    this.#append(name, value, "Failed to execute 'append' on 'Headers'");
  }

  delete(name) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    const context = "Failed to execute 'delete' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    if (this.#guard === 'immutable') throw new TypeErrorCtor(`${context}: Headers are immutable.`);
    if (key === 'set-cookie') {
      if (this.#cookies !== null) { this.#cookies = null; this.#sorted = null; }
    } else if (this.#map.delete(key)) {
      this.#sorted = null;
    }
  }

  get(name) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    const context = "Failed to execute 'get' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    if (key === 'set-cookie') {
      return this.#cookies === null || this.#cookies.length === 0 ? null : ArrayPrototypeJoin(this.#cookies, ', ');
    }
    const v = this.#map.get(key);
    return v === undefined ? null : v;
  }

  getSetCookie() {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#cookies === null ? [] : copyArray(this.#cookies);
  }

  has(name) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    const context = "Failed to execute 'has' on 'Headers'";
    requireArgs(arguments.length, 1, context);
    const key = normalizeName(name, context);
    return key === 'set-cookie' ? this.#cookies !== null && this.#cookies.length > 0 : this.#map.has(key);
  }

  set(name, value) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    const context = "Failed to execute 'set' on 'Headers'";
    requireArgs(arguments.length, 2, context);
    const key = normalizeName(name, context);
    const v = normalizeValue(value, key, context);
    if (this.#guard === 'immutable') throw new TypeErrorCtor(`${context}: Headers are immutable.`);
    this.#sorted = null;
    if (key === 'set-cookie') this.#cookies = [v];
    else this.#map.set(key, v);
  }

  // WebIDL iterable<ByteString, ByteString>: the list is re-read at every step, so changes made
  // by the callback are seen, as the spec's "value pairs to iterate over" are.
  forEach(callback, thisArg = undefined) {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    requireArgs(arguments.length, 1, "Failed to execute 'forEach' on 'Headers'");
    if (typeof callback !== 'function') {
      throw new TypeErrorCtor("Failed to execute 'forEach' on 'Headers': parameter 1 is not of type 'Function'.");
    }
    for (let i = 0; ; i++) {
      const list = this.#sortedList();
      if (i >= list.length) break;
      const pair = list[i];
      ReflectApply(callback, thisArg, [pair[1], pair[0], this]);
    }
  }

  keys() {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    return new HeadersIterator(this, 'key');
  }

  values() {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    return new HeadersIterator(this, 'value');
  }

  entries() {
    if (!(#map in this)) throw new TypeErrorCtor('Illegal invocation');
    return new HeadersIterator(this, 'key+value');
  }

  static {
    // Header lines from the HTTP parser or the server, already checked against the HTTP
    // grammar in C++: a flat [name, value, ...] list.
    headersFromList = (list, guard) => {
      const h = new Headers(INTERNAL);
      for (let i = 0; i + 1 < list.length; i += 2) {
        h.#appendTrusted(StringPrototypeToLowerCase(list[i]), list[i + 1]);
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
    headersToList = (h) => {
      const list = [];
      if (h.#cookies === null && h.#map.size === 1) { // nothing to sort
        h.#map.forEach((value, name) => { ArrayPrototypePush(list, name, value); });
        return list;
      }
      const sorted = h.#sortedList();
      for (let i = 0; i < sorted.length; i++) ArrayPrototypePush(list, sorted[i][0], sorted[i][1]);
      return list;
    };
    headersSetGuard = (h, guard) => { h.#guard = guard; };
    headersHas = (h, key) => (key === 'set-cookie' ? h.#cookies !== null && h.#cookies.length > 0 : h.#map.has(key));
    headersAppendTrusted = (h, key, value) => h.#appendTrusted(key, value);
    headersGet = (h, key) => h.#map.get(key) ?? null;
    isHeaders = (value) => typeof value === 'object' && value !== null && #map in value;
    iteratorList = (h) => h.#sortedList();
  }
}

// The "Headers Iterator" objects of WebIDL's default iterator, inheriting %IteratorPrototype%.
const IteratorPrototype = ObjectGetPrototypeOf(ObjectGetPrototypeOf([][SymbolIterator]()));

class HeadersIterator {
  #headers;
  #kind;
  #index = 0;

  constructor(headers, kind) {
    this.#headers = headers;
    this.#kind = kind;
  }

  next() {
    if (!(#headers in this)) throw new TypeErrorCtor('Illegal invocation');
    const list = iteratorList(this.#headers);
    if (this.#index >= list.length) return { value: undefined, done: true };
    const pair = list[this.#index++];
    const name = pair[0];
    const value = pair[1];
    const kind = this.#kind;
    return { value: kind === 'key' ? name : kind === 'value' ? value : [name, value], done: false };
  }
}
Object.setPrototypeOf(HeadersIterator.prototype, IteratorPrototype);
ObjectDefineProperty(HeadersIterator.prototype, 'next', { enumerable: true });
ObjectDefineProperty(HeadersIterator.prototype, Symbol.toStringTag, { value: 'Headers Iterator', configurable: true });

ObjectDefineProperty(Headers.prototype, SymbolIterator, {
  value: Headers.prototype.entries, writable: true, enumerable: false, configurable: true,
});

exposeInterface(Headers, 'Headers');

registerInspector(Headers.prototype, (h) => {
  if (!isHeaders(h)) return undefined;
  const props = {};
  const list = iteratorList(h);
  for (let i = 0; i < list.length; i++) {
    const name = list[i][0];
    const value = list[i][1];
    props[name] = ObjectHasOwn(props, name) ? [].concat(props[name], value) : value;
  }
  return shownAs(Headers.prototype, props);
});

export { Headers };

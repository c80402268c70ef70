// URL and URLSearchParams: whatwg-url, the reference implementation of the WHATWG URL standard
// (IDNA via tr46). This module also gives Request/Response a cheap way to parse absolute URLs.
import './encoding.js'; // whatwg-url does `new TextEncoder()` when it loads
import { URL, URLSearchParams, parseURL, serializeURL } from 'whatwg-url';
// The same module instances whatwg-url's index uses (one copy of each file in the bundle).
import URLSearchParamsInterface from 'whatwg-url/lib/URLSearchParams.js';
import URLSearchParamsImpl from 'whatwg-url/lib/URLSearchParams-impl.js';
import webidlUtils from 'whatwg-url/lib/utils.js';
import whatwgUrlencoded from 'whatwg-url/lib/urlencoded.js';
import { registerInspector, shownAs } from './inspect.js';
import { defineGlobal, setName } from './util.js';
import { parseUrlencodedString, serializeUrlencoded } from './urlencoded.js';
import {
  ArrayPrototypeJoin, ArrayPrototypePush, ObjectCreate, ObjectGetPrototypeOf, ReflectApply,
  ReflectDefineProperty, SymbolIterator, TypeErrorCtor,
} from './primordials.js';

setName(URL, 'URL');
setName(URLSearchParams, 'URLSearchParams');
defineGlobal('URL', URL);
defineGlobal('URLSearchParams', URLSearchParams);

// URLSearchParams iteration, in place of whatwg-url's. The wrapper that webidl2js generated copies
// the whole list (Array.from of the implementation) at every step of an iterator's next() and of
// forEach, to see the list as it is now: iterating n entries cost n² (8,000 pairs took the
// request's whole CPU budget, and a few lines of app code turn a client's query or form body into
// that many). The methods below read the implementation's list (`impl._list`, the spec's list of
// name-value pairs, which whatwg-url keeps as [name, value] arrays and replaces wholesale when a
// URL's query is set) by index at every step instead, which is what WebIDL's default iterator and
// forEach do: an entry appended meanwhile is visited, a deletion shifts the entries after it.
// Patched here rather than forked: the URL parser, URL, the constructor and the other methods stay
// the library's (a fork would be a copy of generated code to keep up with each release); only these
// methods, the list operations and the urlencoded coder further down are replaced, on the
// prototypes and module objects the library made, so that `URLSearchParams.prototype` keeps its
// shape. They rely on the library's internals (`_list`, `_updateSteps`, `interfaceDescriptor`,
// `implForWrapperWithInterface`, the urlencoded module's exports looked up at each call), which
// tests/web/url.test.js exercises: an update of whatwg-url must keep them. They also follow the
// runtime's primordials rules (whatwg-url's go through Object.create, Object.defineProperty and
// array methods an app can replace).
const paramsDescriptor = URLSearchParamsInterface.interfaceDescriptor;
// A URLSearchParams's implementation object, or null when `value` is not one.
function paramsImpl(value) {
  return webidlUtils.implForWrapperWithInterface(value, paramsDescriptor);
}
function requireParamsImpl(value, method) {
  const impl = paramsImpl(value);
  if (impl === null) {
    throw new TypeErrorCtor(`'${method}' called on an object that is not a valid instance of URLSearchParams.`);
  }
  return impl;
}

// The "URLSearchParams Iterator" prototype whatwg-url made (its toStringTag, inheriting
// %IteratorPrototype%), taken from an iterator of its own before the methods are replaced.
const ParamsIteratorPrototype = ObjectGetPrototypeOf(ReflectApply(URLSearchParams.prototype.entries, new URLSearchParams(), []));

// A base class whose constructor returns the object it is given, so that a derived class can put
// its private fields on an object made with another prototype (as webidl2js's own wrappers do).
class Stamp {
  constructor(target) {
    return target;
  }
}

// The state of one iterator (WebIDL's default iterator object: its target, kind and index), kept
// in private fields of the iterator itself: only objects made here pass next()'s brand check.
class ParamsIteratorState extends Stamp {
  #impl;
  #kind;
  #index = 0;

  constructor(target, impl, kind) {
    super(target);
    this.#impl = impl;
    this.#kind = kind;
  }

  static next(iterator) {
    if (typeof iterator !== 'object' || iterator === null || !(#impl in iterator)) {
      throw new TypeErrorCtor('next() called on a value that is not a URLSearchParams iterator object');
    }
    const list = iterator.#impl._list;
    const index = iterator.#index;
    if (index >= list.length) return { value: undefined, done: true };
    iterator.#index = index + 1;
    const pair = list[index];
    const kind = iterator.#kind;
    return { value: kind === 'key' ? pair[0] : kind === 'value' ? pair[1] : [pair[0], pair[1]], done: false };
  }
}

function makeParamsIterator(impl, kind) {
  return new ParamsIteratorState(ObjectCreate(ParamsIteratorPrototype), impl, kind);
}

// Object literal methods: named, not constructors, with the lengths WebIDL gives them.
const paramsMethods = {
  entries() {
    return makeParamsIterator(requireParamsImpl(this, 'entries'), 'key+value');
  },
  keys() {
    return makeParamsIterator(requireParamsImpl(this, 'keys'), 'key');
  },
  values() {
    return makeParamsIterator(requireParamsImpl(this, 'values'), 'value');
  },
  forEach(callback) {
    const impl = requireParamsImpl(this, 'forEach');
    if (arguments.length < 1) {
      throw new TypeErrorCtor("Failed to execute 'forEach' on 'iterable': 1 argument required, but only 0 present.");
    }
    if (typeof callback !== 'function') {
      throw new TypeErrorCtor("Failed to execute 'forEach' on 'iterable': The callback provided as parameter 1 is not a function");
    }
    const thisArg = arguments[1];
    // The list is read again after every call: the callback may have changed it.
    for (let i = 0; i < impl._list.length; i++) {
      const pair = impl._list[i];
      ReflectApply(callback, thisArg, [pair[1], pair[0], this]);
    }
  },
};
const iteratorMethods = {
  next() {
    return ParamsIteratorState.next(this);
  },
};
for (const name of ['entries', 'keys', 'values', 'forEach']) {
  ReflectDefineProperty(URLSearchParams.prototype, name, {
    value: paramsMethods[name], writable: true, enumerable: true, configurable: true,
  });
}
ReflectDefineProperty(URLSearchParams.prototype, SymbolIterator, {
  value: paramsMethods.entries, writable: true, enumerable: false, configurable: true,
});
ReflectDefineProperty(ParamsIteratorPrototype, 'next', {
  value: iteratorMethods.next, writable: true, enumerable: true, configurable: true,
});

// delete() and set(), in place of the implementation's: it removed each matching entry with its
// own splice, which moves every entry after it (deleting 20,000 of 40,000 entries took half a
// second, and 125,000 of 250,000 took 12.7 s). These keep the entries that stay in one
// pass, in the same list (an iterator holds it), then run the library's update steps (the URL's
// query) as before.
const implMethods = {
  delete(name, value) {
    const list = this._list;
    let kept = 0;
    for (let i = 0; i < list.length; i++) {
      const pair = list[i];
      if (pair[0] !== name || (value !== undefined && pair[1] !== value)) list[kept++] = pair;
    }
    list.length = kept;
    this._updateSteps();
  },
  set(name, value) {
    const list = this._list;
    let found = false;
    let kept = 0;
    for (let i = 0; i < list.length; i++) {
      const pair = list[i];
      if (pair[0] === name) {
        if (found) continue;
        found = true;
        pair[1] = value;
      }
      list[kept++] = pair;
    }
    list.length = kept;
    if (!found) ArrayPrototypePush(list, [name, value]);
    this._updateSteps();
  },
};
for (const name of ['delete', 'set']) {
  ReflectDefineProperty(URLSearchParamsImpl.implementation.prototype, name, {
    value: implMethods[name], writable: true, enumerable: false, configurable: true,
  });
}

// The urlencoded parser and serializer whatwg-url calls (URLSearchParams's constructor and
// toString(), a URL's query and its searchParams' updates: each looks them up on this module object
// at the call) are the runtime's (urlencoded.js): one scan of the text instead of several byte
// arrays and UTF-8 coder calls per pair, 1.3 s of CPU for 1 MB of `a=1&a=1...` before.
whatwgUrlencoded.parseUrlencodedString = parseUrlencodedString;
whatwgUrlencoded.serializeUrlencoded = serializeUrlencoded;

// A URLSearchParams's body (Fetch's "extract a body"): its list, serialized. Null when `value` is
// not a URLSearchParams (a brand check: an object that only inherits the prototype is not one).
// Not `value.toString()`, which an app may have replaced.
export function searchParamsBody(value) {
  const impl = paramsImpl(value);
  return impl === null ? null : serializeUrlencoded(impl._list);
}

// Most URLs a server sees are already in the form the URL parser would serialize them to:
// http(s), lowercase ASCII host (not IDNA "xn--", not a number the IPv4 parser would rewrite, or a
// canonical dotted quad), no userinfo, a non-default port without leading zeros, a path and query
// made of characters the parser leaves alone, no dot segments, no fragment. For those the
// serialization is the input itself, so the full state machine can be skipped. Anything else
// (including anything this regex is unsure about) takes the full parser.
const DEC_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const FAST_URL = new RegExp(
  '^(https?)://' +
  `(?:(?:[a-z0-9-]+\\.)*[a-z][a-z0-9-]*|${DEC_OCTET}(?:\\.${DEC_OCTET}){3})` +
  '(?::([1-9][0-9]{0,4}))?' +
  "/[!$-;=@-\\[\\]_a-z|~]*" +                  // path: printable ASCII minus " # < > ? \\ ^ ` { }
  "(?:\\?[!$-&(-;=?-~]*)?$",                   // query: printable ASCII minus " # ' < >
);
const NEEDS_FULL_PATH_PARSE = /\/\.|%2e|xn--/i;

// Parses an absolute URL string. Returns the serialized URL, or null when it does not parse.
// Throws TypeError when it has credentials (Fetch forbids them in Request URLs) if asked.
export function parseAbsoluteURL(input, rejectCredentials, context) {
  const m = FAST_URL.exec(input);
  if (m !== null && !NEEDS_FULL_PATH_PARSE.test(input)) {
    const port = m[2];
    if (port === undefined) return input;
    const n = +port;
    if (n <= 65535 && n !== (m[1] === 'http' ? 80 : 443)) return input;
  }
  const record = parseURL(input);
  if (record === null) return null;
  if (rejectCredentials && (record.username !== '' || record.password !== '')) {
    throw new TypeError(`${context}: Request cannot be constructed from a URL that includes credentials: ${input}`);
  }
  return serializeURL(record);
}

// console.log(url) shows the parts, as Node does.
const hrefGetter = Object.getOwnPropertyDescriptor(URL.prototype, 'href').get;
registerInspector(URL.prototype, (url) => {
  try { hrefGetter.call(url); } catch { return undefined; }
  const props = {};
  for (const key of ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname',
    'port', 'pathname', 'search', 'searchParams', 'hash']) {
    props[key] = url[key];
  }
  return shownAs(URL.prototype, props);
});
registerInspector(URLSearchParams.prototype, (params, format) => {
  const impl = paramsImpl(params);
  if (impl === null) return undefined;
  const entries = [];
  for (let i = 0; i < impl._list.length; i++) {
    ArrayPrototypePush(entries, `${format(impl._list[i][0])} => ${format(impl._list[i][1])}`);
  }
  return entries.length === 0 ? 'URLSearchParams {}' : `URLSearchParams { ${ArrayPrototypeJoin(entries, ', ')} }`;
});

export { URL, URLSearchParams };

// Request (Fetch §5.4). Hand-written: Fetch's own object model, kept lean for the server path.
//
// A request made by the server for an incoming HTTP request (createIncomingRequest) keeps the
// raw URL and header pairs and only parses/builds them when `url`/`headers` are first read, and
// only creates its AbortSignal when something needs it: `signal` is read, a Request or clone made
// from it must follow it, or the client disconnects (abortIncomingRequest).
//
// Server-runtime choices (as Workers and Deno make them): forbidden request headers are not
// enforced, and a ReadableStream body does not require `duplex: "half"` (the value is checked
// when given).
import {
  BodyState, IncomingBody, bodyForInspection, cloneBody, extractBody, installBodyMixin, isUnusable, takeBody,
} from './body.js';
import {
  Headers, headersAppendTrusted, headersFromCopy, headersFromList, headersGet, headersHas,
} from './headers.js';
import { createAbortSignal, createDependentSignal, isAbortSignal, signalAbort } from './abort.js';
import { registerInspector, shownAs } from './inspect.js';
import { parseAbsoluteURL } from './url.js';
import { isReadableStream } from './streams.js';
import { exposeInterface, requireArgs, toUSVString } from './util.js';
import {
  ArrayPrototypeIncludes, ObjectFreeze, RangeErrorCtor, RegExpTest, SafeMap, SafeSet,
  StringPrototypeSlice, StringPrototypeToLowerCase, StringPrototypeToUpperCase, TypeErrorCtor, uncurryGetter,
} from './primordials.js';

const INTERNAL = Symbol('internal');
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NORMALIZED_METHODS = new SafeMap([
  ['delete', 'DELETE'], ['get', 'GET'], ['head', 'HEAD'], ['options', 'OPTIONS'], ['post', 'POST'], ['put', 'PUT'],
]);
const FORBIDDEN_METHODS = new SafeSet(['connect', 'trace', 'track']);

// Enumerations of RequestInit, checked as WebIDL does (TypeError for other values).
const ENUMS = {
  cache: ['default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached'],
  credentials: ['omit', 'same-origin', 'include'],
  duplex: ['half'],
  mode: ['navigate', 'same-origin', 'no-cors', 'cors'],
  priority: ['high', 'low', 'auto'],
  redirect: ['follow', 'error', 'manual'],
  referrerPolicy: ['', 'no-referrer', 'no-referrer-when-downgrade', 'same-origin', 'origin',
    'strict-origin', 'origin-when-cross-origin', 'strict-origin-when-cross-origin', 'unsafe-url'],
};

function toEnum(value, key, context) {
  const s = `${value}`;
  if (!ArrayPrototypeIncludes(ENUMS[key], s)) {
    throw new TypeErrorCtor(`${context}: The provided value '${s}' is not a valid enum value of type Request${StringPrototypeToUpperCase(key[0])}${StringPrototypeSlice(key, 1)}.`);
  }
  return s;
}

// "normalize a method": the six common methods are upper-cased whatever their case; others
// (e.g. "patch") are kept as written, as the spec says.
function normalizeMethod(method) {
  if (method === 'GET' || method === 'POST' || method === 'HEAD' || method === 'PUT' ||
      method === 'DELETE' || method === 'OPTIONS') return method;
  return NORMALIZED_METHODS.get(StringPrototypeToLowerCase(method)) ?? method;
}

// Options that are rarely set, kept out of the common object shape. The defaults are Fetch's.
const DEFAULT_OPTIONS = Object.freeze({
  mode: 'cors', credentials: 'same-origin', cache: 'default', integrity: '', keepalive: false,
  referrer: 'about:client', referrerPolicy: '',
});

export let createIncomingRequest; // (method, url, flat header list, body bytes | null) -> Request
export let abortIncomingRequest;  // (request, reason) -> void: the client went away
export let requestForFetch;       // (request) -> what fetch() sends: see the static block
let getBody;                      // (value) -> BodyState | null, or undefined if not a Request

// #signal of an incoming request before its signal exists: the server may still abort it, so
// requests and clones made from it must follow it (unlike null, "a signal that never aborts").
const LAZY_SIGNAL = Object.freeze({});

class Request {
  #method = 'GET';
  #url = null;         // serialized URL, or null while #rawUrl waits to be parsed
  #rawUrl = null;
  #headers = null;     // Headers, or null until first needed
  #headerList = null;  // the wire's flat [name, value, ...] list while #headers is null
  #contentType = null; // Content-Type implied by the body while #headers is null
  #body = null;        // BodyState or null
  #signal = null;      // AbortSignal, or null for "a signal that never aborts", or LAZY_SIGNAL;
                       // made on first use
  #redirect = 'follow';
  #options = DEFAULT_OPTIONS;

  constructor(input, init = undefined) {
    if (input === INTERNAL) return;
    const context = "Failed to construct 'Request'";
    requireArgs(arguments.length, 1, context);
    if (init !== undefined && init !== null && typeof init !== 'object' && typeof init !== 'function') {
      throw new TypeErrorCtor(`${context}: The provided value is not of type 'RequestInit'.`);
    }

    // Step 5/6: from a URL string, or from another Request.
    let inputRequest = null;
    let parentSignal = null;
    if (typeof input === 'object' && input !== null && #method in input) {
      inputRequest = input;
      this.#method = input.#method;
      this.#url = input.url;
      this.#redirect = input.#redirect;
      this.#options = input.#options;
      parentSignal = input.#signal === LAZY_SIGNAL ? input.signal : input.#signal;
    } else {
      const href = toUSVString(input);
      const parsed = parseAbsoluteURL(href, true, context);
      if (parsed === null) throw new TypeErrorCtor(`${context}: Invalid URL: ${href}`);
      this.#url = parsed;
    }

    let initBody; let initHeaders; let initMethod; let initSignal;
    if (init !== undefined && init !== null) {
      // Members read in WebIDL's (lexicographic) order.
      const { body, cache, credentials, duplex, headers, integrity, keepalive, method, mode,
        priority, redirect, referrer, referrerPolicy, signal, window } = init;
      initBody = body;
      initHeaders = headers;
      initMethod = method;
      initSignal = signal;
      if (duplex !== undefined) toEnum(duplex, 'duplex', context);
      if (priority !== undefined) toEnum(priority, 'priority', context);
      if (window !== undefined && window !== null) throw new TypeErrorCtor(`${context}: 'window' must be null.`);
      let options = null;
      const option = (key, value) => { (options ??= { ...this.#options })[key] = value; };
      if (referrer !== undefined) {
        const r = toUSVString(referrer);
        if (r === '') option('referrer', '');
        else {
          const parsed = parseAbsoluteURL(r, false, context);
          if (parsed === null) throw new TypeErrorCtor(`${context}: Invalid referrer URL: ${r}`);
          option('referrer', parsed);
        }
      }
      if (referrerPolicy !== undefined) option('referrerPolicy', toEnum(referrerPolicy, 'referrerPolicy', context));
      if (mode !== undefined) {
        const m = toEnum(mode, 'mode', context);
        if (m === 'navigate') throw new TypeErrorCtor(`${context}: Cannot construct a Request with a RequestInit whose mode member is set as 'navigate'.`);
        option('mode', m);
      }
      if (credentials !== undefined) option('credentials', toEnum(credentials, 'credentials', context));
      if (cache !== undefined) option('cache', toEnum(cache, 'cache', context));
      if (options !== null && options.cache === 'only-if-cached' && options.mode !== 'same-origin') {
        throw new TypeErrorCtor(`${context}: 'only-if-cached' can be set only with 'same-origin' mode.`);
      }
      if (redirect !== undefined) this.#redirect = toEnum(redirect, 'redirect', context);
      if (integrity !== undefined) option('integrity', `${integrity}`);
      if (keepalive !== undefined) option('keepalive', !!keepalive);
      if (options !== null) this.#options = ObjectFreeze(options);
    }

    if (initMethod !== undefined) {
      const m = `${initMethod}`;
      if (!RegExpTest(TOKEN, m)) throw new TypeErrorCtor(`${context}: '${m}' is not a valid HTTP method.`);
      if (FORBIDDEN_METHODS.has(StringPrototypeToLowerCase(m))) throw new TypeErrorCtor(`${context}: '${m}' HTTP method is unsupported.`);
      this.#method = normalizeMethod(m);
    }

    if (initSignal !== undefined) {
      if (initSignal !== null && !isAbortSignal(initSignal)) {
        throw new TypeErrorCtor(`${context}: Failed to read the 'signal' property from 'RequestInit': Failed to convert value to 'AbortSignal'.`);
      }
      parentSignal = initSignal;
    }
    // This request's signal follows the given one (a null one never aborts: nothing to follow).
    if (parentSignal !== null) this.#signal = createDependentSignal([parentSignal]);

    if (initHeaders !== undefined) this.#headers = new Headers(initHeaders);
    else if (inputRequest !== null) this.#headers = headersFromCopy(inputRequest.headers, 'request');

    const inputBody = inputRequest === null ? null : inputRequest.#body;
    const hasInitBody = initBody !== undefined && initBody !== null;
    if ((hasInitBody || inputBody !== null) && (this.#method === 'GET' || this.#method === 'HEAD')) {
      throw new TypeErrorCtor(`${context}: Request with GET/HEAD method cannot have body.`);
    }
    let body = null;
    if (hasInitBody) {
      body = extractBody(initBody, context);
      const type = body.contentType;
      if (type !== null) {
        if (this.#headers === null) this.#contentType = type;
        else if (!headersHas(this.#headers, 'content-type')) headersAppendTrusted(this.#headers, 'content-type', type);
      }
    } else if (inputBody !== null) {
      if (isUnusable(inputBody)) throw new TypeErrorCtor(`${context}: Cannot construct a Request with a Request object that has already been used.`);
      body = inputBody;
    }
    // A body that arrives from the client is a stream even before anything made its stream.
    if (body !== null && (body.stream !== null || IncomingBody.is(body.source))) {
      const mode = this.#options.mode;
      if (mode !== 'same-origin' && mode !== 'cors') {
        throw new TypeErrorCtor(`${context}: A body stream requires mode 'same-origin' or 'cors'.`);
      }
    }
    // The input request's body moves to this one; the input then reads as used.
    this.#body = body !== null && body === inputBody ? takeBody(inputBody) : body;
  }

  get method() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#method;
  }

  get url() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#url === null) {
      this.#url = parseAbsoluteURL(this.#rawUrl, false, '') ?? this.#rawUrl;
      this.#rawUrl = null;
    }
    return this.#url;
  }

  get headers() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#headers === null) {
      this.#headers = headersFromList(this.#headerList ?? [], 'request');
      this.#headerList = null;
      if (this.#contentType !== null) headersAppendTrusted(this.#headers, 'content-type', this.#contentType);
      this.#contentType = null;
    }
    return this.#headers;
  }

  get destination() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return '';
  }

  get referrer() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.referrer;
  }

  get referrerPolicy() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.referrerPolicy;
  }

  get mode() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.mode;
  }

  get credentials() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.credentials;
  }

  get cache() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.cache;
  }

  get redirect() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#redirect;
  }

  get integrity() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.integrity;
  }

  get keepalive() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#options.keepalive;
  }

  get isReloadNavigation() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return false;
  }

  get isHistoryNavigation() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return false;
  }

  get signal() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    const signal = this.#signal;
    if (signal !== null && signal !== LAZY_SIGNAL) return signal;
    return (this.#signal = createAbortSignal());
  }

  get duplex() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    return 'half';
  }

  clone() {
    if (!(#method in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#body !== null && isUnusable(this.#body)) {
      throw new TypeErrorCtor("Failed to execute 'clone' on 'Request': Request body is already used.");
    }
    const r = new Request(INTERNAL);
    r.#method = this.#method;
    r.#url = this.#url;
    r.#rawUrl = this.#rawUrl;
    r.#headerList = this.#headerList;
    r.#contentType = this.#contentType;
    if (this.#headers !== null) r.#headers = headersFromCopy(this.#headers);
    r.#redirect = this.#redirect;
    r.#options = this.#options;
    if (this.#signal !== null) r.#signal = createDependentSignal([this.signal]);
    if (this.#body !== null) r.#body = cloneBody(this.#body);
    return r;
  }

  static {
    getBody = (value) => (typeof value === 'object' && value !== null && #method in value ? value.#body : undefined);
    createIncomingRequest = (rawMethod, url, headerList, body) => {
      const r = new Request(INTERNAL);
      const method = normalizeMethod(rawMethod);
      r.#method = method;
      r.#rawUrl = url;
      r.#headerList = headerList;
      r.#signal = LAZY_SIGNAL;
      if (body !== null && body !== undefined && method !== 'GET' && method !== 'HEAD') {
        r.#body = isReadableStream(body) ? new BodyState(null, body, null) : new BodyState(body, null, null);
      }
      return r;
    };
    abortIncomingRequest = (r, reason) => {
      signalAbort(r.signal, reason);
    };
    // The request as fetch() and service bindings send it. `signal` is null for a request whose
    // signal can never abort.
    requestForFetch = (r) => ({
      method: r.#method,
      url: r.url,
      headers: r.headers,
      body: r.#body,
      signal: r.#signal === null ? null : r.signal,
      redirect: r.#redirect,
    });
  }
}

// The Content-Type blob() and formData() read, through the getter as the runtime defined it.
const headersOf = uncurryGetter(Request.prototype, 'headers');
installBodyMixin(Request, 'Request', (r) => getBody(r), (r) => headersGet(headersOf(r), 'content-type'));
exposeInterface(Request, 'Request');

registerInspector(Request.prototype, (r) => {
  if (getBody(r) === undefined) return undefined;
  const props = {};
  for (const key of ['method', 'url', 'headers', 'destination', 'referrer', 'referrerPolicy', 'mode',
    'credentials', 'cache', 'redirect', 'integrity', 'keepalive', 'isReloadNavigation',
    'isHistoryNavigation', 'signal']) {
    props[key] = r[key];
  }
  props.body = bodyForInspection(getBody(r));
  props.bodyUsed = r.bodyUsed;
  return shownAs(Request.prototype, props);
});

export { Request };

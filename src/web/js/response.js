// Response (Fetch §5.5). Hand-written: Fetch's own object model, kept lean for the server path.
//
// Headers are created on first use: a Response built from a string with no init only records the
// Content-Type its body implies, and the server reads that without ever building a Headers.
import {
  BodyState, TEXT_PLAIN, bodyForServer, bodyForInspection, cloneBody, extractBody,
  installBodyMixin, isUnusable,
} from './body.js';
import {
  Headers, headersAppendTrusted, headersFromCopy, headersFromList, headersGet, headersHas, headersToList,
} from './headers.js';
import { registerInspector, shownAs } from './inspect.js';
import { parseAbsoluteURL } from './url.js';
import { exposeInterface, isUint8Array, requireArgs, toByteString } from './util.js';
import {
  JSONStringify, MathTrunc, NumberCtor, NumberIsFinite, RangeErrorCtor, RegExpTest, TypeErrorCtor, uncurryGetter,
} from './primordials.js';

const INTERNAL = Symbol('internal');
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

function isNullBodyStatus(status) {
  return status === 101 || status === 103 || status === 204 || status === 205 || status === 304;
}

function isRedirectStatus(status) {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

// WebIDL `unsigned short`: ToNumber, truncate, modulo 2^16.
function toUnsignedShort(value) {
  const n = MathTrunc(NumberCtor(value));
  if (!NumberIsFinite(n)) return 0;
  return ((n % 65536) + 65536) % 65536;
}

export let isResponse;
// (response, streaming) -> { status, statusText, headers: flat [name, value, ...],
// bytes: Uint8Array | null, stream: the body's ReadableStream (a stream body, when `streaming`)
// | null, pending: a promise of the bytes (a stream body otherwise) | null }, read from the
// private state alone.
export let responseForServer;
// (status, statusText, headers: flat list, body: BodyState | null, url, redirected) -> a Response of type
// "basic" with immutable headers, as fetch() and service bindings return.
export let createFetchedResponse;
let getBody;                  // (value) -> BodyState | null, or undefined if not a Response

class Response {
  #status = 200;
  #statusText = '';
  #headers = null;     // Headers, or null until first needed
  #contentType = null; // Content-Type implied by the body while #headers is null
  #body = null;        // BodyState or null
  #type = 'default';
  #url = '';
  #redirected = false;

  constructor(body = null, init = undefined) {
    if (body === INTERNAL) return;
    const bodyWithType = body === null || body === undefined
      ? null : extractBody(body, "Failed to construct 'Response'");
    this.#initialize(init, bodyWithType, "Failed to construct 'Response'");
  }

  // "initialize a response"
  #initialize(init, body, context) {
    if (init !== undefined && init !== null) {
      if (typeof init !== 'object' && typeof init !== 'function') {
        throw new TypeErrorCtor(`${context}: The provided value is not of type 'ResponseInit'.`);
      }
      // Dictionary members are read in lexicographic order, as WebIDL converts them.
      const headers = init.headers;
      const status = init.status;
      const statusText = init.statusText;
      if (status !== undefined) {
        const s = toUnsignedShort(status);
        if (s < 200 || s > 599) {
          throw new RangeErrorCtor(`${context}: The status provided (${s}) is outside the range [200, 599].`);
        }
        this.#status = s;
      }
      if (statusText !== undefined) {
        const t = toByteString(statusText, context);
        if (!RegExpTest(REASON_PHRASE, t)) throw new TypeErrorCtor(`${context}: Invalid statusText.`);
        this.#statusText = t;
      }
      if (headers !== undefined) this.#headers = new Headers(headers);
    }
    if (body !== null) {
      if (isNullBodyStatus(this.#status)) {
        throw new TypeErrorCtor(`${context}: Response with null body status (${this.#status}) cannot have a body.`);
      }
      this.#body = body;
      const type = body.contentType;
      if (type !== null) {
        if (this.#headers === null) this.#contentType = type;
        else if (!headersHas(this.#headers, 'content-type')) headersAppendTrusted(this.#headers, 'content-type', type);
      }
    }
  }

  static error() {
    const r = new Response(INTERNAL);
    r.#type = 'error';
    r.#status = 0;
    r.#headers = headersFromList([], 'immutable');
    return r;
  }

  static redirect(url, status = 302) {
    const context = "Failed to execute 'redirect' on 'Response'";
    requireArgs(arguments.length, 1, context);
    const href = `${url}`;
    const parsed = parseAbsoluteURL(href, false, context);
    if (parsed === null) throw new TypeErrorCtor(`${context}: Invalid URL: ${href}`);
    const s = toUnsignedShort(status);
    if (!isRedirectStatus(s)) throw new RangeErrorCtor(`${context}: Invalid status code ${s} (must be 301, 302, 303, 307 or 308).`);
    const r = new Response(INTERNAL);
    r.#status = s;
    r.#headers = headersFromList(['location', parsed], 'immutable');
    return r;
  }

  static json(data, init = undefined) {
    const context = "Failed to execute 'json' on 'Response'";
    requireArgs(arguments.length, 1, context);
    const text = JSONStringify(data);
    if (text === undefined) throw new TypeErrorCtor(`${context}: The data is not JSON serializable.`);
    const r = new Response(INTERNAL);
    r.#initialize(init, new BodyState(text, null, 'application/json'), context);
    return r;
  }

  get type() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#type;
  }

  get url() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#url;
  }

  get redirected() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#redirected;
  }

  get status() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#status;
  }

  get ok() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#status >= 200 && this.#status <= 299;
  }

  get statusText() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#statusText;
  }

  get headers() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#headers === null) {
      this.#headers = headersFromList(this.#contentType === null ? [] : ['content-type', this.#contentType], 'response');
      this.#contentType = null;
    }
    return this.#headers;
  }

  clone() {
    if (!(#status in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#body !== null && isUnusable(this.#body)) {
      throw new TypeErrorCtor("Failed to execute 'clone' on 'Response': Response body is already used.");
    }
    const r = new Response(INTERNAL);
    r.#status = this.#status;
    r.#statusText = this.#statusText;
    r.#type = this.#type;
    r.#url = this.#url;
    r.#redirected = this.#redirected;
    r.#contentType = this.#contentType;
    if (this.#headers !== null) r.#headers = headersFromCopy(this.#headers); // keeps the guard
    if (this.#body !== null) r.#body = cloneBody(this.#body);
    return r;
  }

  static {
    isResponse = (value) => typeof value === 'object' && value !== null && #status in value;
    getBody = (value) => (typeof value === 'object' && value !== null && #status in value ? value.#body : undefined);
    responseForServer = (r, streaming) => {
      if (r.#type === 'error') throw new TypeErrorCtor('fetch handler returned Response.error(), a network error; expected a Response that can be sent');
      let headers;
      if (r.#headers !== null) headers = headersToList(r.#headers);
      else headers = r.#contentType === null ? [] : ['content-type', r.#contentType];
      const body = bodyForServer(r.#body, streaming);
      const sync = isUint8Array(body);
      const stream = !sync && streaming ? body : null;
      return {
        status: r.#status, statusText: r.#statusText, headers,
        bytes: sync ? body : null, stream, pending: sync || stream !== null ? null : body,
      };
    };
    createFetchedResponse = (status, statusText, headerList, body, url, redirected) => {
      const r = new Response(INTERNAL);
      r.#status = status;
      r.#statusText = statusText;
      r.#headers = headersFromList(headerList, 'immutable');
      r.#body = body;
      r.#type = 'basic';
      r.#url = url;
      r.#redirected = redirected;
      return r;
    };
  }
}

// The Content-Type blob() and formData() read, through the getter as the runtime defined it.
const headersOf = uncurryGetter(Response.prototype, 'headers');
installBodyMixin(Response, 'Response', (r) => getBody(r), (r) => headersGet(headersOf(r), 'content-type'));
exposeInterface(Response, 'Response');

registerInspector(Response.prototype, (r) => {
  if (!isResponse(r)) return undefined;
  const props = {};
  for (const key of ['status', 'statusText', 'headers', 'body', 'bodyUsed', 'ok', 'redirected', 'type', 'url']) {
    props[key] = key === 'body' ? bodyForInspection(getBody(r)) : r[key];
  }
  return shownAs(Response.prototype, props);
});

export { Response, TEXT_PLAIN, isNullBodyStatus, isRedirectStatus };

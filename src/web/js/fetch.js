// Global fetch() (Fetch §5.6 and the parts of "main fetch" / "HTTP fetch" / "HTTP-redirect fetch"
// a server runtime needs), on top of the host's one-exchange-at-a-time natives (../README.md,
// "Host operations"): host.fetchStart performs one HTTP exchange without following redirects, so
// the redirect loop lives here, hop by hop; the response body is pulled from the host only as fast
// as the app reads it. Hand-written: this is Fetch's own logic, glued to our natives.
//
// Also the pieces service bindings (bindings.js) share with it: turning fetch()'s arguments into
// what the host is sent.
import { host } from './host.js';
import { BodyState, bodyForServer } from './body.js';
import { DOMException } from './domexception.js';
import { headersToList } from './headers.js';
import { isUint8Array } from './util.js';
import { ArrayPrototypePush, PromisePrototypeThen, TypeErrorCtor } from './primordials.js';
import { Request, requestForFetch } from './request.js';
import { createFetchedResponse, isNullBodyStatus, isRedirectStatus } from './response.js';
import { addAbortAlgorithm, removeAbortAlgorithm } from './abort.js';
import { ReadableStream } from './streams.js';
import { URL } from './url.js';
import { exposeFunction, requireArgs } from './util.js';

const MAX_REDIRECTS = 20;
// Once the app reads a response body, it is asked for a few pieces ahead of the reader, so that
// the next piece is on its way while the app takes this one (one round trip to the host per piece
// otherwise): up to the host's read-ahead (kFetchPiecesAhead in worker/fetch_client.h), and fewer
// as the body stream's queue fills, so that what is asked for and what waits unread stay within
// one window. Nothing is asked for before the first read.
const PIECES_AHEAD = 4;
const PIECE_BYTES = 65536;
const WINDOW_BYTES = PIECES_AHEAD * PIECE_BYTES;

// Headers that describe one connection or the message framing (RFC 9110 §7.6.1, §8.6, RFC 9112
// §6.1), which the host derives from the URL and the body bytes it is given. They are not sent as
// the app set them: a request built from the incoming one (a proxy) carries the client's Host,
// Content-Length, Connection..., which would be wrong, or ambiguous, on the upstream connection.
const CONNECTION_HEADERS = new Set([
  'connection', 'content-length', 'host', 'keep-alive', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade',
]);

// Header lines are kept as the host takes and gives them: one flat [name, value, ...] list, names
// lowercased.
function withoutConnectionHeaders(list) {
  let drop = null;
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i];
    if (name === 'connection') {
      // Connection also names more headers that apply to that one connection.
      drop ??= new Set(CONNECTION_HEADERS);
      for (const token of list[i + 1].split(',')) drop.add(token.trim().toLowerCase());
    } else if (drop === null && CONNECTION_HEADERS.has(name)) {
      drop = CONNECTION_HEADERS;
    }
  }
  return drop === null ? list : withoutHeaders(list, (name) => drop.has(name));
}

// A serialized URL's fragment starts at its first '#' (the serializer percent-encodes any other).
export function stripFragment(url) {
  const i = url.indexOf('#');
  return i === -1 ? url : url.slice(0, i);
}

function schemeOf(url) {
  return url.slice(0, url.indexOf(':') + 1);
}

function isHttpScheme(url) {
  return url.startsWith('http:') || url.startsWith('https:');
}

// Node and undici reject network errors this way: the message says little, the cause says why.
function networkError(message) {
  return new TypeError('fetch failed', { cause: new Error(message) });
}

// The error a failed exchange rejects with (or errors the body stream with), by the host's kind.
function hostError(message, kind, url) {
  const text = `${message}`;
  switch (kind) {
    case 'policy':
      // The message is the host's reason; a message that already names the fetch is kept whole.
      return new TypeError(text.startsWith('fetch to ') ? text : `fetch to ${url} refused: ${text}`,
        { cause: new Error(text) });
    case 'aborted':
      // The host cancelled an exchange this code did not abort (e.g. the request is ending).
      return new DOMException(text || 'The operation was aborted.', 'AbortError');
    default: // "network", "timeout", "too-large", and anything newer
      return networkError(text);
  }
}

// new Request(input, init) as fetch() does it, then what is sent. Throws what the constructor
// throws (the caller turns that into a rejection).
export function prepareRequest(input, init) {
  const r = requestForFetch(new Request(input, init));
  return {
    method: r.method,
    url: r.url,
    headers: headersToList(r.headers),
    body: r.body,       // BodyState or null, not yet read
    signal: r.signal,   // AbortSignal or null
    redirect: r.redirect,
  };
}

// The request body as bytes for the host: null, a Uint8Array, or a promise of one (a stream is
// read to its end first). A failure to read the stream rejects with a network error.
export function requestBodyBytes(body) {
  if (body === null) return null;
  const bytes = bodyForServer(body, false);
  if (isUint8Array(bytes)) return bytes;
  return PromisePrototypeThen(bytes, undefined, (error) => {
    throw new TypeErrorCtor('fetch failed: the request body stream errored', { cause: error });
  });
}

// Calls fn(bytes) once the body bytes are there (at once when they already are), or fail(error).
export function withBodyBytes(body, fn, fail) {
  let bytes;
  try {
    bytes = requestBodyBytes(body);
  } catch (error) {
    fail(error);
    return;
  }
  if (bytes === null || isUint8Array(bytes)) fn(bytes);
  else PromisePrototypeThen(bytes, fn, fail);
}

function hasHeader(list, name) {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return true;
  return false;
}

function headerValue(list, name) {
  // Lines from the host (a flat list) may repeat a name; Headers#get would join them: do the same.
  let value = null;
  for (let i = 0; i + 1 < list.length; i += 2) {
    if (`${list[i]}`.toLowerCase() === name) value = value === null ? `${list[i + 1]}` : `${value}, ${list[i + 1]}`;
  }
  return value;
}

function withoutHeaders(list, drop) {
  const kept = [];
  for (let i = 0; i + 1 < list.length; i += 2) {
    if (!drop(list[i])) ArrayPrototypePush(kept, list[i], list[i + 1]);
  }
  return kept;
}

function originOf(url) {
  return new URL(url).origin;
}

// One fetch() call, from the first hop to the end of the response body.
class FetchOperation {
  constructor(request, bodyBytes, resolve, reject) {
    this.method = request.method;
    this.url = stripFragment(request.url);
    this.headers = request.headers;
    this.body = bodyBytes;
    this.redirectMode = request.redirect;
    this.signal = request.signal;
    this.resolve = resolve;
    this.reject = reject;
    this.redirects = 0;
    this.exchange = null;   // the current hop: { id, live }
    this.settled = false;   // the fetch() promise is settled
    this.done = false;      // nothing more will happen: body ended, errored or cancelled
    this.controller = null; // the body stream's controller, once there is a response
    this.asked = 0;         // pieces of the body asked for that have not arrived
    this.reading = false;   // the app has read the body (its stream pulled)
    this.onAbort = null;
  }

  start() {
    if (this.signal !== null) {
      this.onAbort = () => this.abort(this.signal.reason);
      addAbortAlgorithm(this.signal, this.onAbort);
    }
    this.hop();
  }

  hop() {
    const exchange = { id: 0, live: true, draining: false };
    this.exchange = exchange;
    const op = this;
    const callbacks = {
      onHead(status, statusText, headers) { if (exchange.live) op.onHead(exchange, status, statusText, headers); },
      onChunk(bytes) { if (exchange.live) op.onChunk(exchange, bytes); },
      onEnd() { if (exchange.live) op.onEnd(exchange); },
      onError(message, kind) { if (exchange.live) op.onError(exchange, message, kind); },
    };
    try {
      exchange.id = host.fetchStart({
        method: this.method, url: this.url, headers: this.headers, body: this.body, timeoutMs: 0,
      }, callbacks);
    } catch (error) {
      exchange.live = false;
      this.fail(new TypeError('fetch failed', { cause: error }));
    }
  }

  // Stops listening to the current hop and, unless it already ended, closes its connection.
  abandon(exchange, cancel) {
    exchange.live = false;
    if (cancel) host.fetchAbort(exchange.id);
  }

  finish() {
    this.done = true;
    if (this.onAbort !== null) {
      removeAbortAlgorithm(this.signal, this.onAbort);
      this.onAbort = null;
    }
  }

  fail(error) {
    this.finish();
    this.settled = true;
    this.reject(error);
  }

  abort(reason) {
    if (this.done) return;
    const exchange = this.exchange;
    if (exchange !== null && exchange.live) this.abandon(exchange, true);
    if (!this.settled) {
      this.fail(reason);
      return;
    }
    // After the response: its body stream errors with the reason.
    this.finish();
    this.controller.error(reason);
  }

  // Asks for more of the body while fewer than PIECES_AHEAD pieces are on their way and those,
  // with what the stream holds unread, are under a window.
  askAhead(exchange) {
    if (this.done || this.controller === null || !this.reading) return;
    let queued = 0;
    try {
      // The stream's high-water mark is 0: its desired size is minus what it holds unread.
      queued = -(this.controller.desiredSize ?? 0);
    } catch {
      // The app replaced the controller's getter: ask as if nothing were queued (the host bounds
      // what it reads ahead either way).
    }
    if (!(queued > 0)) queued = 0;
    while (this.asked < PIECES_AHEAD && queued + this.asked * PIECE_BYTES < WINDOW_BYTES) {
      this.asked += 1;
      try {
        host.fetchPull(exchange.id);
      } catch (error) {
        this.onError(exchange, error && error.message, 'network');
        return;
      }
    }
  }

  onHead(exchange, status, statusText, headers) {
    if (this.settled) return; // a second head: ignore
    if (isRedirectStatus(status) && this.redirectMode !== 'manual') {
      const location = headerValue(headers, 'location');
      if (location !== null) {
        this.redirect(exchange, status, location);
        return;
      }
    }
    this.settled = true;
    const redirected = this.redirects > 0;
    // HEAD and null-body statuses have no body: read the exchange to its end, to let the host
    // reuse the connection, and show none.
    if (this.method === 'HEAD' || isNullBodyStatus(status)) {
      this.finish();
      this.drain(exchange);
      this.resolve(createFetchedResponse(status, `${statusText}`, headers, null, this.url, redirected));
      return;
    }
    const op = this;
    const stream = new ReadableStream({
      type: 'bytes',
      start(controller) { op.controller = controller; },
      // Called when a read waits and nothing is queued (high-water mark 0).
      pull() {
        op.reading = true;
        op.askAhead(exchange);
      },
      cancel() {
        if (op.done) return;
        op.abandon(exchange, true);
        op.finish();
      },
    });
    this.resolve(createFetchedResponse(status, `${statusText}`, headers,
      new BodyState(null, stream, null), this.url, redirected));
  }

  // "HTTP-redirect fetch" for redirect modes "follow" and "error".
  redirect(exchange, status, location) {
    this.abandon(exchange, true);
    if (this.redirectMode === 'error') {
      this.fail(networkError(`unexpected redirect to ${location}`));
      return;
    }
    let next;
    try {
      next = new URL(location, this.url).href;
    } catch {
      this.fail(networkError(`invalid redirect location: ${location}`));
      return;
    }
    if (!isHttpScheme(next)) {
      this.fail(networkError(`redirect to a URL with an unsupported scheme: ${next}`));
      return;
    }
    if (++this.redirects > MAX_REDIRECTS) {
      this.fail(networkError(`redirect count exceeded (more than ${MAX_REDIRECTS} redirects)`));
      return;
    }
    const method = this.method;
    if (((status === 301 || status === 302) && method === 'POST') ||
        (status === 303 && method !== 'GET' && method !== 'HEAD')) {
      this.method = 'GET';
      this.body = null;
      this.headers = withoutHeaders(this.headers, (name) => name.startsWith('content-'));
    }
    if (originOf(next) !== originOf(this.url)) {
      // Credentials set for one origin are not sent to another (Fetch drops Authorization;
      // undici also drops these two, for the same reason).
      this.headers = withoutHeaders(this.headers,
        (name) => name === 'authorization' || name === 'proxy-authorization' || name === 'cookie');
    }
    this.url = stripFragment(next);
    this.hop();
  }

  // Reads a body nobody will see to its end (so that the host may reuse the connection).
  drain(exchange) {
    exchange.draining = true;
    this.pullDrain(exchange);
  }

  pullDrain(exchange) {
    try {
      host.fetchPull(exchange.id);
    } catch {
      this.abandon(exchange, true);
    }
  }

  onChunk(exchange, bytes) {
    if (exchange.draining) {
      this.pullDrain(exchange);
      return;
    }
    if (this.done || this.controller === null) return;
    if (this.asked > 0) this.asked -= 1;
    if (bytes.byteLength > 0) this.controller.enqueue(bytes);
    this.askAhead(exchange); // also after an empty chunk, which the stream would not pull after
  }

  onEnd(exchange) {
    exchange.live = false;
    if (exchange.draining || this.done) return;
    if (!this.settled) {
      this.fail(networkError('the exchange ended before its response head'));
      return;
    }
    this.finish();
    this.controller.close();
    // A BYOB read waiting for bytes is answered with "done".
    this.controller.byobRequest?.respond(0);
  }

  onError(exchange, message, kind) {
    exchange.live = false;
    if (exchange.draining) return;
    const error = hostError(message, kind, this.url);
    if (!this.settled) {
      this.fail(error);
      return;
    }
    if (this.done) return;
    this.finish();
    this.controller.error(error);
  }
}

function fetch(input, init = undefined) {
  let request;
  try {
    requireArgs(arguments.length, 1, "Failed to execute 'fetch'");
    request = prepareRequest(input, init);
  } catch (error) {
    return Promise.reject(error);
  }
  const signal = request.signal;
  if (signal !== null && signal.aborted) return Promise.reject(signal.reason);
  const url = request.url;
  if (!isHttpScheme(url)) {
    return Promise.reject(new TypeError(
      `fetch: URL scheme "${schemeOf(url).slice(0, -1)}" is not supported (only http: and https:): ${url}`));
  }
  request.headers = withoutConnectionHeaders(request.headers);
  // Fetch: "If request's header list does not contain `Accept`, append `Accept`/`*/*`".
  if (!hasHeader(request.headers, 'accept')) ArrayPrototypePush(request.headers, 'accept', '*/*');
  return new Promise((resolve, reject) => {
    let aborted = false;
    let onAbort = null;
    if (signal !== null) {
      onAbort = () => { aborted = true; reject(signal.reason); };
      addAbortAlgorithm(signal, onAbort);
    }
    withBodyBytes(request.body, (bytes) => {
      if (onAbort !== null) removeAbortAlgorithm(signal, onAbort);
      if (aborted) return;
      new FetchOperation(request, bytes, resolve, reject).start();
    }, (error) => {
      if (onAbort !== null) removeAbortAlgorithm(signal, onAbort);
      reject(error);
    });
  });
}

exposeFunction(fetch, 'fetch');

export { fetch };

// host.dispatch: the entry point C++ calls for every HTTP request (see ../README.md). It resolves
// with [status, statusText, headers, body, waitUntil], the last being null or a promise.
// Hand-written glue between the server and the app's fetch handler.
import { abortIncomingRequest, createIncomingRequest } from './request.js';
import { DOMException } from './domexception.js';
import { isResponse, responseForServer } from './response.js';
import { reportException } from './console.js';

let waitUntilSettled;

// The `ctx` argument of fetch(request, env, ctx). Methods on a prototype, so that making one per
// request is a single small allocation.
class ExecutionContext {
  #pending = 0;     // waitUntil promises not yet settled
  #idle = null;     // { promise, resolve } once someone waits for #pending to reach 0

  waitUntil(promise) {
    if (!(#pending in this)) throw new TypeError('Illegal invocation');
    this.#pending++;
    Promise.resolve(promise)
      .then(undefined, (error) => reportException(error, 'Uncaught (in waitUntil)'))
      .then(() => {
        if (--this.#pending === 0 && this.#idle !== null) this.#idle.resolve(undefined);
      });
  }

  passThroughOnException() {
    // There is no origin to pass through to: nothing to do.
  }

  static {
    // null when no waitUntil work is pending; else a promise (never rejecting) that settles once
    // every waitUntil promise, including ones added from now on, has settled.
    waitUntilSettled = (ctx) => {
      if (ctx.#pending === 0) return null;
      if (ctx.#idle === null) {
        let resolve;
        const promise = new Promise((r) => { resolve = r; });
        ctx.#idle = { promise, resolve };
      }
      return ctx.#idle.promise;
    };
  }
}

function describe(value) {
  if (value === undefined || value === null) return `${value}`;
  switch (typeof value) {
    case 'string': return 'a string';
    case 'number': return `a number (${value})`;
    case 'boolean': return `a boolean (${value})`;
    case 'bigint': return 'a bigint';
    case 'symbol': return 'a symbol';
    case 'function': return 'a function';
    default: {
      if (Array.isArray(value)) return 'an array';
      const proto = Object.getPrototypeOf(value);
      const name = proto === null ? null : proto.constructor?.name;
      if (proto === null || proto === Object.prototype || !name) return 'a plain object';
      return `an instance of ${name}`;
    }
  }
}

function finish(response, ctx) {
  if (!isResponse(response)) {
    throw new TypeError(`fetch handler returned ${describe(response)}; expected a Response`);
  }
  const result = responseForServer(response);
  const body = result[3];
  if (body instanceof Promise) {
    return body.then((bytes) => {
      result[3] = bytes;
      result.push(waitUntilSettled(ctx));
      return result;
    });
  }
  result.push(waitUntilSettled(ctx));
  return result;
}

function clientDisconnected() {
  return new DOMException('The client disconnected', 'AbortError');
}

export function dispatch(handler, init, env) {
  // C++ calls init.abort() (at most once, possibly after the response was sent) when the client
  // went away: the request's signal aborts.
  let request = null;
  init.abort = () => {
    if (request !== null) abortIncomingRequest(request, clientDisconnected());
  };
  let fetch;
  if (handler === null || (typeof handler !== 'object' && typeof handler !== 'function') ||
      typeof (fetch = handler.fetch) !== 'function') {
    return Promise.reject(new TypeError(
      `The module's default export must have a fetch(request, env, ctx) method (got ${describe(handler)}${
        handler !== null && typeof handler === 'object' ? ` whose fetch is ${describe(handler.fetch)}` : ''}).`));
  }
  let result;
  const ctx = new ExecutionContext();
  try {
    request = createIncomingRequest(init);
    result = fetch.call(handler, request, env, ctx);
    // A handler that returns a Response directly (not a promise) skips a promise hop.
    if (isResponse(result)) return Promise.resolve(finish(result, ctx));
  } catch (error) {
    return Promise.reject(error);
  }
  return Promise.resolve(result).then((response) => finish(response, ctx));
}

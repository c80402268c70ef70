// host.dispatch: the entry point C++ calls for every HTTP request (see ../README.md).
// Hand-written glue between the server and the app's fetch handler.
import { createIncomingRequest } from './request.js';
import { isResponse, responseForServer } from './response.js';
import { reportException } from './console.js';

// The `ctx` argument of fetch(request, env, ctx). Methods on a prototype, so that making one per
// request is a single small allocation.
class ExecutionContext {
  waitUntil(promise) {
    Promise.resolve(promise).then(undefined, (error) => reportException(error, 'Uncaught (in waitUntil)'));
  }

  passThroughOnException() {
    // There is no origin to pass through to: nothing to do.
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

function finish(response) {
  if (!isResponse(response)) {
    throw new TypeError(`fetch handler returned ${describe(response)}; expected a Response`);
  }
  const result = responseForServer(response);
  const body = result[3];
  if (body instanceof Promise) {
    return body.then((bytes) => {
      result[3] = bytes;
      return result;
    });
  }
  return result;
}

export function dispatch(handler, init, env) {
  let fetch;
  if (handler === null || (typeof handler !== 'object' && typeof handler !== 'function') ||
      typeof (fetch = handler.fetch) !== 'function') {
    return Promise.reject(new TypeError(
      `The module's default export must have a fetch(request, env, ctx) method (got ${describe(handler)}${
        handler !== null && typeof handler === 'object' ? ` whose fetch is ${describe(handler.fetch)}` : ''}).`));
  }
  let result;
  try {
    const request = createIncomingRequest(init);
    result = fetch.call(handler, request, env, new ExecutionContext());
    // A handler that returns a Response directly (not a promise) skips a promise hop.
    if (isResponse(result)) return Promise.resolve(finish(result));
  } catch (error) {
    return Promise.reject(error);
  }
  return Promise.resolve(result).then(finish);
}

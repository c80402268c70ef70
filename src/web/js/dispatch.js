// host.dispatch: the entry point C++ calls for every HTTP request (see ../README.md).
// Hand-written glue between the server and the app's fetch handler.
//
// The answer goes back by calling `respond` or `fail`, natives C++ passes in: never by resolving
// a promise with the response's parts, which an app that replaced Promise.prototype.then could
// rewrite on the way. Everything on this path uses the runtime's own builtins (primordials.js).
import { abortIncomingRequest, createIncomingRequest } from './request.js';
import { DOMException } from './domexception.js';
import { isResponse, responseForServer } from './response.js';
import { reportException } from './console.js';
import { sendStream } from './response_stream.js';
import { ReadableStream } from './streams.js';
import { IncomingBody } from './body.js';
import {
  ArrayIsArray, ObjectGetOwnPropertyDescriptor, ObjectGetPrototypeOf, ObjectPrototype, PromisePrototypeThen, PromiseResolve,
  ReflectApply, SafePromise, TypeErrorCtor,
} from './primordials.js';

let waitUntilSettled;

// The `ctx` argument of fetch(request, env, ctx). Methods on a prototype, so that making one per
// request is a single small allocation.
class ExecutionContext {
  #pending = 0;     // waitUntil promises not yet settled
  #idle = null;     // { promise, resolve } once someone waits for #pending to reach 0

  waitUntil(promise) {
    if (!(#pending in this)) throw new TypeError('Illegal invocation');
    this.#pending++;
    const settled = () => {
      if (--this.#pending === 0 && this.#idle !== null) this.#idle.resolve(undefined);
    };
    try {
      PromisePrototypeThen(PromiseResolve(promise), settled, (error) => {
        reportException(error, 'Uncaught (in waitUntil)');
        settled();
      });
    } catch (error) {
      // Promise.resolve ran the app's `then` getter or species constructor and it threw.
      reportException(error, 'Uncaught (in waitUntil)');
      settled();
    }
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
        const promise = new SafePromise((r) => { resolve = r; });
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
      // Only the engine's own checks: a Proxy's traps or a prototype's getters may throw, and
      // this message must not depend on the app.
      try {
        if (ArrayIsArray(value)) return 'an array';
        const proto = ObjectGetPrototypeOf(value);
        if (proto === null || proto === ObjectPrototype) return 'a plain object';
        const ctor = ObjectGetOwnPropertyDescriptor(proto, 'constructor');
        const name = ctor !== undefined && typeof ctor.value === 'function'
          ? ObjectGetOwnPropertyDescriptor(ctor.value, 'name') : undefined;
        if (name !== undefined && typeof name.value === 'string' && name.value !== '') {
          return `an instance of ${name.value}`;
        }
        return 'an object that is not a Response';
      } catch {
        return 'an object that is not a Response (a Proxy?)';
      }
    }
  }
}

// Sends the Response to C++: its head now, and its body now, as its stream produces it
// (`streaming`), or once its stream has been read to the end.
function finish(id, response, ctx, natives, streaming, abort) {
  if (!isResponse(response)) {
    natives.fail(id, new TypeErrorCtor(`fetch handler returned ${describe(response)}; expected a Response`));
    return;
  }
  const head = responseForServer(response, streaming);
  if (head.stream !== null) {
    sendStream(id, head, natives, () => waitUntilSettled(ctx), abort);
    return;
  }
  if (head.pending === null) {
    natives.respond(id, head.status, head.statusText, head.headers, head.bytes, waitUntilSettled(ctx));
    return;
  }
  PromisePrototypeThen(head.pending, (bytes) => {
    natives.respond(id, head.status, head.statusText, head.headers, bytes, waitUntilSettled(ctx));
  }, (error) => {
    natives.fail(id, error);
  });
}

// request.body when the body arrives as the client sends it (`body === true`): a byte stream
// whose pull asks the host for the next piece (exactly one callback each time).
function incomingBodyStream(id, natives) {
  const bodyPull = natives.bodyPull;
  return new ReadableStream({
    type: 'bytes',
    pull(controller) {
      return new SafePromise((resolve) => {
        bodyPull(id, (kind, value) => {
          if (kind === 0) controller.enqueue(value);
          else if (kind === 1) controller.close();
          else controller.error(new TypeErrorCtor(`The request body could not be read: ${value}`));
          resolve(undefined);
        });
      });
    },
  });
}

// The request's body when it arrives as the client sends it: a stream on demand, or gathered by
// the host when read whole (body.js IncomingBody).
function incomingBody(id, natives) {
  const bodyAll = natives.bodyAll;
  return new IncomingBody(() => incomingBodyStream(id, natives), (callback) => bodyAll(id, callback) === true);
}

function clientDisconnected() {
  return new DOMException('The client disconnected', 'AbortError');
}

// Runs the app's handler for one request. `headers` is a flat [name, value, ...] array of the
// request's header lines, `body` a Uint8Array, null, or true when the body arrives as the client
// sends it (it is then pulled with natives.bodyPull). `natives` holds the functions the outcome goes
// to (an object C++ made with no prototype). Returns the function C++ calls (at most once,
// possibly after the response was sent) when the client went away: it aborts request.signal.
// The outcome is exactly one of `natives.respond(id, status, statusText, headers, body, waitUntil)`
// (`waitUntil`: null, or a promise that settles once every ctx.waitUntil promise has),
// `natives.fail(id, error)`, or, when `streaming` and the body is a stream, the calls of
// sendStream (response_stream.js); possibly before dispatch returns.
export function dispatch(id, handler, method, url, headers, body, env, natives, streaming) {
  let request = null;
  // C++ calls it without arguments; a cancelled response stream passes its reason.
  const abort = (...reason) => {
    if (request !== null) abortIncomingRequest(request, reason.length > 0 ? reason[0] : clientDisconnected());
  };
  // C++ takes exactly one of respond, fail and streamHead per request (a second is ignored, a
  // streamHead after an answer returns false) and a fail after streamHead cuts the stream, so
  // nothing per request is made here to enforce it: the natives are used as they are.
  try {
    let fetch;
    if (handler === null || (typeof handler !== 'object' && typeof handler !== 'function') ||
        typeof (fetch = handler.fetch) !== 'function') {
      throw new TypeErrorCtor(
        `The module's default export must have a fetch(request, env, ctx) method (got ${describe(handler)}).`);
    }
    const ctx = new ExecutionContext();
    request = createIncomingRequest(method, url, headers,
      body === true ? incomingBody(id, natives) : body);
    const result = ReflectApply(fetch, handler, [request, env, ctx]);
    // A handler that returns a Response directly (not a promise) skips a promise hop.
    if (isResponse(result)) {
      finish(id, result, ctx, natives, streaming, abort);
    } else {
      // Promise.resolve may run the app's `then`: that is how its thenable answers. What it
      // resolves to is checked by finish() like any other value.
      PromisePrototypeThen(PromiseResolve(result), (response) => {
        try {
          finish(id, response, ctx, natives, streaming, abort);
        } catch (error) {
          natives.fail(id, error);
        }
      }, (error) => {
        natives.fail(id, error);
      });
    }
  } catch (error) {
    natives.fail(id, error);
  }
  return abort;
}

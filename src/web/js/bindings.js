// The app's `env` (host.createEnv, which C++ calls once per app at load) and its service bindings:
// `env.NAME.fetch(input, init)` sends a request to another app of the same server through
// host.serviceFetch, without a network hop. Hand-written glue (see ../README.md, "Host operations").
//
// A binding's fetch() takes the same arguments as the global fetch() and returns a
// Promise<Response>, but it is one exchange with the other app: redirects it answers with are
// returned as they are, not followed, and the URL may have any scheme (the target app sees it as
// it is).
import { host } from './host.js';
import { BodyState } from './body.js';
import { addAbortAlgorithm, removeAbortAlgorithm } from './abort.js';
import { prepareRequest, stripFragment, withBodyBytes } from './fetch.js';
import { registerInspector, shownAs } from './inspect.js';
import { createFetchedResponse, isNullBodyStatus } from './response.js';
import { exposeInterface } from './util.js';

const INTERNAL = Symbol('internal');
let isFetcher;

// Workers calls the type of a service binding `Fetcher`; so does this runtime (not a global).
class Fetcher {
  #name;
  #app;

  constructor(token = undefined, name = '', app = '') {
    if (token !== INTERNAL) throw new TypeError('Illegal constructor');
    this.#name = name;
    this.#app = app;
  }

  fetch(input, init = undefined) {
    if (!isFetcher(this)) return Promise.reject(new TypeError('Illegal invocation'));
    let request;
    try {
      if (arguments.length < 1) {
        throw new TypeError(`Failed to execute 'fetch' on 'Fetcher': 1 argument required, but only 0 present.`);
      }
      request = prepareRequest(input, init);
    } catch (error) {
      return Promise.reject(error);
    }
    const signal = request.signal;
    if (signal !== null && signal.aborted) return Promise.reject(signal.reason);
    const name = this.#name;
    const app = this.#app;
    return new Promise((resolve, reject) => {
      let done = false;
      let onAbort = null;
      const settle = () => {
        done = true;
        if (onAbort !== null) removeAbortAlgorithm(signal, onAbort);
      };
      if (signal !== null) {
        // The other app's work is not cancelled (the host has no way to), but the caller stops
        // waiting for it.
        onAbort = () => {
          if (done) return;
          settle();
          reject(signal.reason);
        };
        addAbortAlgorithm(signal, onAbort);
      }
      const fail = (error) => {
        if (done) return;
        settle();
        reject(error);
      };
      withBodyBytes(request.body, (bytes) => {
        if (done) return;
        const url = stripFragment(request.url);
        const method = request.method;
        try {
          host.serviceFetch(app, { method, url, headers: request.headers, body: bytes, timeoutMs: 0 }, {
            onResponse(status, statusText, headers, body) {
              if (done) return;
              settle();
              const hasBody = method !== 'HEAD' && !isNullBodyStatus(status);
              resolve(createFetchedResponse(status, `${statusText}`, headers,
                hasBody ? new BodyState(body, null, null) : null, url, false));
            },
            onError(message) {
              fail(new TypeError(`The service binding ${name} failed: ${message}`, { cause: new Error(`${message}`) }));
            },
          });
        } catch (error) {
          fail(new TypeError(`The service binding ${name} failed`, { cause: error }));
        }
      }, fail);
    });
  }

  static {
    isFetcher = (value) => typeof value === 'object' && value !== null && #app in value;
  }
}

exposeInterface(Fetcher, 'Fetcher', { global: false });

// console.log(env) shows `SERVICE: Fetcher {}`: the binding's state is not the app's business.
registerInspector(Fetcher.prototype, (value) => {
  if (!isFetcher(value)) return undefined;
  return shownAs(Fetcher.prototype, {});
});

function defineData(object, key, value) {
  // defineProperty, not assignment: a var named `__proto__` must become a property.
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

// host.createEnv(vars, services): `vars` is an object of name -> string (an array of [name,
// value] pairs is accepted too), `services` an array of [name, app] pairs (or null/undefined).
export function createEnv(vars, services) {
  const env = {};
  if (vars !== undefined && vars !== null) {
    const entries = Array.isArray(vars) ? vars : Object.entries(vars);
    for (const [name, value] of entries) defineData(env, `${name}`, value);
  }
  if (services !== undefined && services !== null) {
    for (const [name, app] of services) defineData(env, `${name}`, new Fetcher(INTERNAL, `${name}`, `${app}`));
  }
  return env;
}

export { Fetcher };

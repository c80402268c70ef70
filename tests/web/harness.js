// Test harness for tests/web/*.test.js. A classic script, evaluated in each test file's fresh
// context after the runtime bundle and before the test file. The runner (tests/web_js_test.cc, or
// tools/dev/web-node-runner.mjs) reads globalThis.__tests and calls __runTest(i) for each.
//
//   test(name, fn)                        fn may be async; names use [A-Za-z0-9_ ] only
//   assert(cond, msg)
//   assert.equal(actual, expected, msg)   SameValue (Object.is)
//   assert.notEqual(actual, expected, msg)
//   assert.deepEqual(actual, expected, msg)
//   assert.throws(fn, expected, regex)    expected: an Error constructor, or a name string such
//                                         as 'TypeError' or 'InvalidCharacterError'
//   await assert.rejects(promiseOrFn, expected, regex)
//
// Runners also provide: globalThis.__capturedLogs (every host.log call as [level, text]) and
// globalThis.__dispatchRaw (the runtime's host.dispatch). This harness wraps the latter as
//
//   __dispatch(handler, { method, url, headers: [[name, value]...], body, streaming, credit }, env)
//     -> Promise<[status, statusText, headers: [[name, value]...], body, waitUntil]>
//
// which rejects with what the runtime passed to fail(), and sets init.abort to the function
// dispatch returned (what C++ calls when the client goes away). respond(), fail() and
// streamHead() check that one of them is called once, with the request's id, as the C++ side
// does. With `streaming: true` a stream body is sent as produced: the promise resolves at the
// head with [status, statusText, headers, null, null, stream], `stream` a recorder of what the host would receive:
//   { chunks: [Uint8Array...], bytes, ended, waitUntil, error, credit, control, grant(n),
//     cancel(message, name), changed() -> Promise (resolves at the next event) }
// It starts with `credit` bytes of credit (default 256 KiB) and grants more only when told.
(function () {
  'use strict';

  let nextDispatchId = 1;
  globalThis.__dispatch = (handler, init, env) => new Promise((resolve, reject) => {
    const id = nextDispatchId++;
    let settled = false;
    let stream = null;
    const once = (fn) => (gotId, ...rest) => {
      if (gotId !== id) throw new Error(`host native called with id ${gotId}, expected ${id}`);
      if (settled) {
        if (stream !== null && fn === reject && !stream.ended && stream.error === null) {
          stream.error = rest[0];
          stream.notify();
          return;
        }
        throw new Error('respond/fail/streamHead called twice for one request');
      }
      settled = true;
      return fn(...rest);
    };
    const pairs = (flat) => {
      const headers = [];
      for (let i = 0; i < flat.length; i += 2) headers.push([flat[i], flat[i + 1]]);
      return headers;
    };
    const respond = once((status, statusText, flat, body, waitUntil) => {
      resolve([status, statusText, pairs(flat), body, waitUntil]);
    });
    const streamHead = once((status, statusText, flat, control) => {
      let wake = [];
      stream = {
        chunks: [], bytes: 0, ended: false, waitUntil: null, error: null,
        credit: init.credit ?? 256 * 1024, control,
        notify() { const w = wake; wake = []; for (const f of w) f(); },
        changed() { return new Promise((r) => wake.push(r)); },
        grant(n) { const was = this.credit; this.credit += n; if (was <= 0 && this.credit > 0) control(0); },
        cancel(message, name) { this.ended = true; control(1, message, name); },
      };
      resolve([status, statusText, pairs(flat), null, null, stream]);
      return stream.credit;
    });
    const streamChunk = (gotId, bytes) => {
      if (gotId !== id || stream === null) throw new Error('streamChunk without a stream head');
      if (stream.ended) return false;
      if (!(bytes instanceof Uint8Array) || bytes.byteLength > 64 * 1024) throw new Error('bad piece');
      if (stream.credit <= 0) throw new Error('streamChunk without credit');
      stream.chunks.push(bytes.slice());
      stream.bytes += bytes.byteLength;
      stream.credit -= bytes.byteLength;
      stream.notify();
      return stream.credit;
    };
    const streamEnd = (gotId, waitUntil) => {
      if (gotId !== id || stream === null || stream.ended) throw new Error('streamEnd out of turn');
      stream.ended = true;
      stream.waitUntil = waitUntil;
      stream.notify();
    };
    const flat = [];
    for (const [name, value] of init.headers ?? []) flat.push(name, value);
    const natives = { __proto__: null, respond, fail: once(reject), streamHead, streamChunk, streamEnd };
    init.abort = globalThis.__dispatchRaw(id, handler, init.method, init.url, flat, init.body ?? null,
      env, natives, init.streaming === true);
  });

  const tests = [];
  globalThis.__tests = tests;

  class AssertionError extends Error {}
  Object.defineProperty(AssertionError.prototype, 'name', { value: 'AssertionError' });

  function show(value) {
    try {
      if (typeof value === 'string') return JSON.stringify(value);
      if (typeof value === 'bigint') return `${value}n`;
      if (Object.is(value, -0)) return '-0';
      if (typeof value === 'object' && value !== null) {
        if (ArrayBuffer.isView(value)) return `${value.constructor.name}[${Array.from(value).join(', ')}]`;
        if (value instanceof Error) return `${value.name}: ${value.message}`;
        return JSON.stringify(value, (k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value);
      }
      return String(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }

  function fail(message, detail) {
    throw new AssertionError(message ? `${message}: ${detail}` : detail);
  }

  function test(name, fn) {
    if (typeof name !== 'string' || !/^[A-Za-z0-9_ ]+$/.test(name)) {
      throw new Error(`test name must be made of [A-Za-z0-9_ ]: ${JSON.stringify(name)}`);
    }
    if (tests.some((t) => t.name === name)) throw new Error(`duplicate test name: ${name}`);
    if (typeof fn !== 'function') throw new Error(`test ${name}: fn must be a function`);
    tests.push({ name, fn });
  }

  function assert(cond, msg) {
    if (!cond) fail(msg, `expected a truthy value, got ${show(cond)}`);
  }

  assert.equal = function equal(actual, expected, msg) {
    if (!Object.is(actual, expected)) fail(msg, `expected ${show(expected)}, got ${show(actual)}`);
  };

  assert.notEqual = function notEqual(actual, expected, msg) {
    if (Object.is(actual, expected)) fail(msg, `expected a value other than ${show(expected)}`);
  };

  function deepEqual(a, b, seen) {
    if (Object.is(a, b)) return true;
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
    if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    for (const [x, y] of seen) if (x === a && y === b) return true;
    seen.push([a, b]);
    if (a instanceof Date) return Object.is(a.getTime(), b.getTime());
    if (a instanceof RegExp) return String(a) === String(b);
    if (a instanceof ArrayBuffer) return deepEqual(new Uint8Array(a), new Uint8Array(b), seen);
    if (ArrayBuffer.isView(a)) {
      if (a.byteLength !== b.byteLength) return false;
      const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
      return true;
    }
    if (a instanceof Map) {
      if (a.size !== b.size) return false;
      const ea = [...a]; const eb = [...b];
      return ea.every((e, i) => deepEqual(e[0], eb[i][0], seen) && deepEqual(e[1], eb[i][1], seen));
    }
    if (a instanceof Set) {
      if (a.size !== b.size) return false;
      const ea = [...a]; const eb = [...b];
      return ea.every((e, i) => deepEqual(e, eb[i], seen));
    }
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    if (Array.isArray(a) && a.length !== b.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k], seen));
  }

  assert.deepEqual = function (actual, expected, msg) {
    if (!deepEqual(actual, expected, [])) fail(msg, `expected ${show(expected)}, got ${show(actual)}`);
  };

  function describeExpected(expected) {
    return typeof expected === 'string' ? expected : expected && expected.name ? expected.name : String(expected);
  }

  function checkError(error, expected, regex, what) {
    if (expected !== undefined && expected !== null) {
      const ok = typeof expected === 'string'
        ? error !== null && typeof error === 'object' && error.name === expected
        : error instanceof expected;
      if (!ok) {
        fail(what, `expected ${describeExpected(expected)} to be thrown, got ${show(error)}` +
          (error && error.stack ? `\n${error.stack}` : ''));
      }
    }
    if (regex !== undefined && !regex.test(error && error.message !== undefined ? String(error.message) : String(error))) {
      fail(what, `error message ${show(error && error.message)} does not match ${regex}`);
    }
  }

  assert.throws = function throws(fn, expected, regex) {
    let threw = false;
    let error;
    try {
      fn();
    } catch (e) {
      threw = true;
      error = e;
    }
    if (!threw) fail('assert.throws', `expected ${describeExpected(expected)} to be thrown, but nothing was thrown`);
    checkError(error, expected, regex, 'assert.throws');
    return error;
  };

  assert.rejects = async function rejects(promiseOrFn, expected, regex) {
    let promise;
    if (typeof promiseOrFn === 'function') {
      try {
        promise = promiseOrFn();
      } catch (e) {
        fail('assert.rejects', `the function threw synchronously instead of rejecting: ${show(e)}`);
      }
    } else {
      promise = promiseOrFn;
    }
    if (promise === null || typeof promise !== 'object' || typeof promise.then !== 'function') {
      fail('assert.rejects', `expected a promise, got ${show(promise)}`);
    }
    let rejected = false;
    let error;
    try {
      await promise;
    } catch (e) {
      rejected = true;
      error = e;
    }
    if (!rejected) fail('assert.rejects', `expected ${describeExpected(expected)} rejection, but the promise fulfilled`);
    checkError(error, expected, regex, 'assert.rejects');
    return error;
  };

  // Runs test i. The promise rejects with an Error whose message says what failed.
  globalThis.__runTest = function __runTest(i) {
    const t = tests[i];
    if (t === undefined) return Promise.reject(new Error(`no test #${i}`));
    return new Promise((resolve) => resolve(t.fn())).then(
      () => undefined,
      (e) => {
        if (e instanceof AssertionError) throw new Error(`${t.name}: ${e.message}`);
        let text;
        try {
          text = e instanceof Error || (e && typeof e.stack === 'string')
            ? `${e.name}: ${e.message}\n${e.stack}` : show(e);
        } catch {
          text = Object.prototype.toString.call(e);
        }
        throw new Error(`${t.name}: unexpected exception: ${text}`);
      },
    );
  };

  // Test helper: the log lines captured since `start` (an index into __capturedLogs).
  globalThis.logsSince = function logsSince(start) {
    return globalThis.__capturedLogs.slice(start);
  };

  // Test helper: a promise resolved after `ms` milliseconds.
  globalThis.sleep = function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  };

  // Test helper: writes `chunks` into a transform stream's writable side and resolves with every
  // chunk its readable side gave; rejects with the first error of either side.
  globalThis.transformAll = async function transformAll(chunks, transform) {
    const writer = transform.writable.getWriter();
    const reading = (async () => {
      const out = [];
      const reader = transform.readable.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return out;
        out.push(value);
      }
    })();
    reading.catch(() => {}); // a failure may show on the writer's side first
    try {
      for (const c of chunks) await writer.write(c);
      await writer.close();
    } catch (e) {
      await reading.catch(() => {});
      throw e;
    }
    return reading;
  };

  globalThis.test = test;
  globalThis.assert = assert;
})();

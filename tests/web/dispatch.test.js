// host.dispatch(handler, init, env), the server's entry point, which the test runner exposes as
// globalThis.__dispatch.

const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);

function init(overrides = {}) {
  return {
    method: 'GET',
    url: 'http://localhost:8080/path?x=1',
    headers: [['Host', 'localhost:8080'], ['Accept', '*/*']],
    body: null,
    requestId: 'req-1',
    ...overrides,
  };
}

test('hello world', async () => {
  const result = await __dispatch({ fetch: () => new Response('hello') }, init(), {});
  assert(Array.isArray(result));
  assert.equal(result.length, 5);
  const [status, statusText, headers, body, waitUntil] = result;
  assert.equal(waitUntil, null);
  assert.equal(status, 200);
  assert.equal(statusText, '');
  assert.deepEqual(headers, [['content-type', 'text/plain;charset=UTF-8']]);
  assert(body instanceof Uint8Array);
  assert.equal(dec(body), 'hello');
});

test('async handler', async () => {
  const handler = { async fetch() { await null; return new Response('later', { status: 201, statusText: 'Made' }); } };
  const [status, statusText, , body] = await __dispatch(handler, init(), {});
  assert.equal(status, 201);
  assert.equal(statusText, 'Made');
  assert.equal(dec(body), 'later');
});

test('fetch is called with request env ctx and this', async () => {
  const env = { VAR: 'value' };
  let seen;
  const handler = {
    fetch(request, e, ctx) {
      seen = { self: this, request, env: e, ctx, args: arguments.length };
      return new Response(null);
    },
  };
  await __dispatch(handler, init(), env);
  assert.equal(seen.self, handler);
  assert.equal(seen.env, env);
  assert(seen.request instanceof Request);
  assert.equal(typeof seen.ctx.waitUntil, 'function');
  assert.equal(typeof seen.ctx.passThroughOnException, 'function');
  assert.equal(seen.ctx.passThroughOnException(), undefined);
  assert.equal(seen.args, 3);
});

test('request fields from init', async () => {
  let r;
  await __dispatch({ fetch(req) { r = req; return new Response(''); } }, init({
    method: 'GET',
    url: 'http://Example.COM:80/a/./b?q=1',
    headers: [['Host', 'example.com'], ['X-Multi', 'a'], ['x-multi', 'b'], ['Cookie', 'c=1']],
  }), {});
  assert.equal(r.method, 'GET');
  assert.equal(r.url, 'http://example.com/a/b?q=1');
  assert.equal(r.headers.get('x-multi'), 'a, b');
  assert.equal(r.headers.get('HOST'), 'example.com');
  assert.deepEqual([...r.headers.keys()], ['cookie', 'host', 'x-multi']);
  assert.equal(r.body, null);
  assert.equal(r.bodyUsed, false);
  assert.equal(r.signal.aborted, false);
  assert.equal(r.redirect, 'follow');
});

test('url passes through when already normalized', async () => {
  let url;
  await __dispatch({ fetch(req) { url = req.url; return new Response(''); } }, init({ url: 'http://localhost:8080/p/q?a=b&c' }), {});
  assert.equal(url, 'http://localhost:8080/p/q?a=b&c');
});

test('POST body is readable', async () => {
  let text;
  const handler = { async fetch(req) { text = await req.text(); return new Response('ok'); } };
  await __dispatch(handler, init({ method: 'POST', body: enc('payload é'), headers: [['Content-Type', 'text/plain']] }), {});
  assert.equal(text, 'payload é');
});

test('POST body as json and arrayBuffer', async () => {
  let data;
  let bytes;
  const handler = {
    async fetch(req) {
      const copy = req.clone();
      data = await req.json();
      bytes = new Uint8Array(await copy.arrayBuffer());
      return new Response('ok');
    },
  };
  await __dispatch(handler, init({ method: 'PUT', body: enc('{"a":1}') }), {});
  assert.deepEqual(data, { a: 1 });
  assert.deepEqual(bytes, enc('{"a":1}'));
});

test('GET and HEAD ignore a body', async () => {
  for (const method of ['GET', 'HEAD']) {
    let body;
    await __dispatch({ fetch(req) { body = req.body; return new Response(null); } }, init({ method, body: enc('x') }), {});
    assert.equal(body, null, method);
  }
});

test('method is normalized', async () => {
  let method;
  await __dispatch({ fetch(req) { method = req.method; return new Response(null); } }, init({ method: 'post', body: null }), {});
  assert.equal(method, 'POST');
});

test('request body stream', async () => {
  let chunks = 0;
  const handler = {
    async fetch(req) {
      for await (const c of req.body) chunks += c.length;
      return new Response(String(chunks));
    },
  };
  const [, , , body] = await __dispatch(handler, init({ method: 'POST', body: enc('abcdef') }), {});
  assert.equal(dec(body), '6');
});

test('response headers are sorted lowercased and cookies separate', async () => {
  const handler = {
    fetch() {
      const h = new Headers();
      h.append('X-Zed', '1');
      h.append('Set-Cookie', 'a=1');
      h.append('set-cookie', 'b=2');
      h.append('Content-Type', 'text/html');
      h.append('x-zed', '2');
      return new Response('<p>', { headers: h });
    },
  };
  const [, , headers] = await __dispatch(handler, init(), {});
  assert.deepEqual(headers, [
    ['content-type', 'text/html'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-zed', '1, 2'],
  ]);
});

test('response with no body', async () => {
  const [status, , headers, body] = await __dispatch({ fetch: () => new Response(null, { status: 204 }) }, init(), {});
  assert.equal(status, 204);
  assert.deepEqual(headers, []);
  assert(body instanceof Uint8Array);
  assert.equal(body.length, 0);
});

test('response bytes body', async () => {
  const [, , headers, body] = await __dispatch({ fetch: () => new Response(new Uint8Array([0, 255, 7])) }, init(), {});
  assert.deepEqual(headers, []);
  assert.deepEqual(body, new Uint8Array([0, 255, 7]));
});

test('response json body', async () => {
  const [, , headers, body] = await __dispatch({ fetch: () => Response.json({ ok: true }) }, init(), {});
  assert.deepEqual(headers, [['content-type', 'application/json']]);
  assert.equal(dec(body), '{"ok":true}');
});

test('response stream body is read whole', async () => {
  const handler = {
    fetch() {
      let n = 0;
      return new Response(new ReadableStream({
        async pull(controller) {
          await null;
          if (n === 3) controller.close();
          else controller.enqueue(enc(`part${n++};`));
        },
      }));
    },
  };
  const [, , , body] = await __dispatch(handler, init(), {});
  assert.equal(dec(body), 'part0;part1;part2;');
});

test('response redirect', async () => {
  const [status, , headers, body] = await __dispatch({ fetch: () => Response.redirect('https://e.com/next', 307) }, init(), {});
  assert.equal(status, 307);
  assert.deepEqual(headers, [['location', 'https://e.com/next']]);
  assert.equal(body.length, 0);
});

test('a response whose body was read is rejected', async () => {
  const handler = { async fetch() { const r = new Response('x'); await r.text(); return r; } };
  await assert.rejects(__dispatch(handler, init(), {}), TypeError);
});

test('Response error is rejected', async () => {
  await assert.rejects(__dispatch({ fetch: () => Response.error() }, init(), {}), TypeError);
});

test('a response stream that errors rejects', async () => {
  const handler = {
    fetch() {
      return new Response(new ReadableStream({ pull(c) { c.error(new RangeError('stream broke')); } }));
    },
  };
  await assert.rejects(__dispatch(handler, init(), {}), RangeError, /stream broke/);
});

test('non Response return values are TypeErrors naming what came back', async () => {
  await assert.rejects(__dispatch({ fetch() {} }, init(), {}), TypeError,
    /^fetch handler returned undefined; expected a Response$/);
  await assert.rejects(__dispatch({ async fetch() { return null; } }, init(), {}), TypeError, /returned null/);
  await assert.rejects(__dispatch({ fetch: () => 'text' }, init(), {}), TypeError, /returned a string/);
  await assert.rejects(__dispatch({ fetch: () => ({ status: 200 }) }, init(), {}), TypeError, /returned a plain object/);
  class NotAResponse {}
  await assert.rejects(__dispatch({ fetch: () => new NotAResponse() }, init(), {}), TypeError, /instance of NotAResponse/);
  await assert.rejects(__dispatch({ fetch: () => Object.create(Response.prototype) }, init(), {}), TypeError);
});

test('missing handler or fetch method', async () => {
  for (const handler of [undefined, null, {}, { fetch: 'no' }, 42]) {
    await assert.rejects(__dispatch(handler, init(), {}), TypeError,
      /default export must have a fetch\(request, env, ctx\) method/);
  }
});

test('a throwing handler rejects with what it threw', async () => {
  const error = new Error('sync boom');
  const e1 = await assert.rejects(__dispatch({ fetch() { throw error; } }, init(), {}), Error);
  assert.equal(e1, error);
  const e2 = await assert.rejects(__dispatch({ async fetch() { throw new RangeError('async boom'); } }, init(), {}), RangeError);
  assert.equal(e2.message, 'async boom');
  const e3 = await assert.rejects(__dispatch({ fetch() { throw 'a string'; } }, init(), {}));
  assert.equal(e3, 'a string');
});

test('waitUntil rejection is logged at error level', async () => {
  const start = __capturedLogs.length;
  const handler = {
    fetch(req, env, ctx) {
      ctx.waitUntil(Promise.reject(new Error('background failure')));
      ctx.waitUntil(Promise.resolve('fine'));
      ctx.waitUntil('not a promise');
      return new Response('ok');
    },
  };
  await __dispatch(handler, init(), {});
  await sleep(0);
  const errors = logsSince(start).filter(([level]) => level === 'error');
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert(errors[0][1].includes('background failure'), errors[0][1]);
});

test('the result resolves after a slow handler', async () => {
  const handler = { fetch: () => new Promise((resolve) => setTimeout(() => resolve(new Response('slow')), 10)) };
  const [, , , body] = await __dispatch(handler, init(), {});
  assert.equal(dec(body), 'slow');
});

test('headers set after creating the response are sent', async () => {
  const handler = {
    fetch() {
      const r = new Response('x');
      r.headers.set('X-Late', 'yes');
      return r;
    },
  };
  const [, , headers] = await __dispatch(handler, init(), {});
  assert.deepEqual(headers, [['content-type', 'text/plain;charset=UTF-8'], ['x-late', 'yes']]);
});

test('a response body that is an unusual string is encoded as UTF8', async () => {
  const [, , , body] = await __dispatch({ fetch: () => new Response('€\ud800') }, init(), {});
  assert.deepEqual(body, new Uint8Array([0xe2, 0x82, 0xac, 0xef, 0xbf, 0xbd]));
});

test('each request gets its own objects', async () => {
  const seen = [];
  const handler = { fetch(req, env, ctx) { seen.push([req, ctx]); return new Response(''); } };
  await __dispatch(handler, init(), {});
  await __dispatch(handler, init(), {});
  assert.notEqual(seen[0][0], seen[1][0]);
  assert.notEqual(seen[0][1], seen[1][1]);
});

// The 5th element of the result: ctx.waitUntil work still pending when the response is ready.

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

// Whether a promise has settled, seen after a few turns of the microtask queue.
async function isSettled(promise) {
  let settled = false;
  promise.then(() => { settled = true; }, () => { settled = true; });
  for (let i = 0; i < 10; i++) await null;
  return settled;
}

test('waitUntil element is null without waitUntil', async () => {
  const result = await __dispatch({ async fetch() { return new Response('x'); } }, init(), {});
  assert.equal(result.length, 5);
  assert.equal(result[4], null);
});

test('waitUntil element is null when the work settled before the response', async () => {
  const handler = {
    async fetch(req, env, ctx) {
      const work = Promise.resolve(1);
      ctx.waitUntil(work);
      await sleep(1);
      return new Response('x');
    },
  };
  const result = await __dispatch(handler, init(), {});
  assert.equal(result[4], null);
});

test('waitUntil element settles after every waitUntil promise', async () => {
  const one = deferred();
  const two = deferred();
  let savedCtx;
  const handler = {
    fetch(req, env, ctx) {
      savedCtx = ctx;
      ctx.waitUntil(one.promise);
      return new Response('x');
    },
  };
  const result = await __dispatch(handler, init(), {});
  const pending = result[4];
  assert(pending instanceof Promise, 'a promise while waitUntil work is pending');
  assert.equal(await isSettled(pending), false);
  // Added after the response was ready: still waited for.
  savedCtx.waitUntil(two.promise);
  one.resolve('done');
  assert.equal(await isSettled(pending), false);
  two.resolve();
  assert.equal(await isSettled(pending), true);
  assert.equal(await pending, undefined);
});

test('waitUntil element never rejects and rejections are logged', async () => {
  const start = __capturedLogs.length;
  const failing = deferred();
  const handler = {
    fetch(req, env, ctx) {
      ctx.waitUntil(failing.promise);
      ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 5)));
      return new Response('x');
    },
  };
  const result = await __dispatch(handler, init(), {});
  failing.reject(new Error('late background failure'));
  assert.equal(await result[4], undefined);
  const errors = logsSince(start).filter(([level]) => level === 'error');
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert(errors[0][1].includes('late background failure'), errors[0][1]);
});

test('waitUntil element with a stream body', async () => {
  const work = deferred();
  const handler = {
    fetch(req, env, ctx) {
      ctx.waitUntil(work.promise);
      let n = 0;
      return new Response(new ReadableStream({
        async pull(c) { await null; if (n++ === 2) c.close(); else c.enqueue(enc('ab')); },
      }));
    },
  };
  const result = await __dispatch(handler, init(), {});
  assert.equal(dec(result[3]), 'abab');
  assert(result[4] instanceof Promise);
  work.resolve();
  await result[4];
});

test('waitUntil needs its context', async () => {
  let ctx;
  await __dispatch({ fetch(req, env, c) { ctx = c; return new Response(''); } }, init(), {});
  assert.throws(() => ctx.waitUntil.call({}, Promise.resolve()), TypeError, /Illegal invocation/);
});

// init.abort: C++ calls it when the client disconnected.

test('dispatch sets init abort', async () => {
  const i = init();
  await __dispatch({ fetch: () => new Response('') }, i, {});
  assert.equal(typeof i.abort, 'function');
  assert.equal(i.abort.length, 0);
  // Also when the handler is unusable, and calling it then is harmless.
  const j = init();
  await assert.rejects(__dispatch({}, j, {}), TypeError);
  assert.equal(typeof j.abort, 'function');
  j.abort();
});

test('init abort aborts the request signal', async () => {
  const i = init();
  const seen = [];
  let request;
  const handler = {
    async fetch(req) {
      request = req;
      assert.equal(req.signal.aborted, false);
      req.signal.addEventListener('abort', () => seen.push(req.signal.reason));
      // C++ can abort only between turns, once dispatch has returned the abort function.
      await null;
      i.abort();
      return new Response('');
    },
  };
  await __dispatch(handler, i, {});
  assert.equal(request.signal.aborted, true);
  assert.equal(seen.length, 1);
  const reason = request.signal.reason;
  assert.equal(seen[0], reason);
  assert(reason instanceof DOMException);
  assert.equal(reason.name, 'AbortError');
  assert.equal(reason.message, 'The client disconnected');
  i.abort(); // a second call changes nothing
  assert.equal(request.signal.reason, reason);
});

test('init abort after the handler returned', async () => {
  const i = init();
  let request;
  await __dispatch({ fetch(req) { request = req; return new Response(''); } }, i, {});
  // The handler never looked at the signal.
  i.abort();
  assert.equal(request.signal.aborted, true);
  assert.equal(request.signal.reason.name, 'AbortError');
});

test('requests made from the incoming request follow its abort', async () => {
  const i = init({ method: 'POST', body: enc('x') });
  let copies;
  const handler = {
    fetch(req) {
      // None of these touch req.signal first.
      copies = [req.clone(), new Request(req.clone(), { headers: { 'x-a': '1' } })];
      copies.push(new Request(req)); // takes req's body: last
      return new Response('');
    },
  };
  await __dispatch(handler, i, {});
  for (const r of copies) assert.equal(r.signal.aborted, false);
  i.abort();
  for (const r of copies) {
    assert.equal(r.signal.aborted, true);
    assert.equal(r.signal.reason.message, 'The client disconnected');
  }
});

test('a request signal read after the abort is aborted', async () => {
  const i = init();
  let request;
  await __dispatch({ fetch(req) { request = req; return new Response(''); } }, i, {});
  i.abort();
  const copy = request.clone();
  assert.equal(copy.signal.aborted, true);
  assert.equal(request.signal.aborted, true);
});

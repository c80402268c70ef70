// host.dispatch together with outbound fetch, against the scripted host of
// tools/dev/web-fake-net.js (globalThis.__fakeNet). Only tools/dev/web-node-runner.mjs runs this
// folder; dispatch on its own (waitUntil element, init.abort) is tested in tests/web/dispatch.test.js.

const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);

function init(overrides = {}) {
  return {
    method: 'GET',
    url: 'http://front.test/path?x=1',
    headers: [['Host', 'front.test'], ['Accept', 'text/html'], ['X-Client', 'c']],
    body: null,
    requestId: 'req-1',
    ...overrides,
  };
}

test('a proxy handler forwards the request and streams the answer back', async () => {
  __fakeNet.route((req) => ({
    status: 202, statusText: 'Accepted', headers: [['Content-Type', 'text/plain'], ['X-Up', '1']],
    body: [`${req.method} `, dec(req.body ?? new Uint8Array(0))],
  }));
  const handler = {
    fetch(request) {
      const url = new URL(request.url);
      url.host = 'upstream.test';
      return fetch(new Request(url, request));
    },
  };
  const [status, statusText, headers, body, waitUntil] = await __dispatch(handler, init({
    method: 'POST', body: enc('payload'),
  }), {});
  assert.equal(status, 202);
  assert.equal(statusText, 'Accepted');
  assert.deepEqual(headers, [['content-type', 'text/plain'], ['x-up', '1']]);
  assert.equal(dec(body), 'POST payload');
  assert.equal(waitUntil, null);
  const sent = __fakeNet.requests[0];
  assert.equal(sent.url, 'http://upstream.test/path?x=1');
  // The client's Host is not sent upstream: the host sets it from the URL.
  assert.deepEqual(sent.headers, [['accept', 'text/html'], ['x-client', 'c']]);
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('framing and connection headers of the incoming request are not forwarded', async () => {
  __fakeNet.route(() => ({ body: [] }));
  await __dispatch({ fetch: (request) => fetch(request) }, init({
    method: 'POST',
    body: enc('12345'),
    headers: [['Host', 'front.test'], ['Content-Length', '5'], ['Connection', 'keep-alive, X-Hop'],
      ['Keep-Alive', 'timeout=5'], ['X-Hop', 'h'], ['TE', 'trailers'], ['Upgrade', 'websocket'],
      ['Transfer-Encoding', 'chunked'], ['Trailer', 'x'], ['Proxy-Connection', 'close'],
      ['Content-Type', 'text/plain'], ['X-Keep', 'k']],
  }), {});
  const sent = __fakeNet.requests[0];
  assert.deepEqual(sent.headers, [['content-type', 'text/plain'], ['x-keep', 'k'], ['accept', '*/*']]);
  assert.deepEqual(sent.body, enc('12345'));
});

test('returning fetch of the incoming request as is', async () => {
  __fakeNet.route(() => ({ body: ['direct'] }));
  const [, , , body] = await __dispatch({ fetch: (request) => fetch(request) }, init(), {});
  assert.equal(dec(body), 'direct');
  assert.equal(__fakeNet.requests[0].url, 'http://front.test/path?x=1');
});

test('a client disconnect aborts an upstream fetch in flight', async () => {
  __fakeNet.route(() => ({ hang: 'head' }));
  const i = init();
  let outcome;
  const handler = {
    async fetch(request) {
      try {
        await fetch('http://upstream.test/slow', { signal: request.signal });
        outcome = 'resolved';
      } catch (e) {
        outcome = e;
      }
      return new Response('after');
    },
  };
  const done = __dispatch(handler, i, {});
  while (__fakeNet.requests.length === 0) await sleep(0);
  i.abort();
  await done;
  assert(outcome instanceof DOMException, String(outcome));
  assert.equal(outcome.name, 'AbortError');
  assert.equal(outcome.message, 'The client disconnected');
  await sleep(0);
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('a client disconnect aborts a fetch made from the request', async () => {
  __fakeNet.route(() => ({ hang: 'head' }));
  const i = init();
  let pending;
  const handler = {
    fetch(request) {
      // No signal passed: fetch(request) follows the request's own signal.
      pending = fetch(request);
      pending.catch(() => {});
      return new Response('sent early');
    },
  };
  const result = await __dispatch(handler, i, {});
  assert.equal(dec(result[3]), 'sent early');
  while (__fakeNet.requests.length === 0) await sleep(0);
  i.abort();
  const e = await assert.rejects(pending, 'AbortError');
  assert.equal(e.message, 'The client disconnected');
  await sleep(0);
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('a client disconnect errors a body being streamed', async () => {
  __fakeNet.route(() => ({ body: ['a', 'b', 'c'], hang: 1 }));
  const i = init();
  let reading;
  const handler = {
    async fetch(request) {
      const upstream = await fetch('http://upstream.test/', { signal: request.signal });
      reading = upstream.text();
      reading.catch(() => {});
      return new Response('ok');
    },
  };
  await __dispatch(handler, i, {});
  i.abort();
  const e = await assert.rejects(reading, 'AbortError');
  assert.equal(e.message, 'The client disconnected');
});

test('fetch in waitUntil keeps the waitUntil element pending', async () => {
  __fakeNet.route(() => ({ body: ['logged'], delayMs: 10 }));
  let background = null;
  const handler = {
    fetch(request, env, ctx) {
      ctx.waitUntil(fetch('http://log.test/', { method: 'POST', body: 'event' }).then((r) => r.text()).then((t) => { background = t; }));
      return new Response('fast');
    },
  };
  const result = await __dispatch(handler, init(), {});
  assert.equal(dec(result[3]), 'fast');
  assert(result[4] instanceof Promise);
  assert.equal(background, null);
  await result[4];
  assert.equal(background, 'logged');
});

test('a failing fetch in waitUntil is logged and settles the element', async () => {
  __fakeNet.route(() => ({ error: { message: 'connection refused', kind: 'network' } }));
  const start = __capturedLogs.length;
  const handler = {
    fetch(request, env, ctx) {
      ctx.waitUntil(fetch('http://log.test/'));
      return new Response('fast');
    },
  };
  const result = await __dispatch(handler, init(), {});
  assert.equal(await result[4], undefined);
  const errors = logsSince(start).filter(([level]) => level === 'error');
  assert.equal(errors.length, 1);
  assert(errors[0][1].includes('fetch failed'), errors[0][1]);
  assert(errors[0][1].includes('connection refused'), errors[0][1]);
});

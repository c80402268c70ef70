// host.createEnv and service bindings against the scripted host of tools/dev/web-fake-net.js
// (globalThis.__fakeNet; the natives object is globalThis.__host). Only
// tools/dev/web-node-runner.mjs runs this folder.

const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);

function env() {
  return __host.createEnv({ API_KEY: 'k1', MODE: 'test' }, [['AUTH', 'auth-app'], ['STORE', 'store-app']]);
}

test('createEnv is on host', () => {
  assert.equal(typeof __host.createEnv, 'function');
  assert.equal(typeof __host.dispatch, 'function');
});

test('env has vars and bindings', () => {
  const e = env();
  assert.equal(Object.getPrototypeOf(e), Object.prototype);
  assert.deepEqual(Object.keys(e), ['API_KEY', 'MODE', 'AUTH', 'STORE']);
  assert.equal(e.API_KEY, 'k1');
  assert.equal(e.MODE, 'test');
  assert.equal(typeof e.AUTH, 'object');
  assert.equal(typeof e.AUTH.fetch, 'function');
  assert.equal(e.AUTH.fetch.length, 1);
  assert.notEqual(e.AUTH, e.STORE);
  assert.equal(e.AUTH.fetch, e.STORE.fetch, 'fetch is a shared method');
});

test('createEnv accepts empty and pair forms', () => {
  assert.deepEqual(Object.keys(__host.createEnv({}, [])), []);
  assert.deepEqual(Object.keys(__host.createEnv(null, null)), []);
  assert.deepEqual(Object.keys(__host.createEnv(undefined, undefined)), []);
  const e = __host.createEnv([['A', '1'], ['B', '2']], [['S', 'app']]);
  assert.equal(e.A, '1');
  assert.equal(e.B, '2');
  assert.equal(typeof e.S.fetch, 'function');
});

test('a var named __proto__ is an own property', () => {
  const e = __host.createEnv(JSON.parse('{"__proto__": "x", "constructor": "y"}'), []);
  assert.equal(Object.getPrototypeOf(e), Object.prototype);
  assert(Object.hasOwn(e, '__proto__'));
  assert.equal(Object.getOwnPropertyDescriptor(e, '__proto__').value, 'x');
  assert.equal(e.constructor, 'y');
});

test('bindings look sensible', () => {
  const e = env();
  assert.equal(String(e.AUTH), '[object Fetcher]');
  assert.equal(Object.prototype.toString.call(e.AUTH), '[object Fetcher]');
  assert.equal(e.AUTH.constructor.name, 'Fetcher');
  assert.equal(JSON.stringify(e), '{"API_KEY":"k1","MODE":"test","AUTH":{},"STORE":{}}');
  assert.throws(() => new e.AUTH.constructor(), TypeError, /Illegal constructor/);
  assert.equal(typeof globalThis.Fetcher, 'undefined');
  const start = __capturedLogs.length;
  console.log(e);
  console.log(e.AUTH);
  const lines = logsSince(start).map(([, text]) => text);
  assert.equal(lines[1], 'Fetcher {}');
  assert(lines[0].includes("API_KEY: 'k1'") && lines[0].includes('AUTH: Fetcher {}'), lines[0]);
  assert(!lines[0].includes('auth-app'), 'the target app is not shown');
});

test('a binding fetch goes to serviceFetch', async () => {
  __fakeNet.service('auth-app', (init) => ({
    status: 201, statusText: 'Created',
    headers: [['Content-Type', 'application/json'], ['X-From', 'auth']],
    body: JSON.stringify({ method: init.method, body: init.body && new TextDecoder().decode(init.body) }),
  }));
  const e = env();
  const r = await e.AUTH.fetch('https://auth.internal/login?x=1#frag', {
    method: 'POST', body: 'user=a', headers: { 'X-Token': 't' },
  });
  assert(r instanceof Response);
  assert.equal(r.status, 201);
  assert.equal(r.statusText, 'Created');
  assert.equal(r.type, 'basic');
  assert.equal(r.url, 'https://auth.internal/login?x=1');
  assert.equal(r.redirected, false);
  assert.equal(r.headers.get('x-from'), 'auth');
  assert.throws(() => r.headers.set('x-from', 'me'), TypeError);
  assert.deepEqual(await r.json(), { method: 'POST', body: 'user=a' });

  assert.equal(__fakeNet.serviceRequests.length, 1);
  const [app, init] = __fakeNet.serviceRequests[0];
  assert.equal(app, 'auth-app');
  assert.equal(init.method, 'POST');
  assert.equal(init.url, 'https://auth.internal/login?x=1');
  assert.deepEqual(init.headers, [['content-type', 'text/plain;charset=UTF-8'], ['x-token', 't']]);
  assert.deepEqual(init.body, enc('user=a'));
  assert.equal(init.timeoutMs, 0);
  assert.equal(__fakeNet.requests.length, 0, 'no network exchange');
});

test('binding fetch takes a Request and any scheme', async () => {
  __fakeNet.service('store-app', (init) => ({ body: `${init.method} ${init.url}` }));
  const e = env();
  const r = await e.STORE.fetch(new Request('store://bucket/key', { method: 'PUT', body: new Uint8Array([1]) }));
  assert.equal(await r.text(), 'PUT store://bucket/key');
  const r2 = await e.STORE.fetch(new URL('http://x.test/get'));
  assert.equal(await r2.text(), 'GET http://x.test/get');
  assert.equal(__fakeNet.serviceRequests[1][1].body, null);
});

test('binding fetch reads a stream body fully', async () => {
  __fakeNet.service('store-app', (init) => ({ body: init.body }));
  const e = env();
  let n = 0;
  const body = new ReadableStream({ async pull(c) { await null; if (n === 2) c.close(); else c.enqueue(enc(`c${n++}`)); } });
  const r = await e.STORE.fetch('http://store/', { method: 'POST', body });
  assert.equal(await r.text(), 'c0c1');
});

test('binding responses are returned as they are', async () => {
  __fakeNet.service('auth-app', () => ({ status: 302, headers: [['Location', 'https://elsewhere.test/']], body: 'moved' }));
  const e = env();
  const r = await e.AUTH.fetch('http://auth/');
  assert.equal(r.status, 302);
  assert.equal(r.headers.get('location'), 'https://elsewhere.test/');
  assert.equal(await r.text(), 'moved');
  assert.equal(__fakeNet.serviceRequests.length, 1, 'redirects are not followed');
  assert.equal(__fakeNet.requests.length, 0);
});

test('binding HEAD and 204 have no body', async () => {
  __fakeNet.service('auth-app', (init) => ({ status: init.method === 'HEAD' ? 200 : 204, body: '' }));
  const e = env();
  assert.equal((await e.AUTH.fetch('http://auth/', { method: 'HEAD' })).body, null);
  assert.equal((await e.AUTH.fetch('http://auth/')).body, null);
  __fakeNet.service('auth-app', () => ({ status: 200, body: '' }));
  const empty = await e.AUTH.fetch('http://auth/');
  assert.notEqual(empty.body, null);
  assert.equal(await empty.text(), '');
});

test('binding errors reject with TypeError', async () => {
  __fakeNet.service('auth-app', () => { throw new Error('the auth app threw: boom'); });
  const e = env();
  const error = await assert.rejects(e.AUTH.fetch('http://auth/'), TypeError);
  assert(error.message.includes('AUTH'), error.message);
  assert(error.message.includes('the auth app threw: boom'), error.message);
  assert.equal(error.cause.message, 'the auth app threw: boom');
  // An app the server does not have.
  const missing = __host.createEnv({}, [['GONE', 'no-such-app']]);
  await assert.rejects(missing.GONE.fetch('http://gone/'), TypeError, /no app named no-such-app/);
});

test('binding fetch validates its arguments', async () => {
  const e = env();
  await assert.rejects(e.AUTH.fetch(), TypeError, /1 argument required/);
  await assert.rejects(e.AUTH.fetch('/relative'), TypeError, /Invalid URL/);
  await assert.rejects(e.AUTH.fetch('http://auth/', { method: 'GET', body: 'x' }), TypeError);
  await assert.rejects(e.AUTH.fetch.call({}, 'http://auth/'), TypeError, /Illegal invocation/);
  const { fetch: detached } = e.AUTH;
  await assert.rejects(detached('http://auth/'), TypeError, /Illegal invocation/);
  assert.equal(__fakeNet.serviceRequests.length, 0);
});

test('binding fetch and abort signals', async () => {
  const e = env();
  const reason = new Error('already');
  const e1 = await assert.rejects(e.AUTH.fetch('http://auth/', { signal: AbortSignal.abort(reason) }));
  assert.equal(e1, reason);
  assert.equal(__fakeNet.serviceRequests.length, 0);

  let release;
  __fakeNet.service('auth-app', () => new Promise((resolve) => { release = resolve; }));
  const controller = new AbortController();
  const p = e.AUTH.fetch('http://auth/', { signal: controller.signal });
  while (release === undefined) await sleep(0);
  controller.abort();
  const e2 = await assert.rejects(p, 'AbortError');
  assert.equal(e2, controller.signal.reason);
  release({ body: 'too late' }); // ignored
  await sleep(5);
});

test('a binding used from a request handler', async () => {
  __fakeNet.service('auth-app', (init) => ({ body: `ok ${init.headers.find(([n]) => n === 'authorization')?.[1]}` }));
  const e = env();
  const handler = {
    async fetch(request, env) {
      const answer = await env.AUTH.fetch(request);
      return new Response(`auth said: ${await answer.text()}`);
    },
  };
  const result = await __dispatch(handler, {
    method: 'GET', url: 'http://front.test/x', headers: [['Authorization', 'Bearer abc']], body: null, requestId: 'r',
  }, e);
  assert.equal(dec(result[3]), 'auth said: ok Bearer abc');
  assert.equal(__fakeNet.serviceRequests[0][1].url, 'http://front.test/x');
});

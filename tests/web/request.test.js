// Request (Fetch §5.4).

test('defaults', () => {
  const r = new Request('https://example.com/a?b#c');
  assert.equal(r.method, 'GET');
  assert.equal(r.url, 'https://example.com/a?b#c');
  assert.equal(r.redirect, 'follow');
  assert.equal(r.body, null);
  assert.equal(r.bodyUsed, false);
  assert.equal(r.mode, 'cors');
  assert.equal(r.credentials, 'same-origin');
  assert.equal(r.cache, 'default');
  assert.equal(r.referrer, 'about:client');
  assert.equal(r.referrerPolicy, '');
  assert.equal(r.integrity, '');
  assert.equal(r.keepalive, false);
  assert.equal(r.destination, '');
  assert.equal(r.duplex, 'half');
  assert(r.headers instanceof Headers);
  assert.deepEqual([...r.headers], []);
});

test('url is parsed and serialized', () => {
  assert.equal(new Request('HTTPS://EXAMPLE.com').url, 'https://example.com/');
  assert.equal(new Request('http://example.com:80/a/../b/./c').url, 'http://example.com/b/c');
  assert.equal(new Request('http://ex.com/a b').url, 'http://ex.com/a%20b');
  assert.equal(new Request(new URL('https://x.test/p?q')).url, 'https://x.test/p?q');
  assert.equal(new Request('https://example.com:8443/x').url, 'https://example.com:8443/x');
  assert.equal(new Request('http://127.0.0.1:8080/').url, 'http://127.0.0.1:8080/');
  assert.equal(new Request('http://0x7f.1/').url, 'http://127.0.0.1/');
});

test('relative or invalid URL throws TypeError', () => {
  assert.throws(() => new Request('/relative'), TypeError);
  assert.throws(() => new Request('relative'), TypeError);
  assert.throws(() => new Request('http://'), TypeError);
  assert.throws(() => new Request('https://exa mple.com/'), TypeError);
  assert.throws(() => new Request(''), TypeError);
});

test('URL with credentials throws TypeError', () => {
  assert.throws(() => new Request('https://user:pass@example.com/'), TypeError, /credentials/);
  assert.throws(() => new Request('https://user@example.com/'), TypeError);
});

test('missing input throws TypeError', () => {
  assert.throws(() => new Request(), TypeError);
});

test('method is normalized', () => {
  const url = 'https://example.com/';
  assert.equal(new Request(url, { method: 'get' }).method, 'GET');
  assert.equal(new Request(url, { method: 'pOsT' }).method, 'POST');
  assert.equal(new Request(url, { method: 'delete' }).method, 'DELETE');
  assert.equal(new Request(url, { method: 'options' }).method, 'OPTIONS');
  assert.equal(new Request(url, { method: 'put' }).method, 'PUT');
  assert.equal(new Request(url, { method: 'head' }).method, 'HEAD');
  assert.equal(new Request(url, { method: 'patch' }).method, 'patch', 'patch is not normalized');
  assert.equal(new Request(url, { method: 'PATCH' }).method, 'PATCH');
  assert.equal(new Request(url, { method: 'MyMethod' }).method, 'MyMethod');
});

test('forbidden methods throw TypeError', () => {
  for (const method of ['CONNECT', 'connect', 'TRACE', 'trace', 'TRACK', 'Track']) {
    assert.throws(() => new Request('https://example.com/', { method }), TypeError, undefined);
  }
});

test('invalid method token throws TypeError', () => {
  for (const method of ['', 'GE T', 'GET\n', 'G(ET', 'é']) {
    assert.throws(() => new Request('https://example.com/', { method }), TypeError);
  }
});

test('GET or HEAD with a body throws TypeError', () => {
  assert.throws(() => new Request('https://example.com/', { body: 'x' }), TypeError);
  assert.throws(() => new Request('https://example.com/', { method: 'GET', body: 'x' }), TypeError);
  assert.throws(() => new Request('https://example.com/', { method: 'head', body: new Uint8Array(1) }), TypeError);
  // A null body is fine.
  assert.equal(new Request('https://example.com/', { method: 'GET', body: null }).body, null);
});

test('body with content type', async () => {
  const r = new Request('https://example.com/', { method: 'POST', body: 'hello' });
  assert.equal(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
  assert.equal(await r.text(), 'hello');
  assert.equal(r.bodyUsed, true);
});

test('explicit content type is kept', () => {
  const r = new Request('https://example.com/', {
    method: 'POST', body: 'x', headers: { 'Content-Type': 'application/custom' },
  });
  assert.equal(r.headers.get('content-type'), 'application/custom');
});

test('URLSearchParams body sets form content type', async () => {
  const r = new Request('https://example.com/', { method: 'POST', body: new URLSearchParams({ a: '1 2', b: 'é' }) });
  assert.equal(r.headers.get('content-type'), 'application/x-www-form-urlencoded;charset=UTF-8');
  assert.equal(await r.text(), 'a=1+2&b=%C3%A9');
});

test('a URLSearchParams body is its list serialized whatever its toString says', async () => {
  const saved = URLSearchParams.prototype.toString;
  let body;
  let sub;
  try {
    URLSearchParams.prototype.toString = () => 'hijacked';
    body = new Request('https://example.com/', { method: 'POST', body: new URLSearchParams('a=1&b=x y') });
    class Params extends URLSearchParams {
      toString() { return 'own'; }
    }
    sub = new Response(new Params([['k', 'é']]));
  } finally {
    URLSearchParams.prototype.toString = saved;
  }
  assert.equal(await body.text(), 'a=1&b=x+y');
  assert.equal(sub.headers.get('content-type'), 'application/x-www-form-urlencoded;charset=UTF-8');
  assert.equal(await sub.text(), 'k=%C3%A9');
  // An object that only inherits the prototype is not a URLSearchParams: its toString throws.
  assert.throws(() => new Response(Object.create(URLSearchParams.prototype)), TypeError);
});

test('headers from init', () => {
  const r = new Request('https://example.com/', { headers: [['X-A', '1'], ['x-a', '2']] });
  assert.equal(r.headers.get('x-a'), '1, 2');
  assert.throws(() => new Request('https://example.com/', { headers: [['bad name', '1']] }), TypeError);
});

test('redirect option is validated', () => {
  assert.equal(new Request('https://e.com/', { redirect: 'manual' }).redirect, 'manual');
  assert.equal(new Request('https://e.com/', { redirect: 'error' }).redirect, 'error');
  assert.throws(() => new Request('https://e.com/', { redirect: 'nope' }), TypeError);
});

test('other enum options are validated', () => {
  assert.equal(new Request('https://e.com/', { mode: 'no-cors' }).mode, 'no-cors');
  assert.throws(() => new Request('https://e.com/', { mode: 'navigate' }), TypeError);
  assert.throws(() => new Request('https://e.com/', { mode: 'bogus' }), TypeError);
  assert.equal(new Request('https://e.com/', { credentials: 'include' }).credentials, 'include');
  assert.throws(() => new Request('https://e.com/', { credentials: 'x' }), TypeError);
  assert.equal(new Request('https://e.com/', { cache: 'no-store' }).cache, 'no-store');
  assert.throws(() => new Request('https://e.com/', { cache: 'only-if-cached' }), TypeError);
  assert.throws(() => new Request('https://e.com/', { duplex: 'full' }), TypeError);
  assert.equal(new Request('https://e.com/', { referrer: '' }).referrer, '');
  assert.equal(new Request('https://e.com/', { keepalive: true }).keepalive, true);
});

test('init must be a dictionary', () => {
  assert.throws(() => new Request('https://e.com/', 5), TypeError);
  assert.equal(new Request('https://e.com/', null).method, 'GET');
});

test('signal defaults to a never aborted signal', () => {
  const r = new Request('https://example.com/');
  assert(r.signal instanceof AbortSignal);
  assert.equal(r.signal.aborted, false);
  assert.equal(r.signal, r.signal, 'same object each time');
});

test('signal follows init signal', () => {
  const controller = new AbortController();
  const r = new Request('https://example.com/', { signal: controller.signal });
  assert.notEqual(r.signal, controller.signal);
  assert.equal(r.signal.aborted, false);
  controller.abort('why');
  assert.equal(r.signal.aborted, true);
  assert.equal(r.signal.reason, 'why');
  assert.throws(() => new Request('https://example.com/', { signal: {} }), TypeError);
});

test('already aborted signal', () => {
  const r = new Request('https://example.com/', { signal: AbortSignal.abort() });
  assert.equal(r.signal.aborted, true);
  assert.equal(r.signal.reason.name, 'AbortError');
});

test('clone copies and reads both', async () => {
  const r = new Request('https://example.com/x', { method: 'POST', body: 'data', headers: { 'x-a': '1' } });
  const c = r.clone();
  assert.equal(c.url, r.url);
  assert.equal(c.method, 'POST');
  assert.equal(c.headers.get('x-a'), '1');
  assert.notEqual(c.headers, r.headers);
  c.headers.set('x-a', '2');
  assert.equal(r.headers.get('x-a'), '1');
  assert.equal(await r.text(), 'data');
  assert.equal(await c.text(), 'data');
});

test('clone of a stream body tees', async () => {
  const stream = new ReadableStream({
    start(c) { c.enqueue(new TextEncoder().encode('ab')); c.enqueue(new TextEncoder().encode('cd')); c.close(); },
  });
  const r = new Request('https://example.com/', { method: 'POST', body: stream });
  const c = r.clone();
  assert.equal(await c.text(), 'abcd');
  assert.equal(await r.text(), 'abcd');
});

test('clone of a used body throws TypeError', async () => {
  const r = new Request('https://example.com/', { method: 'POST', body: 'x' });
  await r.text();
  assert.throws(() => r.clone(), TypeError);
});

test('clone signal follows original', () => {
  const controller = new AbortController();
  const r = new Request('https://example.com/', { signal: controller.signal });
  const c = r.clone();
  controller.abort();
  assert.equal(c.signal.aborted, true);
});

test('new Request from a Request copies fields', () => {
  const a = new Request('https://example.com/a', { method: 'PUT', headers: { 'x-a': '1' }, redirect: 'manual' });
  const b = new Request(a);
  assert.equal(b.url, 'https://example.com/a');
  assert.equal(b.method, 'PUT');
  assert.equal(b.redirect, 'manual');
  assert.equal(b.headers.get('x-a'), '1');
  const c = new Request(a, { method: 'POST', headers: { 'x-b': '2' } });
  assert.equal(c.method, 'POST');
  assert.equal(c.headers.get('x-a'), null);
  assert.equal(c.headers.get('x-b'), '2');
});

test('new Request from a Request takes its body', async () => {
  const a = new Request('https://example.com/', { method: 'POST', body: 'payload' });
  const b = new Request(a);
  assert.equal(a.bodyUsed, true, 'the input body is used up');
  assert.equal(await b.text(), 'payload');
  assert.throws(() => new Request(a), TypeError, /used/);
  // With a new body, a used input is fine.
  const c = new Request(a, { body: 'other' });
  assert.equal(await c.text(), 'other');
});

test('new Request from a GET Request with a body in init throws', () => {
  const a = new Request('https://example.com/');
  assert.throws(() => new Request(a, { body: 'x' }), TypeError);
});

test('a disturbed stream cannot be a body', async () => {
  const stream = new ReadableStream({ start(c) { c.enqueue(new Uint8Array([1])); c.close(); } });
  await stream.getReader().read();
  assert.throws(() => new Request('https://e.com/', { method: 'POST', body: stream }), TypeError);
  const locked = new ReadableStream();
  locked.getReader();
  assert.throws(() => new Request('https://e.com/', { method: 'POST', body: locked }), TypeError);
});

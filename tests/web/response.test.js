// Response (Fetch §5.5).

test('defaults', () => {
  const r = new Response();
  assert.equal(r.status, 200);
  assert.equal(r.ok, true);
  assert.equal(r.statusText, '');
  assert.equal(r.type, 'default');
  assert.equal(r.url, '');
  assert.equal(r.redirected, false);
  assert.equal(r.body, null);
  assert.equal(r.bodyUsed, false);
  assert.deepEqual([...r.headers], []);
});

test('string body sets text content type', async () => {
  const r = new Response('hello');
  assert.equal(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
  assert.equal(await r.text(), 'hello');
});

test('status and statusText from init', () => {
  const r = new Response(null, { status: 404, statusText: 'Not Found' });
  assert.equal(r.status, 404);
  assert.equal(r.ok, false);
  assert.equal(r.statusText, 'Not Found');
  assert.equal(new Response(null, { status: 299 }).ok, true);
  assert.equal(new Response(null, { status: 300 }).ok, false);
});

test('status outside 200 to 599 throws RangeError', () => {
  for (const status of [0, 100, 101, 199, 600, 999, -1]) {
    assert.throws(() => new Response(null, { status }), RangeError, undefined);
  }
  assert.equal(new Response(null, { status: 200 }).status, 200);
  assert.equal(new Response(null, { status: 599 }).status, 599);
  // unsigned short conversion wraps around
  assert.equal(new Response(null, { status: 65536 + 201 }).status, 201);
  assert.equal(new Response(null, { status: '204' }).status, 204);
});

test('invalid statusText throws TypeError', () => {
  assert.throws(() => new Response(null, { statusText: 'a\nb' }), TypeError);
  assert.throws(() => new Response(null, { statusText: 'a\rb' }), TypeError);
  assert.throws(() => new Response(null, { statusText: '\u0100' }), TypeError);
  assert.equal(new Response(null, { statusText: 'OK \t fine' }).statusText, 'OK \t fine');
});

test('null body status with a body throws TypeError', () => {
  for (const status of [204, 205, 304]) {
    assert.throws(() => new Response('x', { status }), TypeError, undefined);
    assert.throws(() => new Response('', { status }), TypeError);
    assert.equal(new Response(null, { status }).status, status);
    assert.equal(new Response(undefined, { status }).body, null);
  }
});

test('headers init', () => {
  const r = new Response('x', { headers: { 'X-Custom': 'v', 'Content-Type': 'text/html' } });
  assert.equal(r.headers.get('x-custom'), 'v');
  assert.equal(r.headers.get('content-type'), 'text/html');
  const h = new Headers({ a: '1' });
  const r2 = new Response(null, { headers: h });
  assert.notEqual(r2.headers, h);
  assert.equal(r2.headers.get('a'), '1');
});

test('headers are the same object each time and mutable', () => {
  const r = new Response('x');
  assert.equal(r.headers, r.headers);
  r.headers.set('x-y', 'z');
  assert.equal(r.headers.get('x-y'), 'z');
  assert.equal(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
});

test('Response json', async () => {
  const r = Response.json({ a: 1, b: [true, null] });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(await r.text(), '{"a":1,"b":[true,null]}');
  const r2 = Response.json('x', { status: 201, headers: { 'content-type': 'application/vnd+json' } });
  assert.equal(r2.status, 201);
  assert.equal(r2.headers.get('content-type'), 'application/vnd+json');
  assert.deepEqual(await Response.json([1, 2]).json(), [1, 2]);
});

test('Response json errors', () => {
  assert.throws(() => Response.json(undefined), TypeError);
  assert.throws(() => Response.json(() => {}), TypeError);
  assert.throws(() => Response.json(Symbol('x')), TypeError);
  assert.throws(() => Response.json(1n), TypeError);
  const cyclic = {};
  cyclic.self = cyclic;
  assert.throws(() => Response.json(cyclic), TypeError);
  assert.throws(() => Response.json({}, { status: 204 }), TypeError);
  assert.throws(() => Response.json({}, { status: 100 }), RangeError);
  assert.throws(() => Response.json(), TypeError);
});

test('Response redirect', () => {
  const r = Response.redirect('https://example.com/a b');
  assert.equal(r.status, 302);
  assert.equal(r.headers.get('location'), 'https://example.com/a%20b');
  assert.equal(r.body, null);
  assert.equal(r.type, 'default');
  for (const status of [301, 302, 303, 307, 308]) {
    assert.equal(Response.redirect('https://e.com/', status).status, status);
  }
  assert.equal(Response.redirect(new URL('https://e.com/x')).headers.get('location'), 'https://e.com/x');
});

test('Response redirect status must be a redirect status', () => {
  for (const status of [200, 300, 304, 305, 306, 309, 400, 0]) {
    assert.throws(() => Response.redirect('https://e.com/', status), RangeError, undefined);
  }
});

test('Response redirect with an invalid or relative URL throws TypeError', () => {
  assert.throws(() => Response.redirect('/relative'), TypeError);
  assert.throws(() => Response.redirect('http://exa mple/'), TypeError);
  assert.throws(() => Response.redirect(), TypeError);
});

test('Response error', () => {
  const r = Response.error();
  assert.equal(r.type, 'error');
  assert.equal(r.status, 0);
  assert.equal(r.ok, false);
  assert.equal(r.statusText, '');
  assert.equal(r.body, null);
  assert.deepEqual([...r.headers], []);
});

test('clone then read both', async () => {
  const r = new Response('payload', { status: 201, statusText: 'Created', headers: { 'x-a': '1' } });
  const c = r.clone();
  assert.equal(c.status, 201);
  assert.equal(c.statusText, 'Created');
  assert.equal(c.headers.get('x-a'), '1');
  assert.equal(c.headers.get('content-type'), 'text/plain;charset=UTF-8');
  assert.equal(await r.text(), 'payload');
  assert.equal(await c.text(), 'payload');
});

test('clone of bytes body is independent', async () => {
  const r = new Response(new Uint8Array([1, 2, 3]));
  const c = r.clone();
  const a = await r.bytes();
  a[0] = 99;
  assert.deepEqual(await c.bytes(), new Uint8Array([1, 2, 3]));
});

test('clone of a stream body', async () => {
  const r = new Response(new ReadableStream({
    start(c) { c.enqueue(new Uint8Array([104, 105])); c.close(); },
  }));
  const c = r.clone();
  assert.equal(await r.text(), 'hi');
  assert.equal(await c.text(), 'hi');
});

test('clone after body used throws TypeError', async () => {
  const r = new Response('x');
  await r.text();
  assert.throws(() => r.clone(), TypeError);
  const s = new Response('y');
  s.body.getReader();
  assert.throws(() => s.clone(), TypeError, undefined);
});

test('clone of an error response keeps type and immutable headers', () => {
  const c = Response.error().clone();
  assert.equal(c.type, 'error');
  assert.equal(c.status, 0);
  assert.throws(() => c.headers.set('a', 'b'), TypeError);
});

test('clone of a redirect keeps immutable headers', () => {
  const c = Response.redirect('https://e.com/').clone();
  assert.equal(c.headers.get('location'), 'https://e.com/');
  assert.throws(() => c.headers.set('a', 'b'), TypeError);
});

test('stream body is returned as is', () => {
  const stream = new ReadableStream();
  const r = new Response(stream);
  assert.equal(r.body, stream);
  assert.equal(r.headers.get('content-type'), null);
});

test('body init types', async () => {
  assert.deepEqual(await new Response(new Uint8Array([1, 2])).bytes(), new Uint8Array([1, 2]));
  assert.deepEqual(new Uint8Array(await new Response(new Uint16Array([0x0201]).buffer).arrayBuffer()), new Uint8Array([1, 2]));
  const dv = new DataView(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2);
  assert.deepEqual(await new Response(dv).bytes(), new Uint8Array([8, 7]));
  assert.equal(new Response(new Uint8Array(1)).headers.get('content-type'), null);
  assert.equal(await new Response(42).text(), '42');
  assert.equal(await new Response({ toString() { return 'obj'; } }).text(), 'obj');
  assert.equal(new Response(42).headers.get('content-type'), 'text/plain;charset=UTF-8');
});

test('byte body is copied at construction', async () => {
  const bytes = new Uint8Array([1, 2, 3]);
  const r = new Response(bytes);
  bytes[0] = 100;
  assert.deepEqual(await r.bytes(), new Uint8Array([1, 2, 3]));
});

test('init must be a dictionary', () => {
  assert.throws(() => new Response(null, 1), TypeError);
  assert.equal(new Response(null, null).status, 200);
});

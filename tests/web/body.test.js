// The Body mixin (Fetch §5.3), through Response and Request.

const enc = (s) => new TextEncoder().encode(s);

function streamOf(...chunks) {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

test('text json arrayBuffer bytes', async () => {
  assert.equal(await new Response('héllo').text(), 'héllo');
  assert.deepEqual(await new Response('{"a":[1]}').json(), { a: [1] });
  const ab = await new Response('hé').arrayBuffer();
  assert(ab instanceof ArrayBuffer);
  assert.deepEqual(new Uint8Array(ab), new Uint8Array([0x68, 0xc3, 0xa9]));
  const bytes = await new Response('hé').bytes();
  assert(bytes instanceof Uint8Array);
  assert.deepEqual(bytes, new Uint8Array([0x68, 0xc3, 0xa9]));
});

test('reading a body twice gives TypeError', async () => {
  const r = new Response('x');
  await r.text();
  assert.equal(r.bodyUsed, true);
  await assert.rejects(r.text(), TypeError);
  await assert.rejects(r.json(), TypeError);
  await assert.rejects(r.arrayBuffer(), TypeError);
  await assert.rejects(r.bytes(), TypeError);
});

test('reading a bytes body twice gives TypeError', async () => {
  const r = new Response(new Uint8Array([1]));
  await r.arrayBuffer();
  await assert.rejects(() => r.arrayBuffer(), TypeError);
});

test('reading a stream body twice gives TypeError', async () => {
  const r = new Response(streamOf(enc('a')));
  assert.equal(await r.text(), 'a');
  assert.equal(r.bodyUsed, true);
  await assert.rejects(r.text(), TypeError);
});

test('bodyUsed is set synchronously when reading starts', () => {
  const r = new Response('abc');
  const p = r.text();
  assert.equal(r.bodyUsed, true);
  return p;
});

test('null body reads as empty', async () => {
  const r = new Response(null);
  assert.equal(await r.text(), '');
  assert.equal(r.bodyUsed, false);
  assert.equal((await new Response().arrayBuffer()).byteLength, 0);
  assert.equal((await new Response().bytes()).length, 0);
  // A null body can be read any number of times.
  assert.equal(await r.text(), '');
  await assert.rejects(new Response().json(), SyntaxError);
});

test('json with invalid JSON rejects with SyntaxError', async () => {
  await assert.rejects(new Response('{nope').json(), SyntaxError);
});

test('text strips a UTF8 BOM and replaces invalid bytes', async () => {
  assert.equal(await new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])).text(), 'a');
  assert.equal(await new Response('\ufeffa').text(), 'a');
  assert.equal(await new Response(new Uint8Array([0x61, 0xff, 0x62])).text(), 'a\ufffdb');
  assert.equal(await new Response('a\ud800b').text(), 'a\ufffdb', 'lone surrogate');
  assert.deepEqual(await new Response('\ud800').bytes(), new Uint8Array([0xef, 0xbf, 0xbd]));
});

test('body getter gives a ReadableStream of the bytes', async () => {
  const r = new Response('hi');
  const body = r.body;
  assert(body instanceof ReadableStream);
  assert.equal(r.body, body, 'same stream each time');
  assert.equal(r.bodyUsed, false);
  const reader = body.getReader();
  const chunks = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    assert(value instanceof Uint8Array);
    chunks.push(...value);
  }
  assert.deepEqual(chunks, [104, 105]);
  assert.equal(r.bodyUsed, true);
  await assert.rejects(r.text(), TypeError);
});

test('body stream supports BYOB reads', async () => {
  const reader = new Response('abc').body.getReader({ mode: 'byob' });
  const { value } = await reader.read(new Uint8Array(8));
  assert.deepEqual(Array.from(value), [97, 98, 99]);
});

test('a locked body cannot be read', async () => {
  const r = new Response('x');
  r.body.getReader();
  assert.equal(r.bodyUsed, false, 'locked but not disturbed');
  await assert.rejects(r.text(), TypeError);
});

test('body after text is a disturbed locked stream', async () => {
  const r = new Response('x');
  await r.text();
  const body = r.body;
  assert(body instanceof ReadableStream);
  assert.equal(body.locked, true);
  assert.equal(r.bodyUsed, true);
});

test('stream chunks are concatenated', async () => {
  const r = new Response(streamOf(enc('ab'), enc('c'), new Uint8Array(0), enc('é')));
  assert.equal(await r.text(), 'abcé');
});

test('multi byte character split across chunks', async () => {
  const bytes = enc('€');
  const r = new Response(streamOf(bytes.subarray(0, 1), bytes.subarray(1)));
  assert.equal(await r.text(), '€');
});

test('non Uint8Array chunks reject with TypeError', async () => {
  await assert.rejects(new Response(streamOf('text')).text(), TypeError);
  await assert.rejects(new Response(streamOf(new Uint16Array(1))).arrayBuffer(), TypeError);
});

test('an erroring stream rejects the read', async () => {
  const r = new Response(new ReadableStream({
    pull(controller) { controller.error(new RangeError('boom')); },
  }));
  await assert.rejects(r.text(), RangeError, /boom/);
});

test('arrayBuffer of a stream is a fresh buffer', async () => {
  const chunk = enc('xyz');
  const ab = await new Response(streamOf(chunk)).arrayBuffer();
  assert.equal(ab.byteLength, 3);
  new Uint8Array(ab)[0] = 0;
  assert.equal(chunk[0], 120, 'the enqueued chunk is not aliased');
});

test('async iteration over a body', async () => {
  const parts = [];
  for await (const chunk of new Response(streamOf(enc('a'), enc('b'))).body) parts.push(new TextDecoder().decode(chunk));
  assert.equal(parts.join(''), 'ab');
});

test('body methods on a foreign object reject', async () => {
  await assert.rejects(Response.prototype.text.call({}), TypeError);
  await assert.rejects(Request.prototype.json.call(new Response('1')), TypeError);
  assert.throws(() => Object.getOwnPropertyDescriptor(Response.prototype, 'body').get.call({}), TypeError);
});

test('a large body round trips', async () => {
  const big = 'x'.repeat(1 << 20) + 'é';
  const r = new Response(big);
  assert.equal((await r.clone().arrayBuffer()).byteLength, (1 << 20) + 2);
  assert.equal(await r.text(), big);
});

test('request body methods', async () => {
  const r = new Request('https://e.com/', { method: 'POST', body: '{"k":"v"}' });
  assert.deepEqual(await r.json(), { k: 'v' });
  assert.equal(r.bodyUsed, true);
  await assert.rejects(r.text(), TypeError);
});

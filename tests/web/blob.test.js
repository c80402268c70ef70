// Blob and File (W3C File API), as apps use them: construction from parts, slicing, reading,
// streams, and their immutability.

const enc = (s) => new TextEncoder().encode(s);

test('Blob from strings bytes and other blobs', async () => {
  const inner = new Blob(['in']);
  const b = new Blob(['hé', enc('-'), new Uint16Array([0x6978]).buffer, inner], { type: 'Text/Plain' });
  assert.equal(b.size, 3 + 1 + 2 + 2);
  assert.equal(b.type, 'text/plain');
  assert.equal(await b.text(), 'hé-xiin');
  assert.deepEqual(await b.bytes(), new Uint8Array([0x68, 0xc3, 0xa9, 0x2d, 0x78, 0x69, 0x69, 0x6e]));
  const ab = await b.arrayBuffer();
  assert(ab instanceof ArrayBuffer);
  assert.equal(ab.byteLength, 8);
  assert.equal(Object.prototype.toString.call(b), '[object Blob]');
  assert.equal(new Blob().size, 0);
  assert.equal(await new Blob().text(), '');
});

test('a type with characters outside printable ASCII is empty', () => {
  assert.equal(new Blob([], { type: 'a/b\u00e9' }).type, '');
  assert.equal(new Blob([], { type: 'a/b\n' }).type, '');
  assert.equal(new Blob([], { type: 'IMAGE/PNG' }).type, 'image/png');
});

test('the bytes are copied changing the source later changes nothing', async () => {
  const source = enc('abc');
  const b = new Blob([source]);
  source[0] = 0x7a;
  assert.equal(await b.text(), 'abc');
  const out = await b.bytes();
  out[1] = 0x7a;
  assert.equal(await b.text(), 'abc', 'bytes() hands out a copy');
});

test('endings native turns CR LF and CR into LF', async () => {
  assert.equal(await new Blob(['a\r\nb\rc\n'], { endings: 'native' }).text(), 'a\nb\nc\n');
  assert.equal(await new Blob(['a\r\nb'], { endings: 'transparent' }).text(), 'a\r\nb');
  assert.throws(() => new Blob([], { endings: 'dos' }), TypeError);
});

test('slice takes relative positions and a type', async () => {
  const b = new Blob(['0123456789'], { type: 'text/plain' });
  assert.equal(await b.slice(2, 5).text(), '234');
  assert.equal(await b.slice(-3).text(), '789');
  assert.equal(await b.slice(-100, 2).text(), '01');
  assert.equal(await b.slice(8, 2).text(), '');
  assert.equal(await b.slice(NaN, Infinity).text(), '0123456789');
  assert.equal(b.slice(0, 1).type, '');
  assert.equal(b.slice(0, 1, 'A/B').type, 'a/b');
});

test('stream gives the bytes as a byte stream', async () => {
  const big = new Uint8Array(150000).fill(7);
  const reader = new Blob([big]).stream().getReader();
  let total = 0;
  let pieces = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    assert(value instanceof Uint8Array);
    total += value.byteLength;
    pieces++;
  }
  assert.equal(total, 150000);
  assert(pieces >= 3, 'in pieces of at most 64 KiB');
  const byob = new Blob(['xyz']).stream().getReader({ mode: 'byob' });
  const { value } = await byob.read(new Uint8Array(2));
  assert.equal(new TextDecoder().decode(value), 'xy');
});

test('bad parts are a TypeError', () => {
  assert.throws(() => new Blob('abc'), TypeError);
  assert.throws(() => new Blob(5), TypeError);
  assert.throws(() => new Blob({}), TypeError);
  assert.throws(() => new Blob([], 5), TypeError);
});

test('parts are read through the iterable protocol', async () => {
  const parts = { *[Symbol.iterator]() { yield 'a'; yield 'b'; } };
  assert.equal(await new Blob(parts).text(), 'ab');
  const throwing = { [Symbol.iterator]() { throw new RangeError('no'); } };
  assert.throws(() => new Blob(throwing), RangeError);
});

test('File has a name and lastModified', async () => {
  const f = new File(['data'], 'a.txt', { type: 'text/plain', lastModified: 1234.9 });
  assert(f instanceof Blob);
  assert(f instanceof File);
  assert.equal(f.name, 'a.txt');
  assert.equal(f.lastModified, 1234);
  assert.equal(f.type, 'text/plain');
  assert.equal(await f.text(), 'data');
  assert.equal(Object.prototype.toString.call(f), '[object File]');
  const now = Date.now();
  const g = new File([], 'b');
  assert(Math.abs(g.lastModified - now) < 5000);
  assert.throws(() => new File(['x']), TypeError);
});

test('getters and methods check their receiver', async () => {
  const size = Object.getOwnPropertyDescriptor(Blob.prototype, 'size').get;
  assert.throws(() => size.call({}), TypeError);
  const name = Object.getOwnPropertyDescriptor(File.prototype, 'name').get;
  assert.throws(() => name.call(new Blob()), TypeError);
  await assert.rejects(Blob.prototype.text.call({}), TypeError);
});

test('a Blob body carries its type as Content Type', async () => {
  const r = new Response(new Blob(['{"a":1}'], { type: 'application/json' }));
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.deepEqual(await r.json(), { a: 1 });
  const untyped = new Response(new Blob(['x']));
  assert.equal(untyped.headers.get('content-type'), null);
  const req = new Request('http://x/', { method: 'POST', body: new File(['f'], 'f.bin', { type: 'image/png' }) });
  assert.equal(req.headers.get('content-type'), 'image/png');
  assert.equal(await req.text(), 'f');
});

test('blob reads a body into a Blob of the Content Type', async () => {
  const b = await new Response('hi', { headers: { 'content-type': 'Text/HTML; Charset="UTF-8"' } }).blob();
  assert(b instanceof Blob);
  assert.equal(b.type, 'text/html;charset=UTF-8', 'the MIME type as MIME Sniffing serialises it');
  const odd = await new Response('x', { headers: { 'content-type': 'a/b; p="x y"' } }).blob();
  assert.equal(odd.type, 'a/b;p="x y"');
  assert.equal(await b.text(), 'hi');
  const none = await new Response(new Uint8Array([1, 2])).blob();
  assert.equal(none.type, '');
  assert.equal(none.size, 2);
});

test('an app constructor on Uint8Array prototype cannot reach a Blob s bytes', async () => {
  const saved = Object.getOwnPropertyDescriptor(Uint8Array.prototype, 'constructor');
  let leaked = null;
  class Spy extends Uint8Array {
    constructor(...args) { super(...args); leaked = this; }
  }
  try {
    Object.defineProperty(Uint8Array.prototype, 'constructor', { value: Spy, configurable: true, writable: true });
    const b = new Blob(['hello']);
    const part = b.slice(0, 5);
    await b.bytes();
    if (leaked) leaked[0] = 0x4a;
  } finally {
    Object.defineProperty(Uint8Array.prototype, 'constructor', saved);
  }
  assert.equal(leaked, null, 'no copy was made with the app s constructor');
});

test('SharedArrayBuffer views are not BufferSources here', () => {
  const shared = new Uint8Array(new SharedArrayBuffer(4));
  assert.equal(new Blob([shared]).size, '0,0,0,0'.length, 'converted as a string instead');
});

test('a prototype rewritten by the app does not change what Blob does', async () => {
  const saved = Uint8Array.prototype.slice;
  const savedIter = Array.prototype[Symbol.iterator];
  try {
    Uint8Array.prototype.slice = function () { throw new Error('hijacked'); };
    const b = new Blob([new Uint8Array([1, 2, 3])]);
    assert.equal(b.slice(1).size, 2);
    assert.deepEqual(await b.bytes(), new Uint8Array([1, 2, 3]));
  } finally {
    Uint8Array.prototype.slice = saved;
    Array.prototype[Symbol.iterator] = savedIter;
  }
});

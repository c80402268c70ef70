// CompressionStream and DecompressionStream (WHATWG Compression), and compressed bodies.

const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);

async function pipeAll(chunks, transform) {
  const pieces = await transformAll(chunks, transform);
  return new Uint8Array(await new Blob(pieces).arrayBuffer());
}

test('each format round trips', async () => {
  const text = 'hello isolane '.repeat(1000);
  for (const format of ['gzip', 'deflate', 'deflate-raw']) {
    const packed = await pipeAll([enc(text.slice(0, 5000)), enc(text.slice(5000))], new CompressionStream(format));
    assert(packed.byteLength < text.length / 10, `${format} compresses`);
    const unpacked = await pipeAll([packed.slice(0, 7), packed.slice(7)], new DecompressionStream(format));
    assert.equal(dec(unpacked), text, format);
  }
});

test('the formats have their headers', async () => {
  const gz = await pipeAll([enc('x')], new CompressionStream('gzip'));
  assert.equal(gz[0], 0x1f);
  assert.equal(gz[1], 0x8b);
  const zl = await pipeAll([enc('x')], new CompressionStream('deflate'));
  assert.equal(zl[0], 0x78);
  const empty = await pipeAll([], new CompressionStream('gzip'));
  assert.equal(dec(await pipeAll([empty], new DecompressionStream('gzip'))), '');
});

test('known gzip bytes decompress', async () => {
  // printf 'isolane\\n' | gzip -n
  const gz = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x2c,
    0xce, 0xcf, 0x49, 0xcc, 0x4b, 0xe5, 0x02, 0x00, 0x3c, 0x89, 0xea, 0xeb, 0x08, 0x00, 0x00, 0x00]);
  assert.equal(dec(await pipeAll([gz], new DecompressionStream('gzip'))), 'isolane\n');
});

test('pipeThrough and a compressed Response body', async () => {
  const body = new Response('stream me '.repeat(100)).body.pipeThrough(new CompressionStream('gzip'));
  const r = new Response(body, { headers: { 'content-encoding': 'gzip' } });
  const back = await new Response(r.body.pipeThrough(new DecompressionStream('gzip'))).text();
  assert.equal(back, 'stream me '.repeat(100));
});

test('unknown formats and bad chunks are TypeErrors', async () => {
  assert.throws(() => new CompressionStream('brotli'), TypeError);
  assert.throws(() => new DecompressionStream('GZIP'), TypeError);
  assert.throws(() => new CompressionStream(), TypeError);
  await assert.rejects(pipeAll(['not bytes'], new CompressionStream('gzip')), TypeError);
});

test('corrupt truncated or trailing data is a TypeError', async () => {
  await assert.rejects(pipeAll([enc('definitely not gzip')], new DecompressionStream('gzip')), TypeError);
  const gz = await pipeAll([enc('some text to cut short')], new CompressionStream('gzip'));
  await assert.rejects(pipeAll([gz.slice(0, gz.length - 4)], new DecompressionStream('gzip')), TypeError);
  const trailing = new Uint8Array(gz.length + 3);
  trailing.set(gz);
  trailing.set([1, 2, 3], gz.length);
  await assert.rejects(pipeAll([trailing], new DecompressionStream('gzip')), TypeError);
});

test('streams are interfaces with readable and writable', () => {
  const c = new CompressionStream('deflate');
  assert(c.readable instanceof ReadableStream);
  assert(c.writable instanceof WritableStream);
  assert.equal(Object.prototype.toString.call(c), '[object CompressionStream]');
  const readable = Object.getOwnPropertyDescriptor(DecompressionStream.prototype, 'readable').get;
  assert.throws(() => readable.call({}), TypeError);
});

test('many streams left unread do not fail later ones', async () => {
  for (let i = 0; i < 200; i++) new CompressionStream('gzip').writable.getWriter().write(enc('x'));
  const packed = await pipeAll([enc('after')], new CompressionStream('gzip'));
  assert.equal(dec(await pipeAll([packed], new DecompressionStream('gzip'))), 'after');
});

test('a decompression bomb inflates only as far as it is read', async () => {
  const bomb = await pipeAll([new Uint8Array(16 * 1024 * 1024)], new CompressionStream('gzip'));
  assert(bomb.byteLength < 64 * 1024, `${bomb.byteLength} bytes of gzip`);
  const ds = new DecompressionStream('gzip');
  const writer = ds.writable.getWriter();
  let written = false;
  const writing = writer.write(bomb).then(() => { written = true; });
  writing.catch(() => {});
  await sleep(20);
  assert.equal(written, false, 'the write waits until the reader has taken the output');
  const reader = ds.readable.getReader();
  const { value } = await reader.read();
  assert(value.byteLength > 0 && value.byteLength <= 65536);
  await reader.cancel(new Error('enough'));
  await assert.rejects(writing, Error);
});

test('writing then closing before reading works for small outputs', async () => {
  const cs = new CompressionStream('deflate');
  const writer = cs.writable.getWriter();
  await writer.write(enc('small'));
  await writer.close();
  const packed = new Uint8Array(await new Response(cs.readable).arrayBuffer());
  assert.equal(dec(await pipeAll([packed], new DecompressionStream('deflate'))), 'small');
});

// Cases ported from the Web Platform Tests (xhr/formdata, FileAPI/blob, FileAPI/file,
// compression), rewritten for this harness: the cases that apply to a server runtime (no DOM
// forms, no workers).

const enc = (s) => new TextEncoder().encode(s);

function formdata(...pairs) {
  const fd = new FormData();
  for (const args of pairs) fd.append(...args);
  return fd;
}

test('wpt formdata append', () => {
  assert.equal(formdata(['key', 'value1']).get('key'), 'value1');
  assert.equal(formdata(['key', 'value2'], ['key', 'value1']).get('key'), 'value2');
  assert.equal(formdata(['key', undefined]).get('key'), 'undefined');
  assert.equal(formdata(['key', undefined], ['key', 'value1']).get('key'), 'undefined');
  assert.equal(formdata(['key', null]).get('key'), 'null');
  assert.equal(formdata(['key', null], ['key', 'value1']).get('key'), 'null');
  const before = Date.now() - 2000;
  const file = formdata(['key', new Blob(), 'blank.txt']).get('key');
  assert.equal(file.name, 'blank.txt');
  assert.equal(file.type, '');
  assert.equal(file.size, 0);
  assert(file.lastModified >= before && file.lastModified <= Date.now());
});

test('wpt formdata delete get getAll has', () => {
  const fd = formdata(['key', 'value1'], ['key', 'value2']);
  fd.delete('nil');
  assert.equal(fd.get('key'), 'value1');
  fd.delete('key');
  assert.equal(fd.get('key'), null);
  const other = formdata(['key1', 'value1'], ['key2', 'value2']);
  other.delete('key1');
  assert.equal(other.get('key1'), null);
  assert.equal(other.get('key2'), 'value2');
  assert.equal(formdata().get('key'), null);
  assert.deepEqual(formdata(['key', 'value1'], ['key', 'value2']).getAll('key'), ['value1', 'value2']);
  assert.deepEqual(formdata(['key', 'value1'], ['key', 'value2']).getAll('nil'), []);
  assert.equal(formdata(['key', 'value1'], ['key', 'value2']).has('key'), true);
  assert.equal(formdata(['key', 'value1'], ['key', 'value2']).has('nil'), false);
  assert.equal(formdata().has('key'), false);
});

test('wpt formdata set', () => {
  const fd = formdata(['key', 'value1'], ['key', 'value2']);
  fd.set('key', 'value3');
  assert.deepEqual(fd.getAll('key'), ['value3']);
  fd.set('other', undefined);
  assert.equal(fd.get('other'), 'undefined');
  fd.set('other', null);
  assert.equal(fd.get('other'), 'null');
  const order = formdata(['a', '1'], ['b', '2'], ['a', '3']);
  order.set('a', '4');
  assert.deepEqual([...order.keys()], ['a', 'b']);
  const file = new File([], 'name', { type: 'text/plain', lastModified: 123 });
  const withFile = new FormData();
  withFile.set('f', file, 'renamed');
  assert.equal(withFile.get('f').name, 'renamed');
  assert.equal(withFile.get('f').type, 'text/plain');
  assert.equal(withFile.get('f').lastModified, 123);
});

test('wpt formdata iteration order and foreach', () => {
  const fd = formdata(['n1', 'v1'], ['n2', 'v2'], ['n1', 'v3']);
  assert.deepEqual([...fd.entries()], [['n1', 'v1'], ['n2', 'v2'], ['n1', 'v3']]);
  assert.deepEqual([...fd.keys()], ['n1', 'n2', 'n1']);
  assert.deepEqual([...fd.values()], ['v1', 'v2', 'v3']);
  assert.equal(FormData.prototype[Symbol.iterator], FormData.prototype.entries);
  const it = fd.entries();
  assert.equal(Object.getPrototypeOf(Object.getPrototypeOf(it)), Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())));
});

test('wpt blob constructor', async () => {
  assert.equal(new Blob().size, 0);
  assert.equal(new Blob([]).type, '');
  assert.equal(await new Blob([undefined]).text(), 'undefined');
  assert.equal(await new Blob([null]).text(), 'null');
  assert.equal(await new Blob([12, true]).text(), '12true');
  assert.equal(await new Blob([{ toString: () => 'obj' }]).text(), 'obj');
  assert.equal(await new Blob(['\ud800']).text(), '\ufffd', 'lone surrogates become U+FFFD');
  assert.equal(new Blob([new Int16Array([1, 2])]).size, 4);
  assert.equal(new Blob([new DataView(new ArrayBuffer(3))]).size, 3);
  assert.equal(new Blob([], { type: 'a/b; c=D' }).type, 'a/b; c=d');
  assert.throws(() => new Blob(null), TypeError);
  assert.throws(() => new Blob(new Date()), TypeError);
  const sparse = [];
  sparse[2] = 'c';
  assert.equal(await new Blob(sparse).text(), 'undefinedundefinedc');
});

test('wpt blob slice', async () => {
  const blob = new Blob(['PASS0123456']);
  assert.equal(await blob.slice(0, 4).text(), 'PASS');
  assert.equal(await blob.slice(-11, -7).text(), 'PASS');
  assert.equal(await blob.slice(0, -7).text(), 'PASS');
  assert.equal(blob.slice().size, 11);
  assert.equal(blob.slice(5).size, 6);
  assert.equal(blob.slice(0, 4, 'TEXT/PLAIN').type, 'text/plain');
  assert.equal(blob.slice(0, 4, '\u00ff').type, '');
  const nested = new Blob([blob.slice(4), new Blob(['AB']).slice(1)]);
  assert.equal(await nested.text(), '0123456B');
});

test('wpt file constructor', async () => {
  const f = new File(['bits'], 'dummy');
  assert.equal(f.name, 'dummy');
  assert.equal(f.size, 4);
  assert.equal(f.type, '');
  assert.equal(new File([], 'a/b').name, 'a/b', 'slashes are kept');
  assert.equal(new File([], 'x', { lastModified: -42 }).lastModified, -42);
  assert.equal(new File([], 'x', { lastModified: 'nope' }).lastModified, 0);
  assert.equal(new File([], 'x', { type: 'A/B' }).type, 'a/b');
  assert.equal(await new File([new Blob(['ab']), 'c'], 'x').text(), 'abc');
});

test('wpt compression bad chunks', async () => {
  for (const format of ['gzip', 'deflate', 'deflate-raw']) {
    for (const bad of [undefined, null, 3.14, {}, [65], 'hello']) {
      const cs = new CompressionStream(format);
      const writer = cs.writable.getWriter();
      const reading = cs.readable.getReader().read();
      reading.catch(() => {});
      await assert.rejects(writer.write(bad), TypeError, undefined, `${format} ${String(bad)}`);
      await assert.rejects(reading, TypeError);
    }
  }
});

test('wpt compression empty and multiple chunks', async () => {
  for (const format of ['gzip', 'deflate', 'deflate-raw']) {
    const chunks = [enc('Hello'), new Uint8Array(0), enc(' '), enc('world')];
    const compressed = await new Response(new Blob(chunks).stream().pipeThrough(new CompressionStream(format))).arrayBuffer();
    const out = await new Response(new Blob([compressed]).stream().pipeThrough(new DecompressionStream(format))).text();
    assert.equal(out, 'Hello world', format);
  }
});

test('wpt decompression split and corrupt input', async () => {
  const compressed = new Uint8Array(await new Response(new Blob(['expected output']).stream()
    .pipeThrough(new CompressionStream('deflate'))).arrayBuffer());
  for (let split = 1; split < compressed.length; split += 3) {
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(compressed.slice(0, split));
        c.enqueue(compressed.slice(split));
        c.close();
      },
    });
    assert.equal(await new Response(stream.pipeThrough(new DecompressionStream('deflate'))).text(), 'expected output');
  }
  const corrupt = compressed.slice();
  corrupt[corrupt.length - 1] ^= 0xff; // the Adler-32 checksum
  const failing = new Blob([corrupt]).stream().pipeThrough(new DecompressionStream('deflate'));
  await assert.rejects(new Response(failing).arrayBuffer(), TypeError);
});

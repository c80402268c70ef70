// TextEncoder and TextDecoder (WHATWG Encoding), UTF-8 only.

const bytes = (...b) => new Uint8Array(b);

test('encode', () => {
  const e = new TextEncoder();
  assert.equal(e.encoding, 'utf-8');
  assert.deepEqual(e.encode('aé€😀'), bytes(0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80));
  assert.deepEqual(e.encode(), bytes());
  assert.deepEqual(e.encode(''), bytes());
  assert.deepEqual(e.encode(undefined), bytes());
  assert.deepEqual(e.encode(12), bytes(0x31, 0x32));
  assert(e.encode('x') instanceof Uint8Array);
});

test('encode replaces lone surrogates', () => {
  const e = new TextEncoder();
  assert.deepEqual(e.encode('\ud800'), bytes(0xef, 0xbf, 0xbd));
  assert.deepEqual(e.encode('a\udc00b'), bytes(0x61, 0xef, 0xbf, 0xbd, 0x62));
  assert.deepEqual(e.encode('\ud83d\ude00'), bytes(0xf0, 0x9f, 0x98, 0x80));
});

test('encodeInto', () => {
  const e = new TextEncoder();
  const dest = new Uint8Array(10);
  assert.deepEqual(e.encodeInto('aé', dest), { read: 2, written: 3 });
  assert.deepEqual(dest.subarray(0, 3), bytes(0x61, 0xc3, 0xa9));
});

test('encodeInto never writes a partial character', () => {
  const e = new TextEncoder();
  const dest = new Uint8Array(4);
  assert.deepEqual(e.encodeInto('ab€', dest), { read: 2, written: 2 });
  const dest2 = new Uint8Array(5);
  assert.deepEqual(e.encodeInto('a😀b', dest2), { read: 3, written: 5 });
  assert.deepEqual(e.encodeInto('😀', new Uint8Array(3)), { read: 0, written: 0 });
});

test('encodeInto requires a Uint8Array', () => {
  const e = new TextEncoder();
  assert.throws(() => e.encodeInto('a', new Uint16Array(4)), TypeError);
  assert.throws(() => e.encodeInto('a', new ArrayBuffer(4)), TypeError);
  assert.throws(() => e.encodeInto('a'), TypeError);
});

test('decode', () => {
  const d = new TextDecoder();
  assert.equal(d.encoding, 'utf-8');
  assert.equal(d.fatal, false);
  assert.equal(d.ignoreBOM, false);
  assert.equal(d.decode(bytes(0x61, 0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80)), 'aé😀');
  assert.equal(d.decode(), '');
  assert.equal(d.decode(undefined), '');
});

test('decode accepts any BufferSource', () => {
  const d = new TextDecoder();
  const ab = new Uint8Array([0x68, 0x69, 0x21, 0x21]).buffer;
  assert.equal(d.decode(ab), 'hi!!');
  assert.equal(d.decode(new DataView(ab, 1, 2)), 'i!');
  assert.equal(d.decode(new Uint16Array(ab, 0, 1)), 'hi');
  assert.equal(d.decode(new Uint8Array(ab, 2)), '!!');
  assert.throws(() => d.decode('string'), TypeError);
  assert.throws(() => d.decode([1, 2]), TypeError);
  assert.throws(() => d.decode(null), TypeError);
});

test('labels', () => {
  for (const label of ['utf-8', 'UTF-8', 'utf8', 'Utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8', ' utf-8\n', '\tUTF8 ']) {
    assert.equal(new TextDecoder(label).encoding, 'utf-8', label);
  }
});

test('other labels throw RangeError', () => {
  for (const label of ['latin1', 'utf-16le', 'windows-1252', 'ascii', 'bogus', '', 'utf-8x', 'utf\u00a08']) {
    assert.throws(() => new TextDecoder(label), RangeError, undefined);
  }
});

test('invalid UTF8 without fatal gives replacement characters', () => {
  const d = new TextDecoder();
  assert.equal(d.decode(bytes(0x61, 0xff, 0x62)), 'a\ufffdb');
  assert.equal(d.decode(bytes(0xc3)), '\ufffd', 'truncated sequence');
  assert.equal(d.decode(bytes(0xed, 0xa0, 0x80)), '\ufffd\ufffd\ufffd', 'encoded surrogate');
  assert.equal(d.decode(bytes(0xc0, 0x80)), '\ufffd\ufffd', 'overlong');
  assert.equal(d.decode(bytes(0xf0, 0x9f, 0x98)), '\ufffd', 'maximal subpart');
  assert.equal(d.decode(bytes(0xf0, 0x9f, 0x41)), '\ufffdA');
  assert.equal(d.decode(bytes(0xf4, 0x90, 0x80, 0x80)), '\ufffd\ufffd\ufffd\ufffd', 'above U+10FFFF');
});

test('invalid UTF8 with fatal throws TypeError', () => {
  const d = new TextDecoder('utf-8', { fatal: true });
  assert.equal(d.fatal, true);
  assert.throws(() => d.decode(bytes(0x61, 0xff)), TypeError);
  assert.throws(() => d.decode(bytes(0xc3)), TypeError);
  assert.throws(() => d.decode(bytes(0xed, 0xa0, 0x80)), TypeError);
  assert.equal(d.decode(bytes(0x61)), 'a', 'usable after an error');
});

test('fatal with stream holds back an incomplete tail then throws at the end', () => {
  const d = new TextDecoder('utf-8', { fatal: true });
  assert.equal(d.decode(bytes(0x61, 0xe2, 0x82), { stream: true }), 'a');
  assert.throws(() => d.decode(), TypeError);
});

test('BOM is stripped by default', () => {
  const d = new TextDecoder();
  assert.equal(d.decode(bytes(0xef, 0xbb, 0xbf, 0x61)), 'a');
  assert.equal(d.decode(bytes(0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf)), '\ufeff', 'only the first one');
  assert.equal(d.decode(bytes(0x61, 0xef, 0xbb, 0xbf)), 'a\ufeff', 'only at the start');
});

test('BOM is kept with ignoreBOM', () => {
  const d = new TextDecoder('utf-8', { ignoreBOM: true });
  assert.equal(d.ignoreBOM, true);
  assert.equal(d.decode(bytes(0xef, 0xbb, 0xbf, 0x61)), '\ufeffa');
});

test('BOM in streaming mode', () => {
  const d = new TextDecoder();
  assert.equal(d.decode(bytes(0xef, 0xbb), { stream: true }), '');
  assert.equal(d.decode(bytes(0xbf, 0x61), { stream: true }), 'a');
  assert.equal(d.decode(bytes(0xef, 0xbb, 0xbf), { stream: true }), '\ufeff', 'a later BOM is content');
  assert.equal(d.decode(), '');
  // After the end of a stream, a new one starts: its BOM is stripped again.
  assert.equal(d.decode(bytes(0xef, 0xbb, 0xbf, 0x62)), 'b');
});

test('streaming decode split in the middle of multi byte characters', () => {
  const all = new TextEncoder().encode('a€b😀c');
  for (let split = 0; split <= all.length; split++) {
    const d = new TextDecoder();
    const out = d.decode(all.subarray(0, split), { stream: true }) + d.decode(all.subarray(split));
    assert.equal(out, 'a€b😀c', `split at ${split}`);
  }
});

test('streaming decode one byte at a time', () => {
  const all = new TextEncoder().encode('€😀é');
  const d = new TextDecoder();
  let out = '';
  for (const b of all) out += d.decode(new Uint8Array([b]), { stream: true });
  out += d.decode();
  assert.equal(out, '€😀é');
});

test('an incomplete sequence at the end of a stream becomes a replacement character', () => {
  const d = new TextDecoder();
  assert.equal(d.decode(bytes(0x61, 0xe2, 0x82), { stream: true }), 'a');
  assert.equal(d.decode(), '\ufffd');
  assert.equal(d.decode(bytes(0x62)), 'b', 'fresh state afterwards');
});

test('invalid bytes in streaming mode are not held back', () => {
  const d = new TextDecoder();
  assert.equal(d.decode(bytes(0x61, 0xff), { stream: true }), 'a\ufffd');
  assert.equal(d.decode(bytes(0xe0, 0x80), { stream: true }), '\ufffd\ufffd', 'E0 80 can never complete');
});

test('options must be dictionaries', () => {
  assert.throws(() => new TextDecoder('utf-8', 5), TypeError);
  assert.throws(() => new TextDecoder().decode(new Uint8Array(1), 5), TypeError);
});

test('decoding does not depend on the input later', () => {
  const d = new TextDecoder();
  const input = bytes(0x61, 0xe2, 0x82);
  assert.equal(d.decode(input, { stream: true }), 'a');
  input[1] = 0x41;
  input[2] = 0x41;
  assert.equal(d.decode(bytes(0xac)), '€');
});

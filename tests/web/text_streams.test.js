// TextEncoderStream and TextDecoderStream (WHATWG Encoding), and the other small globals of the
// Minimum Common API: navigator, reportError, performance.timeOrigin, WebAssembly.

const through = transformAll;

test('TextEncoderStream encodes and joins a surrogate pair split across chunks', async () => {
  const s = new TextEncoderStream();
  assert.equal(s.encoding, 'utf-8');
  const out = await through(['a', '\ud83d', '\ude00b', '\ud800'], s);
  const bytes = new Uint8Array(out.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of out) { bytes.set(c, at); at += c.length; }
  assert.deepEqual(bytes, new Uint8Array([0x61, 0xf0, 0x9f, 0x98, 0x80, 0x62, 0xef, 0xbf, 0xbd]));
});

test('TextDecoderStream decodes a character split across chunks', async () => {
  const bytes = new TextEncoder().encode('h\u00e9\ud83d\ude00!');
  const chunks = [...bytes].map((b) => new Uint8Array([b]));
  const out = await through(chunks, new TextDecoderStream());
  assert.equal(out.join(''), 'h\u00e9\ud83d\ude00!');
  const fatal = new TextDecoderStream('utf-8', { fatal: true });
  assert.equal(fatal.fatal, true);
  assert.equal(fatal.ignoreBOM, false);
  await assert.rejects(through([new Uint8Array([0xff])], fatal), TypeError);
  assert.throws(() => new TextDecoderStream('latin1'), RangeError);
  await assert.rejects(through(['not bytes'], new TextDecoderStream()), TypeError);
});

test('pipeThrough a TextDecoderStream', async () => {
  const reader = new Response('piped').body.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    assert.equal(typeof value, 'string');
    text += value;
  }
  assert.equal(text, 'piped');
});

test('navigator userAgent', () => {
  assert.equal(navigator.userAgent, 'isolane');
  assert.equal(navigator.hardwareConcurrency, 1);
  assert(navigator instanceof Navigator);
  assert.throws(() => new Navigator(), TypeError);
});

test('reportError logs and does not throw', () => {
  const start = logsSince(0).length;
  reportError(new RangeError('reported'));
  const lines = logsSince(start);
  assert(lines.some(([level, text]) => level === 'error' && text.includes('reported')), JSON.stringify(lines));
  assert.throws(() => reportError(), TypeError);
});

test('performance timeOrigin is the epoch time of the context', () => {
  assert.equal(typeof performance.timeOrigin, 'number');
  assert(Math.abs(performance.timeOrigin + performance.now() - Date.now()) < 1000);
});

test('queuing strategies and BYOB readers exist', async () => {
  assert.equal(new ByteLengthQueuingStrategy({ highWaterMark: 16 }).size(new Uint8Array(5)), 5);
  assert.equal(new CountQueuingStrategy({ highWaterMark: 2 }).highWaterMark, 2);
  const reader = new Blob(['abc']).stream().getReader({ mode: 'byob' });
  assert(reader instanceof ReadableStreamBYOBReader);
  const { value } = await reader.read(new Uint8Array(8));
  assert.equal(value.byteLength, 3);
});

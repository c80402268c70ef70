// structuredClone (HTML).

test('plain values and nested objects', () => {
  const value = { a: 1, b: 'two', c: [true, null, undefined], d: { e: -0, f: NaN }, g: 10n };
  const copy = structuredClone(value);
  assert.notEqual(copy, value);
  assert.notEqual(copy.d, value.d);
  assert.deepEqual(copy, value);
  assert.equal(structuredClone('s'), 's');
  assert.equal(structuredClone(undefined), undefined);
});

test('Date Map Set RegExp', () => {
  const date = new Date(1700000000000);
  const copy = structuredClone({ date, map: new Map([[1, { x: 1 }]]), set: new Set(['a']), re: /x+/gi });
  assert(copy.date instanceof Date);
  assert.equal(copy.date.getTime(), date.getTime());
  assert(copy.map instanceof Map);
  assert.deepEqual(copy.map.get(1), { x: 1 });
  assert(copy.set instanceof Set);
  assert.equal(copy.set.has('a'), true);
  assert(copy.re instanceof RegExp);
  assert.equal(copy.re.source, 'x+');
  assert.equal(copy.re.flags, 'gi');
});

test('circular references are preserved', () => {
  const a = { name: 'a' };
  a.self = a;
  a.list = [a];
  const copy = structuredClone(a);
  assert.equal(copy.self, copy);
  assert.equal(copy.list[0], copy);
});

test('typed arrays and buffers are copied', () => {
  const u8 = new Uint8Array([1, 2, 3]);
  const copy = structuredClone(u8);
  assert(copy instanceof Uint8Array);
  assert.deepEqual(copy, u8);
  copy[0] = 9;
  assert.equal(u8[0], 1);
  const ab = structuredClone(new Uint16Array([258]).buffer);
  assert(ab instanceof ArrayBuffer);
  assert.deepEqual(new Uint8Array(ab), new Uint8Array(new Uint16Array([258]).buffer));
});

test('errors are cloned', () => {
  const copy = structuredClone(new RangeError('bad'));
  assert(copy instanceof RangeError);
  assert.equal(copy.message, 'bad');
});

test('class instances become plain objects', () => {
  class Point { constructor() { this.x = 1; } get y() { return 2; } }
  const copy = structuredClone(new Point());
  assert.equal(Object.getPrototypeOf(copy), Object.prototype);
  assert.deepEqual(copy, { x: 1 });
});

test('functions throw DataCloneError', () => {
  const e = assert.throws(() => structuredClone(() => {}), 'DataCloneError');
  assert(e instanceof DOMException);
  assert.equal(e.code, 25);
  assert.throws(() => structuredClone({ f() {} }), 'DataCloneError');
});

test('symbols throw DataCloneError', () => {
  assert.throws(() => structuredClone(Symbol('s')), 'DataCloneError');
  assert.throws(() => structuredClone({ s: Symbol.iterator }), 'DataCloneError');
});

test('argument is required', () => {
  assert.throws(() => structuredClone(), TypeError);
});

test('transferred buffers are detached and the clone keeps their bytes', () => {
  const buf = new Uint8Array([1, 2, 3]).buffer;
  const view = new Uint8Array(buf);
  const copy = structuredClone({ buf }, { transfer: [buf] });
  assert.deepEqual(Array.from(new Uint8Array(copy.buf)), [1, 2, 3]);
  assert.equal(buf.byteLength, 0);
  assert.equal(buf.detached, true);
  assert.equal(view.length, 0);
  assert.throws(() => structuredClone(buf, { transfer: [buf] }), 'DataCloneError');
  // A clone that fails transfers nothing.
  const kept = new ArrayBuffer(2);
  assert.throws(() => structuredClone({ f() {} }, { transfer: [kept] }), 'DataCloneError');
  assert.equal(kept.byteLength, 2);
});

test('transfer list is checked', () => {
  const buf = new ArrayBuffer(4);
  const copy = structuredClone(buf, { transfer: [buf] });
  assert(copy instanceof ArrayBuffer);
  assert.equal(copy.byteLength, 4);
  assert.throws(() => structuredClone(buf, { transfer: [buf, buf] }), 'DataCloneError');
  assert.throws(() => structuredClone(1, { transfer: 5 }), TypeError);
  assert.throws(() => structuredClone(1, { transfer: [{}] }), 'DataCloneError');
});

// crypto.getRandomValues, crypto.randomUUID, crypto.subtle.digest (W3C WebCrypto).

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

test('getRandomValues fills and returns the same array', () => {
  const a = new Uint8Array(64);
  const r = crypto.getRandomValues(a);
  assert.equal(r, a);
  assert(a.some((b) => b !== 0), 'not all zeros');
  for (const Ctor of [Int8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]) {
    const arr = new Ctor(4);
    assert.equal(crypto.getRandomValues(arr), arr, Ctor.name);
  }
  assert.equal(crypto.getRandomValues(new Uint8Array(0)).length, 0);
});

test('getRandomValues rejects float arrays and DataView with TypeMismatchError', () => {
  for (const view of [new Float32Array(1), new Float64Array(1), new DataView(new ArrayBuffer(1))]) {
    const e = assert.throws(() => crypto.getRandomValues(view), 'TypeMismatchError');
    assert(e instanceof DOMException);
    assert.equal(e.code, 17);
  }
});

test('getRandomValues rejects non views with TypeError', () => {
  assert.throws(() => crypto.getRandomValues(new ArrayBuffer(4)), TypeError);
  assert.throws(() => crypto.getRandomValues([1, 2]), TypeError);
  assert.throws(() => crypto.getRandomValues(), TypeError);
});

test('getRandomValues quota is 65536 bytes', () => {
  assert.equal(crypto.getRandomValues(new Uint8Array(65536)).length, 65536);
  assert.equal(crypto.getRandomValues(new Uint32Array(16384)).length, 16384);
  const e = assert.throws(() => crypto.getRandomValues(new Uint8Array(65537)), 'QuotaExceededError');
  assert.equal(e.code, 22);
  assert.throws(() => crypto.getRandomValues(new Uint16Array(32769)), 'QuotaExceededError');
});

test('getRandomValues works detached from crypto only via call', () => {
  const { getRandomValues } = crypto;
  assert.throws(() => getRandomValues(new Uint8Array(1)), TypeError);
  assert.equal(getRandomValues.call(crypto, new Uint8Array(1)).length, 1);
});

test('randomUUID', () => {
  const ids = new Set();
  for (let i = 0; i < 50; i++) {
    const id = crypto.randomUUID();
    assert(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id), id);
    ids.add(id);
  }
  assert.equal(ids.size, 50);
});

test('digest known answers', async () => {
  const data = new TextEncoder().encode('abc');
  assert.equal(hex(await crypto.subtle.digest('SHA-1', data)), 'a9993e364706816aba3e25717850c26c9cd0d89d');
  assert.equal(hex(await crypto.subtle.digest('SHA-256', data)), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(hex(await crypto.subtle.digest('SHA-384', data)), 'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7');
  assert.equal(hex(await crypto.subtle.digest('SHA-512', data)), 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f');
  assert.equal(hex(await crypto.subtle.digest('SHA-256', new Uint8Array(0))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
});

test('digest algorithm names are case insensitive and may be objects', async () => {
  const data = new TextEncoder().encode('abc');
  const expected = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
  assert.equal(hex(await crypto.subtle.digest('sha-256', data)), expected);
  assert.equal(hex(await crypto.subtle.digest({ name: 'Sha-256' }, data)), expected);
  assert.equal(hex(await crypto.subtle.digest('SHA-256', data.buffer)), expected);
  assert.equal(hex(await crypto.subtle.digest('SHA-256', new DataView(data.buffer))), expected);
});

test('digest returns a Promise of an ArrayBuffer', async () => {
  const p = crypto.subtle.digest('SHA-1', new Uint8Array(1));
  assert(p instanceof Promise);
  assert((await p) instanceof ArrayBuffer);
  assert.equal((await p).byteLength, 20);
});

test('digest of an unknown algorithm rejects with NotSupportedError', async () => {
  const e = await assert.rejects(crypto.subtle.digest('MD5', new Uint8Array(1)), 'NotSupportedError');
  assert(e instanceof DOMException);
  await assert.rejects(crypto.subtle.digest('SHA-257', new Uint8Array(1)), 'NotSupportedError');
  await assert.rejects(crypto.subtle.digest({ name: 'SHA256' }, new Uint8Array(1)), 'NotSupportedError');
});

test('digest argument errors reject with TypeError', async () => {
  await assert.rejects(crypto.subtle.digest('SHA-256', 'string'), TypeError);
  await assert.rejects(crypto.subtle.digest('SHA-256'), TypeError);
  await assert.rejects(crypto.subtle.digest({}, new Uint8Array(1)), TypeError);
});

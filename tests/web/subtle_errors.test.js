// crypto.subtle error paths: every method rejects (never throws), with the spec's error for each
// case; hostile arguments (throwing getters, detached and resized buffers, huge sizes, rewritten
// prototypes) are rejected or handled without reaching past the bytes given.

const utf8 = (s) => new TextEncoder().encode(s);
const subtle = crypto.subtle;

test('every method returns a promise even for bad arguments', async () => {
  const methods = ['digest', 'encrypt', 'decrypt', 'sign', 'verify', 'generateKey', 'importKey', 'exportKey',
    'deriveBits', 'deriveKey', 'wrapKey', 'unwrapKey'];
  for (const m of methods) {
    const p = subtle[m]();
    assert(p instanceof Promise, m);
    await assert.rejects(p, TypeError);
  }
  await assert.rejects(subtle.sign.call({}, 'HMAC', {}, new Uint8Array(1)), TypeError);
  assert.throws(() => new SubtleCrypto(), TypeError);
});

test('unknown algorithms are NotSupportedError and wrong key usage is InvalidAccessError', async () => {
  await assert.rejects(subtle.generateKey('RSA-KEM', true, ['sign']), 'NotSupportedError');
  await assert.rejects(subtle.generateKey({ name: 'HMAC', hash: 'MD5' }, true, ['sign']), 'NotSupportedError');
  await assert.rejects(subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-192' }, true, ['sign']), 'NotSupportedError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(16), 'DES', true, ['encrypt']), 'NotSupportedError');
  const hmac = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  await assert.rejects(subtle.encrypt('HMAC', hmac, new Uint8Array(1)), 'NotSupportedError');
  await assert.rejects(subtle.verify('HMAC', hmac, new Uint8Array(32), new Uint8Array(1)), 'InvalidAccessError');
  const aes = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']);
  await assert.rejects(subtle.decrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, aes, new Uint8Array(32)), 'InvalidAccessError');
  await assert.rejects(subtle.encrypt({ name: 'AES-CBC', iv: new Uint8Array(16) }, aes, new Uint8Array(32)), 'InvalidAccessError');
  await assert.rejects(subtle.sign('HMAC', aes, new Uint8Array(1)), 'InvalidAccessError');
  const { publicKey, privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  await assert.rejects(subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, publicKey, new Uint8Array(1)), 'InvalidAccessError');
  await assert.rejects(subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, new Uint8Array(64), new Uint8Array(1)), 'InvalidAccessError');
  await assert.rejects(subtle.sign({ name: 'ECDSA' }, privateKey, new Uint8Array(1)), TypeError);
  await assert.rejects(subtle.sign('Ed25519', privateKey, new Uint8Array(1)), 'InvalidAccessError');
  // A wrong-size ECDSA signature is not valid, not an error.
  assert.equal(await subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, publicKey, new Uint8Array(63), new Uint8Array(1)), false);
});

test('usages are checked with SyntaxError and TypeError', async () => {
  await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, []), 'SyntaxError');
  await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['sign']), 'SyntaxError');
  await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['bogus']), TypeError);
  await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, 'encrypt'), TypeError);
  await assert.rejects(subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']), 'SyntaxError');
  await assert.rejects(subtle.generateKey('Ed25519', true, ['encrypt']), 'SyntaxError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(16), 'AES-CBC', true, []), 'SyntaxError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(16), { name: 'HMAC', hash: 'SHA-256' }, true, ['encrypt']), 'SyntaxError');
  await assert.rejects(subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['sign']), 'SyntaxError');
  // A public key may have no usages.
  const { publicKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
  const pub = await subtle.importKey('spki', await subtle.exportKey('spki', publicKey), { name: 'ECDSA', namedCurve: 'P-256' }, true, []);
  assert.deepEqual(pub.usages, []);
  // Usages from any iterable.
  const key = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, new Set(['encrypt']));
  assert.deepEqual(key.usages, ['encrypt']);
});

test('key sizes out of bounds are refused', async () => {
  const rsa = (modulusLength, publicExponent = new Uint8Array([1, 0, 1])) => subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength, publicExponent, hash: 'SHA-256' }, true, ['sign']);
  await assert.rejects(rsa(512), 'OperationError');
  await assert.rejects(rsa(1000), 'OperationError');
  await assert.rejects(rsa(1 << 20), 'OperationError');
  await assert.rejects(rsa(2 ** 32), TypeError);
  await assert.rejects(rsa(2048, new Uint8Array([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])), 'OperationError');
  await assert.rejects(rsa(2048, new Uint8Array([2])), 'OperationError');
  await assert.rejects(rsa(2048, [1, 0, 1]), TypeError);
  await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 64 }, true, ['encrypt']), 'OperationError');
  await assert.rejects(subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 0 }, true, ['sign']), 'OperationError');
  await assert.rejects(subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 2 ** 31 }, true, ['sign']), 'OperationError');
  await assert.rejects(subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: -1 }, true, ['sign']), TypeError);
  await assert.rejects(subtle.importKey('raw', new Uint8Array(1 << 20), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']), 'DataError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(65537), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']), 'DataError');
  const hmac = await subtle.importKey('raw', new Uint8Array(65536), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify']);
  assert.equal(await subtle.verify('HMAC', hmac, new Uint8Array(1 << 20), new Uint8Array(1)), false);
  const ec = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  assert.equal(await subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, ec.publicKey, new Uint8Array(1 << 17), new Uint8Array(1)), false);
  const oaep = await subtle.generateKey({ name: 'RSA-OAEP', modulusLength: 1024, publicExponent: new Uint8Array([3]), hash: 'SHA-1' }, false, ['encrypt', 'decrypt']);
  await assert.rejects(subtle.encrypt('RSA-OAEP', oaep.publicKey, new Uint8Array(1 << 17)), 'OperationError');
  await assert.rejects(subtle.decrypt('RSA-OAEP', oaep.privateKey, new Uint8Array(1 << 17)), 'OperationError');
  await assert.rejects(subtle.decrypt('RSA-OAEP', oaep.privateKey, new Uint8Array(128)), 'OperationError');
});

test('throwing getters on algorithm objects reject with what they threw', async () => {
  const boom = new Error('boom');
  const alg = { get name() { throw boom; } };
  assert.equal(await assert.rejects(subtle.digest(alg, new Uint8Array(1))), boom);
  assert.equal(await assert.rejects(subtle.generateKey(alg, true, ['sign'])), boom);
  const hashGetter = { name: 'HMAC', get hash() { throw boom; } };
  assert.equal(await assert.rejects(subtle.generateKey(hashGetter, true, ['sign'])), boom);
  const key = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['encrypt']);
  const ivGetter = { name: 'AES-GCM', get iv() { throw boom; } };
  assert.equal(await assert.rejects(subtle.encrypt(ivGetter, key, new Uint8Array(1))), boom);
  const usages = { [Symbol.iterator]() { throw boom; } };
  assert.equal(await assert.rejects(subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, usages)), boom);
  const jwk = { kty: 'oct', get k() { throw boom; } };
  assert.equal(await assert.rejects(subtle.importKey('jwk', jwk, 'AES-GCM', true, ['encrypt'])), boom);
  await assert.rejects(subtle.importKey('jwk', null, 'AES-GCM', true, ['encrypt']), TypeError);
  await assert.rejects(subtle.importKey('raw', 'not bytes', 'AES-GCM', true, ['encrypt']), TypeError);
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: 'x' }, key, new Uint8Array(1)), TypeError);
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(12), tagLength: 1e9 }, key, new Uint8Array(1)), TypeError);
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(12) }, {}, new Uint8Array(1)), TypeError);
});

test('detached and resized buffers are read as they are at the call', async () => {
  const key = await subtle.importKey('raw', new Uint8Array(16), 'AES-CTR', true, ['encrypt', 'decrypt']);
  const counter = new Uint8Array(16);
  const data = new Uint8Array(64).fill(1);
  // The data is copied when the call is made: detaching it afterwards changes nothing.
  const p = subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, key, data);
  data.buffer.transfer();
  assert.equal((await p).byteLength, 64);
  // A detached buffer holds no bytes.
  const gone = new ArrayBuffer(32);
  const goneView = new DataView(gone);
  gone.transfer();
  assert.equal((await subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, key, gone)).byteLength, 0);
  assert.equal((await subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, key, goneView)).byteLength, 0);
  assert.equal((await subtle.digest('SHA-256', goneView)).byteLength, 32);
  const detachedIv = new Uint8Array(12);
  detachedIv.buffer.transfer();
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: detachedIv }, await subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']), data), 'OperationError');
  // A length-tracking view of a resizable buffer that shrank reads only what is left.
  const rab = new ArrayBuffer(64, { maxByteLength: 128 });
  const view = new Uint8Array(rab);
  rab.resize(16);
  assert.equal((await subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, key, view)).byteLength, 16);
  rab.resize(128);
  assert.equal((await subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, key, view)).byteLength, 128);
  // A SharedArrayBuffer is not a BufferSource.
  if (typeof SharedArrayBuffer === 'function') {
    await assert.rejects(subtle.digest('SHA-256', new Uint8Array(new SharedArrayBuffer(8))), TypeError);
  }
});

test('rewritten prototypes do not change what crypto subtle does', async () => {
  const saved = {
    slice: Uint8Array.prototype.slice, push: Array.prototype.push, includes: Array.prototype.includes,
    toUpperCase: String.prototype.toUpperCase, ctor: Uint8Array.prototype.constructor,
  };
  const x = utf8('x');
  let leaked = null;
  try {
    Array.prototype.push = function () { throw new Error('push'); };
    Array.prototype.includes = function () { return true; };
    String.prototype.toUpperCase = function () { return 'HMAC'; };
    Uint8Array.prototype.slice = function () { leaked = this; return saved.slice.call(this); };
    Object.defineProperty(Uint8Array.prototype, 'constructor', { value: function () { throw new Error('species'); }, configurable: true, writable: true });
    const key = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify']);
    const sig = await subtle.sign('HMAC', key, x);
    assert.equal(await subtle.verify('HMAC', key, sig, x), true);
    await assert.rejects(subtle.sign('Bogus', key, x), 'NotSupportedError');
    await assert.rejects(subtle.encrypt('AES-GCM', key, x), TypeError);
    const raw = await subtle.exportKey('raw', key);
    assert.equal(raw.byteLength, 64);
    const jwk = await subtle.exportKey('jwk', key);
    assert.equal(jwk.kty, 'oct');
    assert.equal(leaked, null, 'key material never passed through an app-visible method');
  } finally {
    Uint8Array.prototype.slice = saved.slice;
    Array.prototype.push = saved.push;
    Array.prototype.includes = saved.includes;
    String.prototype.toUpperCase = saved.toUpperCase;
    Object.defineProperty(Uint8Array.prototype, 'constructor', { value: saved.ctor, configurable: true, writable: true });
  }
});

test('key material is not reachable from the CryptoKey object', async () => {
  const key = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']);
  assert.deepEqual(Reflect.ownKeys(key), []);
  const names = Reflect.ownKeys(CryptoKey.prototype).filter((k) => typeof k === 'string').sort();
  assert.deepEqual(names, ['algorithm', 'constructor', 'extractable', 'type', 'usages']);
  assert.equal(structuredClone(key.algorithm).name, 'AES-GCM');
});

test('a JWK unwrapped into a non extractable key is not shown to Object prototype getters', async () => {
  const kek = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['wrapKey', 'unwrapKey']);
  const hmac = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
  const gcm = { name: 'AES-GCM', iv: new Uint8Array(12) };
  const wrapped = await subtle.wrapKey('jwk', hmac, kek, gcm);
  const secret = (await subtle.exportKey('jwk', hmac)).k;
  const seen = [];
  const names = ['use', 'oth', 'key_ops', 'ext', 'alg', 'd', 'p', 'q', 'crv', 'x', 'y', 'n', 'e'];
  const saved = names.map((n) => [n, Object.getOwnPropertyDescriptor(Object.prototype, n)]);
  try {
    for (const n of names) {
      Object.defineProperty(Object.prototype, n, {
        configurable: true,
        get() { if (this && typeof this.k === 'string') seen.push(this.k); return undefined; },
      });
    }
    const key = await subtle.unwrapKey('jwk', wrapped, kek, gcm, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    assert.equal(key.extractable, false);
  } finally {
    for (const [n, d] of saved) {
      if (d) Object.defineProperty(Object.prototype, n, d); else delete Object.prototype[n];
    }
  }
  assert.equal(seen.includes(secret), false, 'the unwrapped secret reached an app getter');
});

test('PBKDF2 bounds iterations times output blocks and GCM ivs are at most 128 bytes', async () => {
  const password = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
  const salt = utf8('salt');
  await assert.rejects(subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt, iterations: 1000000 }, password, 8 * 20 * 11),
    'OperationError');
  const ok = await subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt, iterations: 1000 }, password, 8 * 20 * 11);
  assert.equal(ok.byteLength, 220);
  const key = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']);
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(129) }, key, utf8('x')), 'OperationError');
  const sealed = await subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(128) }, key, utf8('x'));
  assert.equal(sealed.byteLength, 17);
});

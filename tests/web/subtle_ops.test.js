// crypto.subtle operations beyond the known answers: AES round trips and tampering, ECDH,
// deriveKey, wrapKey/unwrapKey in JWK form.

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const utf8 = (s) => new TextEncoder().encode(s);
const subtle = crypto.subtle;

test('AES GCM round trip and tampering is an OperationError', async () => {
  const key = await subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const additionalData = utf8('header');
  const c = await subtle.encrypt({ name: 'AES-GCM', iv, additionalData }, key, utf8('hello'));
  assert(c instanceof ArrayBuffer);
  assert.equal(c.byteLength, 5 + 16);
  assert.equal(new TextDecoder().decode(await subtle.decrypt({ name: 'AES-GCM', iv, additionalData }, key, c)), 'hello');
  const tampered = new Uint8Array(c);
  tampered[0] ^= 1;
  await assert.rejects(subtle.decrypt({ name: 'AES-GCM', iv, additionalData }, key, tampered), 'OperationError');
  await assert.rejects(subtle.decrypt({ name: 'AES-GCM', iv }, key, c), 'OperationError');
  await assert.rejects(subtle.decrypt({ name: 'AES-GCM', iv, additionalData }, key, new Uint8Array(15)), 'OperationError');
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(0) }, key, c), 'OperationError');
  await assert.rejects(subtle.encrypt({ name: 'AES-GCM', iv, tagLength: 100 }, key, c), 'OperationError');
  // Empty plaintext: the tag alone.
  assert.equal((await subtle.encrypt({ name: 'AES-GCM', iv, tagLength: 32 }, key, new Uint8Array(0))).byteLength, 4);
});

test('AES CBC and CTR round trips and bad parameters', async () => {
  const cbc = await subtle.generateKey({ name: 'AES-CBC', length: 128 }, false, ['encrypt', 'decrypt']);
  const iv = new Uint8Array(16);
  for (const size of [0, 1, 15, 16, 17, 1000]) {
    const data = crypto.getRandomValues(new Uint8Array(size));
    const c = await subtle.encrypt({ name: 'AES-CBC', iv }, cbc, data);
    assert.equal(c.byteLength, (Math.floor(size / 16) + 1) * 16);
    assert.equal(hex(await subtle.decrypt({ name: 'AES-CBC', iv }, cbc, c)), hex(data));
  }
  await assert.rejects(subtle.encrypt({ name: 'AES-CBC', iv: new Uint8Array(8) }, cbc, iv), 'OperationError');
  await assert.rejects(subtle.decrypt({ name: 'AES-CBC', iv }, cbc, new Uint8Array(15)), 'OperationError');
  const ctr = await subtle.generateKey({ name: 'AES-CTR', length: 192 }, false, ['encrypt', 'decrypt']);
  const data = crypto.getRandomValues(new Uint8Array(100));
  const c = await subtle.encrypt({ name: 'AES-CTR', counter: iv, length: 64 }, ctr, data);
  assert.equal(c.byteLength, 100);
  assert.equal(hex(await subtle.decrypt({ name: 'AES-CTR', counter: iv, length: 64 }, ctr, c)), hex(data));
  await assert.rejects(subtle.encrypt({ name: 'AES-CTR', counter: iv, length: 0 }, ctr, data), 'OperationError');
  await assert.rejects(subtle.encrypt({ name: 'AES-CTR', counter: iv, length: 129 }, ctr, data), 'OperationError');
  await assert.rejects(subtle.encrypt({ name: 'AES-CTR', counter: new Uint8Array(15), length: 64 }, ctr, data), 'OperationError');
  await assert.rejects(subtle.encrypt({ name: 'AES-CTR', counter: iv }, ctr, data), TypeError);
});

test('ECDH derives the same bits on both sides and checks the curve', async () => {
  for (const namedCurve of ['P-256', 'P-384', 'P-521']) {
    const a = await subtle.generateKey({ name: 'ECDH', namedCurve }, true, ['deriveBits', 'deriveKey']);
    const b = await subtle.generateKey({ name: 'ECDH', namedCurve }, true, ['deriveBits']);
    const ab = await subtle.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, null);
    const ba = await subtle.deriveBits({ name: 'ECDH', public: a.publicKey }, b.privateKey);
    assert.equal(hex(ab), hex(ba));
    const size = { 'P-256': 32, 'P-384': 48, 'P-521': 66 }[namedCurve];
    assert.equal(ab.byteLength, size);
    const part = new Uint8Array(await subtle.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, 12));
    assert.equal(part.length, 2);
    assert.equal(part[0], new Uint8Array(ab)[0]);
    assert.equal(part[1], new Uint8Array(ab)[1] & 0xf0);
    await assert.rejects(subtle.deriveBits({ name: 'ECDH', public: b.publicKey }, a.privateKey, size * 8 + 8), 'OperationError');
    await assert.rejects(subtle.deriveBits({ name: 'ECDH', public: a.privateKey }, b.privateKey, 8), 'InvalidAccessError');
  }
  const p256 = await subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
  const p384 = await subtle.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, true, ['deriveBits']);
  await assert.rejects(subtle.deriveBits({ name: 'ECDH', public: p384.publicKey }, p256.privateKey, 8), 'InvalidAccessError');
  const x = await subtle.generateKey('X25519', true, ['deriveBits']);
  await assert.rejects(subtle.deriveBits({ name: 'ECDH', public: x.publicKey }, p256.privateKey, 8), 'InvalidAccessError');
  await assert.rejects(subtle.deriveBits({ name: 'ECDH', public: {} }, p256.privateKey, 8), TypeError);
});

test('deriveKey from PBKDF2 HKDF and ECDH', async () => {
  const pw = await subtle.importKey('raw', utf8('password'), 'PBKDF2', false, ['deriveKey', 'deriveBits']);
  const aes = await subtle.deriveKey({ name: 'PBKDF2', salt: utf8('salt'), iterations: 1000, hash: 'SHA-256' }, pw,
    { name: 'AES-GCM', length: 256 }, true, ['encrypt', 'decrypt']);
  assert.equal(aes.algorithm.name, 'AES-GCM');
  assert.equal(aes.algorithm.length, 256);
  const bits = await subtle.deriveBits({ name: 'PBKDF2', salt: utf8('salt'), iterations: 1000, hash: 'SHA-256' }, pw, 256);
  assert.equal(hex(await subtle.exportKey('raw', aes)), hex(bits));
  const ikm = await subtle.importKey('raw', new Uint8Array(32), 'HKDF', false, ['deriveKey']);
  const hmac = await subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8('x') }, ikm,
    { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  assert.equal(hmac.algorithm.length, 512);
  await assert.rejects(subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8('x') }, ikm,
    { name: 'AES-GCM', length: 100 }, false, ['encrypt']), 'OperationError');
  await assert.rejects(subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8('x') }, ikm,
    { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']), 'NotSupportedError');
  await assert.rejects(subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8('x') }, ikm, 256),
    'InvalidAccessError');
  const a = await subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveKey']);
  const b = await subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveKey']);
  const k1 = await subtle.deriveKey({ name: 'ECDH', public: b.publicKey }, a.privateKey, { name: 'AES-KW', length: 128 }, true, ['wrapKey']);
  const k2 = await subtle.deriveKey({ name: 'ECDH', public: a.publicKey }, b.privateKey, { name: 'AES-KW', length: 128 }, true, ['wrapKey']);
  assert.equal(hex(await subtle.exportKey('raw', k1)), hex(await subtle.exportKey('raw', k2)));
});

test('PBKDF2 and HKDF length rules', async () => {
  const pw = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
  const params = { name: 'PBKDF2', salt: utf8('salt'), iterations: 1, hash: 'SHA-256' };
  await assert.rejects(subtle.deriveBits(params, pw), 'OperationError');
  await assert.rejects(subtle.deriveBits(params, pw, 7), 'OperationError');
  await assert.rejects(subtle.deriveBits({ ...params, iterations: 0 }, pw, 256), 'OperationError');
  await assert.rejects(subtle.deriveBits({ ...params, iterations: 1e9 }, pw, 256), 'OperationError');
  await assert.rejects(subtle.deriveBits(params, pw, 2 ** 31), 'OperationError');
  await assert.rejects(subtle.deriveBits({ ...params, hash: 'MD5' }, pw, 256), 'NotSupportedError');
  const ikm = await subtle.importKey('raw', new Uint8Array(16), 'HKDF', false, ['deriveBits']);
  const hkdf = { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: new Uint8Array(0) };
  assert.equal((await subtle.deriveBits(hkdf, ikm, 255 * 256)).byteLength, 255 * 32);
  await assert.rejects(subtle.deriveBits(hkdf, ikm, 255 * 256 + 8), 'OperationError');
  await assert.rejects(subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', info: new Uint8Array(0) }, ikm, 256), TypeError);
});

test('wrapKey and unwrapKey in JWK form with AES GCM', async () => {
  const kek = await subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['wrapKey', 'unwrapKey']);
  const { privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const iv = new Uint8Array(12);
  const wrapped = await subtle.wrapKey('jwk', privateKey, kek, { name: 'AES-GCM', iv });
  const back = await subtle.unwrapKey('jwk', wrapped, kek, { name: 'AES-GCM', iv }, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
  assert.equal(back.type, 'private');
  assert.equal((await subtle.exportKey('jwk', back)).d, (await subtle.exportKey('jwk', privateKey)).d);
  const pkcs8 = await subtle.wrapKey('pkcs8', privateKey, kek, { name: 'AES-GCM', iv });
  const back2 = await subtle.unwrapKey('pkcs8', pkcs8, kek, { name: 'AES-GCM', iv }, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  assert.equal(back2.extractable, false);
  // Not JSON after decryption: DataError. Not extractable: InvalidAccessError.
  const notJson = await subtle.encrypt({ name: 'AES-GCM', iv }, await subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']), new Uint8Array(4));
  await assert.rejects(subtle.unwrapKey('jwk', notJson, kek, { name: 'AES-GCM', iv }, 'AES-GCM', true, ['encrypt']), 'OperationError');
  await assert.rejects(subtle.wrapKey('raw', kek, kek, { name: 'AES-GCM', iv }), 'InvalidAccessError');
  const raw = await subtle.importKey('raw', new Uint8Array(32), 'AES-GCM', false, ['wrapKey', 'unwrapKey', 'encrypt']);
  const text = await subtle.encrypt({ name: 'AES-GCM', iv }, raw, utf8('not json'));
  await assert.rejects(subtle.unwrapKey('jwk', text, raw, { name: 'AES-GCM', iv }, 'AES-GCM', true, ['encrypt']), 'DataError');
});

test('RSA key generation and PBKDF2 let timers run meanwhile', async () => {
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 0);
  try {
    await subtle.generateKey({ name: 'RSA-PSS', modulusLength: 3072, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
      false, ['sign']);
    const generating = ticks;
    const pw = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
    await subtle.deriveBits({ name: 'PBKDF2', salt: utf8('salt'), iterations: 200000, hash: 'SHA-256' }, pw, 256);
    assert(generating > 0, 'a timer ran while the key was generated');
    assert(ticks > generating, 'a timer ran while PBKDF2 ran');
  } finally {
    clearInterval(timer);
  }
});

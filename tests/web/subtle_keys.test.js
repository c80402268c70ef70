// crypto.subtle keys: CryptoKey, generateKey, importKey and exportKey in every format, round
// trips and cross checks between formats.

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const utf8 = (s) => new TextEncoder().encode(s);
const subtle = crypto.subtle;

test('CryptoKey is not constructible and its attributes are read only views', async () => {
  assert.equal(typeof CryptoKey, 'function');
  assert.throws(() => new CryptoKey(), TypeError);
  assert.throws(() => CryptoKey(), TypeError);
  const key = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify', 'sign']);
  assert(key instanceof CryptoKey);
  assert.equal(Object.prototype.toString.call(key), '[object CryptoKey]');
  assert.equal(key.type, 'secret');
  assert.equal(key.extractable, true);
  assert.deepEqual(key.usages, ['sign', 'verify']);
  assert.equal(key.usages, key.usages, 'the same array each time');
  assert.equal(key.algorithm, key.algorithm, 'the same object each time');
  assert.equal(key.algorithm.name, 'HMAC');
  assert.equal(key.algorithm.length, 512);
  // Changing what the app was given changes nothing inside.
  key.algorithm.name = 'AES-GCM';
  key.usages.length = 0;
  assert.equal(await subtle.verify('HMAC', key, await subtle.sign('HMAC', key, utf8('x')), utf8('x')), true);
  assert.deepEqual(Object.keys(key), []);
  assert.throws(() => Object.getOwnPropertyDescriptor(CryptoKey.prototype, 'type').get.call({}), TypeError);
});

test('generateKey AES and HMAC then export raw and jwk', async () => {
  for (const [name, length, alg] of [['AES-GCM', 128, 'A128GCM'], ['AES-CBC', 192, 'A192CBC'], ['AES-CTR', 256, 'A256CTR'], ['AES-KW', 256, 'A256KW']]) {
    const usages = name === 'AES-KW' ? ['wrapKey', 'unwrapKey'] : ['encrypt', 'decrypt'];
    const key = await subtle.generateKey({ name, length }, true, usages);
    assert.equal(key.algorithm.length, length);
    const raw = await subtle.exportKey('raw', key);
    assert(raw instanceof ArrayBuffer);
    assert.equal(raw.byteLength, length / 8);
    const jwk = await subtle.exportKey('jwk', key);
    assert.equal(jwk.kty, 'oct');
    assert.equal(jwk.alg, alg);
    const again = await subtle.importKey('jwk', jwk, name, true, usages);
    assert.equal(hex(await subtle.exportKey('raw', again)), hex(raw));
  }
  const hmac = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-384' }, true, ['sign']);
  assert.equal(hmac.algorithm.length, 1024);
  const jwk = await subtle.exportKey('jwk', hmac);
  assert.equal(jwk.alg, 'HS384');
  const sized = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign']);
  assert.equal(sized.algorithm.length, 256);
  await assert.rejects(subtle.exportKey('raw', sized), 'InvalidAccessError');
});

test('ECDSA keys in every format agree', async () => {
  for (const [namedCurve, hash, size] of [['P-256', 'SHA-256', 64], ['P-384', 'SHA-384', 96], ['P-521', 'SHA-512', 132]]) {
    const { publicKey, privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve }, true, ['sign', 'verify']);
    assert.equal(publicKey.type, 'public');
    assert.equal(privateKey.type, 'private');
    assert.deepEqual(publicKey.usages, ['verify']);
    assert.deepEqual(privateKey.usages, ['sign']);
    assert.equal(publicKey.algorithm.namedCurve, namedCurve);
    const data = utf8('message');
    const sig = await subtle.sign({ name: 'ECDSA', hash }, privateKey, data);
    assert.equal(sig.byteLength, size, 'raw r||s, not DER');
    const spki = await subtle.importKey('spki', await subtle.exportKey('spki', publicKey), { name: 'ECDSA', namedCurve }, true, ['verify']);
    const raw = await subtle.importKey('raw', await subtle.exportKey('raw', publicKey), { name: 'ECDSA', namedCurve }, true, ['verify']);
    const jwkPub = await subtle.exportKey('jwk', publicKey);
    assert.equal(jwkPub.kty, 'EC');
    assert.equal(jwkPub.crv, namedCurve);
    assert.equal(jwkPub.d, undefined);
    const jwk = await subtle.importKey('jwk', jwkPub, { name: 'ECDSA', namedCurve }, true, ['verify']);
    for (const key of [publicKey, spki, raw, jwk]) {
      assert.equal(await subtle.verify({ name: 'ECDSA', hash }, key, sig, data), true);
      assert.equal(await subtle.verify({ name: 'ECDSA', hash }, key, sig, utf8('other')), false);
    }
    // Sign with the JWK-imported and the PKCS #8-imported private key; verify with the SPKI one.
    const jwkPriv = await subtle.importKey('jwk', await subtle.exportKey('jwk', privateKey), { name: 'ECDSA', namedCurve }, false, ['sign']);
    const pkcs8 = await subtle.importKey('pkcs8', await subtle.exportKey('pkcs8', privateKey), { name: 'ECDSA', namedCurve }, false, ['sign']);
    for (const key of [jwkPriv, pkcs8]) {
      assert.equal(await subtle.verify({ name: 'ECDSA', hash }, spki, await subtle.sign({ name: 'ECDSA', hash }, key, data), data), true);
    }
  }
});

test('RSA keys sign and verify with PKCS1 v1_5 and PSS across formats', async () => {
  const alg = { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };
  const { publicKey, privateKey } = await subtle.generateKey(alg, true, ['sign', 'verify']);
  assert.equal(publicKey.algorithm.modulusLength, 2048);
  assert.deepEqual(publicKey.algorithm.publicExponent, new Uint8Array([1, 0, 1]));
  assert.equal(publicKey.algorithm.hash.name, 'SHA-256');
  const data = utf8('payload');
  const jwk = await subtle.exportKey('jwk', privateKey);
  assert.equal(jwk.alg, 'RS256');
  for (const m of ['n', 'e', 'd', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(typeof jwk[m], 'string', m);
  const fromJwk = await subtle.importKey('jwk', jwk, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
  const spki = await subtle.importKey('spki', await subtle.exportKey('spki', publicKey), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['verify']);
  const sig = await subtle.sign('RSASSA-PKCS1-v1_5', fromJwk, data);
  assert.equal(sig.byteLength, 256);
  assert.equal(hex(sig), hex(await subtle.sign('RSASSA-PKCS1-v1_5', privateKey, data)), 'PKCS1 v1_5 is deterministic');
  assert.equal(await subtle.verify('RSASSA-PKCS1-v1_5', spki, sig, data), true);
  assert.equal(await subtle.verify('RSASSA-PKCS1-v1_5', spki, sig, utf8('other')), false);
  // The same key material as RSA-PSS.
  const pssPriv = await subtle.importKey('pkcs8', await subtle.exportKey('pkcs8', privateKey), { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['sign']);
  const pssPub = await subtle.importKey('jwk', { ...(await subtle.exportKey('jwk', publicKey)), alg: 'PS256' }, { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['verify']);
  const pss = await subtle.sign({ name: 'RSA-PSS', saltLength: 32 }, pssPriv, data);
  assert.equal(await subtle.verify({ name: 'RSA-PSS', saltLength: 32 }, pssPub, pss, data), true);
  assert.equal(await subtle.verify({ name: 'RSA-PSS', saltLength: 0 }, pssPub, pss, data), false);
  assert.equal(await subtle.verify({ name: 'RSA-PSS', saltLength: 100000 }, pssPub, pss, data), false);
  await assert.rejects(subtle.sign({ name: 'RSA-PSS', saltLength: 1000 }, pssPriv, data), 'OperationError');
});

test('RSA OAEP encrypts with the public key and decrypts with the private key', async () => {
  const { publicKey, privateKey } = await subtle.generateKey(
    { name: 'RSA-OAEP', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true,
    ['encrypt', 'decrypt', 'wrapKey', 'unwrapKey']);
  assert.deepEqual(publicKey.usages, ['encrypt', 'wrapKey']);
  assert.deepEqual(privateKey.usages, ['decrypt', 'unwrapKey']);
  const label = utf8('label');
  const c = await subtle.encrypt({ name: 'RSA-OAEP', label }, publicKey, utf8('secret'));
  assert.equal(c.byteLength, 256);
  assert.equal(new TextDecoder().decode(await subtle.decrypt({ name: 'RSA-OAEP', label }, privateKey, c)), 'secret');
  await assert.rejects(subtle.decrypt({ name: 'RSA-OAEP' }, privateKey, c), 'OperationError');
  await assert.rejects(subtle.encrypt('RSA-OAEP', publicKey, new Uint8Array(300)), 'OperationError');
  assert.equal((await subtle.exportKey('jwk', publicKey)).alg, 'RSA-OAEP-256');
  // Wrap an AES key as JWK with RSA-OAEP.
  const aes = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['encrypt']);
  const wrapped = await subtle.wrapKey('raw', aes, publicKey, 'RSA-OAEP');
  const back = await subtle.unwrapKey('raw', wrapped, privateKey, { name: 'RSA-OAEP' }, 'AES-GCM', true, ['encrypt']);
  assert.equal(hex(await subtle.exportKey('raw', back)), hex(await subtle.exportKey('raw', aes)));
});

test('Ed25519 and X25519 generate import and export', async () => {
  const { publicKey, privateKey } = await subtle.generateKey('Ed25519', true, ['sign', 'verify']);
  const data = utf8('eddsa');
  const sig = await subtle.sign('Ed25519', privateKey, data);
  assert.equal(sig.byteLength, 64);
  const spki = await subtle.importKey('spki', await subtle.exportKey('spki', publicKey), 'Ed25519', true, ['verify']);
  const jwk = await subtle.importKey('jwk', await subtle.exportKey('jwk', publicKey), 'Ed25519', true, ['verify']);
  assert.equal(await subtle.verify('Ed25519', spki, sig, data), true);
  assert.equal(await subtle.verify('Ed25519', jwk, sig, data), true);
  const pkcs8 = await subtle.importKey('pkcs8', await subtle.exportKey('pkcs8', privateKey), 'Ed25519', false, ['sign']);
  assert.equal(hex(await subtle.sign('Ed25519', pkcs8, data)), hex(sig), 'Ed25519 is deterministic');

  const a = await subtle.generateKey('X25519', true, ['deriveBits']);
  const b = await subtle.generateKey({ name: 'X25519' }, true, ['deriveBits', 'deriveKey']);
  assert.deepEqual(a.publicKey.usages, []);
  const ab = await subtle.deriveBits({ name: 'X25519', public: b.publicKey }, a.privateKey, 256);
  const ba = await subtle.deriveBits({ name: 'X25519', public: a.publicKey }, b.privateKey, null);
  assert.equal(hex(ab), hex(ba));
  const raw = await subtle.importKey('raw', await subtle.exportKey('raw', b.publicKey), 'X25519', true, []);
  assert.equal(hex(await subtle.deriveBits({ name: 'X25519', public: raw }, a.privateKey, 128)), hex(ab).slice(0, 32));
});

test('importKey checks JWK members and alg', async () => {
  const { privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
  const jwk = await subtle.exportKey('jwk', privateKey);
  const imp = (j, alg = { name: 'ECDSA', namedCurve: 'P-256' }, usages = ['sign']) => subtle.importKey('jwk', j, alg, true, usages);
  await imp({ ...jwk, alg: 'ES256' });
  await assert.rejects(imp({ ...jwk, alg: 'ES384' }), 'DataError');
  await assert.rejects(imp({ ...jwk, crv: 'P-384' }), 'DataError');
  await assert.rejects(imp(jwk, { name: 'ECDSA', namedCurve: 'P-384' }), 'DataError');
  await assert.rejects(imp({ ...jwk, kty: 'RSA' }), 'DataError');
  await assert.rejects(imp({ ...jwk, x: 'not base64url!' }), 'DataError');
  await assert.rejects(imp({ ...jwk, x: jwk.y }), 'DataError');
  await assert.rejects(imp({ ...jwk, d: jwk.x }), 'DataError');
  await assert.rejects(imp({ ...jwk, ext: false }), 'DataError');
  await assert.rejects(imp({ ...jwk, key_ops: ['verify'] }), 'DataError');
  await assert.rejects(imp({ ...jwk, use: 'enc' }), 'DataError');
  const hmac = await subtle.importKey('jwk', { kty: 'oct', k: 'AAECAw', alg: 'HS256' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
  assert.equal(hmac.algorithm.length, 32);
  await assert.rejects(subtle.importKey('jwk', { kty: 'oct', k: 'AAECAw', alg: 'HS512' }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']), 'DataError');
  await assert.rejects(subtle.importKey('jwk', { kty: 'oct', k: 'AAECAw' }, 'AES-GCM', true, ['encrypt']), 'DataError');
  await assert.rejects(subtle.importKey('jwk', { kty: 'RSA', n: 'AQAB', e: 'AQAB' }, { name: 'RSA-PSS', hash: 'SHA-256' }, true, ['verify']), 'DataError');
  // RSA private members that do not agree.
  const rsa = await subtle.exportKey('jwk', (await subtle.generateKey(
    { name: 'RSA-PSS', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign'])).privateKey);
  const rsaImport = (j) => subtle.importKey('jwk', j, { name: 'RSA-PSS', hash: 'SHA-256' }, true, ['sign']);
  await rsaImport(rsa);
  for (const bad of [{ dp: rsa.dq }, { qi: rsa.dp }, { p: rsa.q, q: rsa.p }, { d: rsa.dp }, { e: 'Aw' }, { q: undefined }]) {
    await assert.rejects(rsaImport({ ...rsa, ...bad }), 'DataError');
  }
  await assert.rejects(subtle.importKey('spki', new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']), 'DataError');
  await assert.rejects(subtle.importKey('pkcs8', new Uint8Array(100), 'Ed25519', true, ['sign']), 'DataError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(31), 'Ed25519', true, ['verify']), 'DataError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(65), { name: 'ECDH', namedCurve: 'P-256' }, true, []), 'DataError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(15), 'AES-CBC', true, ['encrypt']), 'DataError');
  await assert.rejects(subtle.importKey('raw', new Uint8Array(0), { name: 'HMAC', hash: 'SHA-1' }, true, ['sign']), 'DataError');
  // A P-256 SPKI is not a P-384 key, and an Ed25519 SPKI is not an ECDSA key.
  const p256 = await subtle.exportKey('spki', (await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign'])).publicKey);
  await assert.rejects(subtle.importKey('spki', p256, { name: 'ECDSA', namedCurve: 'P-384' }, true, ['verify']), 'DataError');
  const ed = await subtle.exportKey('spki', (await subtle.generateKey('Ed25519', true, ['sign'])).publicKey);
  await assert.rejects(subtle.importKey('spki', ed, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']), 'DataError');
});

test('exportKey format rules', async () => {
  const { publicKey, privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  await assert.rejects(subtle.exportKey('pkcs8', publicKey), 'InvalidAccessError');
  await assert.rejects(subtle.exportKey('spki', privateKey), 'InvalidAccessError');
  await assert.rejects(subtle.exportKey('raw', privateKey), 'InvalidAccessError');
  const aes = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['encrypt']);
  await assert.rejects(subtle.exportKey('spki', aes), 'NotSupportedError');
  await assert.rejects(subtle.exportKey('bogus', aes), TypeError);
  const pbkdf2 = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
  await assert.rejects(subtle.exportKey('raw', pbkdf2), 'InvalidAccessError');
  await assert.rejects(subtle.importKey('raw', utf8('pw'), 'PBKDF2', true, ['deriveBits']), 'SyntaxError');
  await assert.rejects(subtle.importKey('jwk', { kty: 'oct', k: 'AA' }, 'HKDF', false, ['deriveBits']), 'NotSupportedError');
});

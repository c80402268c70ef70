// crypto.subtle known answers: RFC 4231 (HMAC), RFC 8032 (Ed25519), RFC 5869 (HKDF), RFC 6070
// (PBKDF2), the GCM specification's test cases (AES-GCM), SP 800-38A (AES-CBC, AES-CTR),
// RFC 3394 (AES-KW).

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (s) => new Uint8Array(s.match(/../g)?.map((h) => parseInt(h, 16)) ?? []);
const utf8 = (s) => new TextEncoder().encode(s);
const subtle = crypto.subtle;

test('HMAC RFC 4231 cases 1 and 2', async () => {
  const key1 = new Uint8Array(20).fill(0x0b);
  const k256 = await subtle.importKey('raw', key1, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  assert.equal(hex(await subtle.sign('HMAC', k256, utf8('Hi There'))),
    'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7');
  const k512 = await subtle.importKey('raw', key1, { name: 'HMAC', hash: { name: 'SHA-512' } }, false, ['sign']);
  assert.equal(hex(await subtle.sign({ name: 'HMAC' }, k512, utf8('Hi There'))),
    '87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854');
  const jefe = await subtle.importKey('raw', utf8('Jefe'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  const mac = await subtle.sign('HMAC', jefe, utf8('what do ya want for nothing?'));
  assert.equal(hex(mac), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  assert.equal(await subtle.verify('HMAC', jefe, mac, utf8('what do ya want for nothing?')), true);
  assert.equal(await subtle.verify('HMAC', jefe, mac, utf8('what do ya want for nothing!')), false);
  assert.equal(await subtle.verify('HMAC', jefe, mac.slice(1), utf8('what do ya want for nothing?')), false);
  assert.equal(jefe.algorithm.length, 32);
  assert.equal(jefe.algorithm.hash.name, 'SHA-256');
});

test('Ed25519 RFC 8032 test 1', async () => {
  const d = unhex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
  const x = unhex('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
  const b64u = (u8) => btoa(String.fromCharCode(...u8)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const jwk = { kty: 'OKP', crv: 'Ed25519', x: b64u(x), d: b64u(d) };
  const priv = await subtle.importKey('jwk', jwk, 'Ed25519', true, ['sign']);
  const sig = await subtle.sign('Ed25519', priv, new Uint8Array(0));
  assert.equal(hex(sig), 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b');
  const pub = await subtle.importKey('raw', x, { name: 'Ed25519' }, true, ['verify']);
  assert.equal(await subtle.verify('Ed25519', pub, sig, new Uint8Array(0)), true);
  assert.equal(await subtle.verify('Ed25519', pub, sig, new Uint8Array(1)), false);
  assert.equal(hex(await subtle.exportKey('raw', pub)), hex(x));
  const exported = await subtle.exportKey('jwk', priv);
  assert.equal(exported.x, jwk.x);
  assert.equal(exported.d, jwk.d);
  assert.equal(exported.kty, 'OKP');
  assert.equal(exported.crv, 'Ed25519');
  assert.deepEqual(exported.key_ops, ['sign']);
  assert.equal(exported.ext, true);
});

test('HKDF RFC 5869 case 1', async () => {
  const key = await subtle.importKey('raw', new Uint8Array(22).fill(0x0b), 'HKDF', false, ['deriveBits']);
  const bits = await subtle.deriveBits({
    name: 'HKDF', hash: 'SHA-256', salt: unhex('000102030405060708090a0b0c'), info: unhex('f0f1f2f3f4f5f6f7f8f9'),
  }, key, 42 * 8);
  assert.equal(hex(bits), '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865');
});

test('PBKDF2 RFC 6070', async () => {
  const key = await subtle.importKey('raw', utf8('password'), 'PBKDF2', false, ['deriveBits']);
  const derive = (iterations) => subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt: utf8('salt'), iterations }, key, 160);
  assert.equal(hex(await derive(1)), '0c60c80f961f0e71f3a9b524af6012062fe037a6');
  assert.equal(hex(await derive(2)), 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957');
  assert.equal(hex(await derive(4096)), '4b007901b765489abead49d926f721d065a429c1');
});

test('AES GCM test cases 3 and 4', async () => {
  const key = await subtle.importKey('raw', unhex('feffe9928665731c6d6a8f9467308308'), 'AES-GCM', true, ['encrypt', 'decrypt']);
  const iv = unhex('cafebabefacedbaddecaf888');
  const p = unhex('d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255');
  const c3 = await subtle.encrypt({ name: 'AES-GCM', iv }, key, p);
  assert.equal(hex(c3), '42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985' +
    '4d5c2af327cd64a62cf35abd2ba6fab4');
  const aad = unhex('feedfacedeadbeeffeedfacedeadbeefabaddad2');
  const c4 = await subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad }, key, p.subarray(0, 60));
  assert.equal(hex(c4), '42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091' +
    '5bc94fbc3221a5db94fae95ae7121a47');
  assert.equal(hex(await subtle.decrypt({ name: 'AES-GCM', iv, additionalData: aad }, key, c4)), hex(p.subarray(0, 60)));
  // A 96-bit tag is the first 12 bytes of the full one.
  const short = await subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad, tagLength: 96 }, key, p.subarray(0, 60));
  assert.equal(hex(short).slice(-24), '5bc94fbc3221a5db94fae95a');
});

test('AES CBC and CTR SP 800 38A', async () => {
  const raw = unhex('2b7e151628aed2a6abf7158809cf4f3c');
  const cbc = await subtle.importKey('raw', raw, { name: 'AES-CBC' }, false, ['encrypt', 'decrypt']);
  const block = unhex('6bc1bee22e409f96e93d7e117393172a');
  const c = await subtle.encrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, cbc, block);
  assert.equal(c.byteLength, 32, 'a whole block of PKCS #7 padding follows');
  assert.equal(hex(c).slice(0, 32), '7649abac8119b246cee98e9b12e9197d');
  assert.equal(hex(await subtle.decrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, cbc, c)), hex(block));
  const ctr = await subtle.importKey('raw', raw, 'AES-CTR', false, ['encrypt', 'decrypt']);
  const counter = unhex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
  assert.equal(hex(await subtle.encrypt({ name: 'AES-CTR', counter, length: 64 }, ctr, block)), '874d6191b620e3261bef6864990db6ce');
});

test('AES CTR counter wraps within its length', async () => {
  const ctr = await subtle.importKey('raw', new Uint8Array(16).fill(7), 'AES-CTR', false, ['encrypt']);
  const data = new Uint8Array(40).fill(0x55);
  const counter = unhex('0102030405060708090a0b0c0d0e0fff');
  const wrapped = await subtle.encrypt({ name: 'AES-CTR', counter, length: 8 }, ctr, data);
  // Block 0 uses ...ff; blocks 1 and 2 use ...00 and ...01 (the low 8 bits wrap, the rest stays).
  const first = await subtle.encrypt({ name: 'AES-CTR', counter, length: 128 }, ctr, data.subarray(0, 16));
  const rest = await subtle.encrypt({ name: 'AES-CTR', counter: unhex('0102030405060708090a0b0c0d0e0f00'), length: 128 }, ctr, data.subarray(16));
  assert.equal(hex(wrapped), hex(first) + hex(rest));
  // 2 bits of counter give 4 blocks, no more.
  await subtle.encrypt({ name: 'AES-CTR', counter, length: 2 }, ctr, new Uint8Array(64));
  await assert.rejects(subtle.encrypt({ name: 'AES-CTR', counter, length: 2 }, ctr, new Uint8Array(65)), 'OperationError');
});

test('AES KW RFC 3394', async () => {
  const kek = await subtle.importKey('raw', unhex('000102030405060708090a0b0c0d0e0f'), 'AES-KW', false, ['wrapKey', 'unwrapKey']);
  const key = await subtle.importKey('raw', unhex('00112233445566778899aabbccddeeff'), 'AES-GCM', true, ['encrypt']);
  const wrapped = await subtle.wrapKey('raw', key, kek, 'AES-KW');
  assert.equal(hex(wrapped), '1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5');
  const back = await subtle.unwrapKey('raw', wrapped, kek, 'AES-KW', 'AES-GCM', true, ['decrypt']);
  assert.equal(hex(await subtle.exportKey('raw', back)), '00112233445566778899aabbccddeeff');
  assert.deepEqual(back.usages, ['decrypt']);
  const bad = new Uint8Array(wrapped);
  bad[3] ^= 1;
  await assert.rejects(subtle.unwrapKey('raw', bad, kek, 'AES-KW', 'AES-GCM', true, ['decrypt']), 'OperationError');
});

test('HKDF and PBKDF2 with empty key material and salt', async () => {
  // The expected values are Node's (crypto.hkdfSync, crypto.pbkdf2Sync) for the same inputs.
  const ikm = await subtle.importKey('raw', new Uint8Array(0), 'HKDF', false, ['deriveBits']);
  const empty = new Uint8Array(0);
  assert.equal(hex(await subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: empty, info: empty }, ikm, 128)),
    'eb70f01dede9afafa449eee1b1286504');
  const pw = await subtle.importKey('raw', new Uint8Array(0), 'PBKDF2', false, ['deriveBits']);
  assert.equal(hex(await subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: empty, iterations: 1 }, pw, 128)),
    'f7ce0b653d2d72a4108cf5abe912ffdd');
});

// The crypto.subtle natives of src/web/README.md for tools/dev/web-node-runner.mjs, written with
// node:crypto (dev only: the real ones are src/web/subtle_*.cc over the same OpenSSL). They take
// and return what the C++ ones do; argument checks are looser (the JS side checks first).
import crypto from 'node:crypto';

const CURVES = { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' };
const FROM_OPENSSL = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };
const TYPES = { RSA: 'rsa', EC: 'ec', Ed25519: 'ed25519', X25519: 'x25519' };
const HASHES = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };
const RSA_MEMBERS = ['n', 'e', 'd', 'p', 'q', 'dp', 'dq', 'qi'];

// As src/web/subtle_keys.cc's rsaConsistent: the CRT members agree with n, e and d.
function rsaConsistent(jwk) {
  const big = (m) => BigInt(`0x${Buffer.from(jwk[m] ?? '', 'base64url').toString('hex') || '0'}`);
  const [n, e, d, p, q, dp, dq, qi] = ['n', 'e', 'd', 'p', 'q', 'dp', 'dq', 'qi'].map(big);
  if (p <= 1n || q <= 1n || n % 2n === 0n || e % 2n === 0n || e === 1n) return false;
  return n === p * q && dp === d % (p - 1n) && dq === d % (q - 1n) && (e * dp) % (p - 1n) === 1n &&
    (e * dq) % (q - 1n) === 1n && (qi * q) % p === 1n;
}

export function subtleNatives(realm) {
  const bytes = (buf) => {
    const u = new realm.Uint8Array(buf.length);
    u.set(buf);
    return u;
  };
  const buffer = (buf) => bytes(buf).buffer;
  const array = (...items) => realm.Array.of(...items);
  const named = (name, message) => {
    const e = new realm.Error(message);
    Object.defineProperty(e, 'name', { value: name, writable: true, configurable: true, enumerable: true });
    return e;
  };
  const b64 = (u8) => Buffer.from(u8).toString('base64url');
  const unb64 = (s) => Buffer.from(s, 'base64url');
  const attempt = (name, message, fn) => {
    try { return fn(); } catch { throw named(name, message); }
  };
  const pub = (der) => attempt('DataError', 'invalid key data',
    () => crypto.createPublicKey({ key: Buffer.from(der), format: 'der', type: 'spki' }));
  const priv = (der) => attempt('DataError', 'invalid key data',
    () => crypto.createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' }));
  const der = (key) => (key.type === 'private'
    ? key.export({ format: 'der', type: 'pkcs8' }) : key.export({ format: 'der', type: 'spki' }));
  const describe = (kind, key) => {
    if (key.asymmetricKeyType !== TYPES[kind]) throw named('DataError', 'the key is not of the algorithm\'s type');
    const d = key.asymmetricKeyDetails;
    if (kind === 'RSA') {
      if (d.modulusLength < 1024 || d.modulusLength > 16384) throw named('DataError', 'bad modulus size');
      if (key.type === 'private' && !rsaConsistent(key.export({ format: 'jwk' }))) {
        throw named('DataError', 'the RSA key\'s members do not agree');
      }
      let e = d.publicExponent.toString(16);
      if (e.length % 2) e = `0${e}`;
      return array(bytes(der(key)), d.modulusLength, bytes(Buffer.from(e, 'hex')));
    }
    if (kind === 'EC') return array(bytes(der(key)), FROM_OPENSSL[d.namedCurve]);
    return array(bytes(der(key)));
  };
  const keyOf = (kind, format, data, curve) => {
    if (format === 'spki') return pub(data);
    if (format === 'pkcs8') return priv(data);
    let jwk;
    if (kind === 'EC') {
      const n = (data.length - 1) / 2;
      if (data[0] !== 4 || !Number.isInteger(n)) throw named('DataError', 'invalid key data');
      jwk = { kty: 'EC', crv: curve, x: b64(data.subarray(1, 1 + n)), y: b64(data.subarray(1 + n)) };
    } else {
      jwk = { kty: 'OKP', crv: kind, x: b64(data) };
    }
    return attempt('DataError', 'invalid key data', () => crypto.createPublicKey({ key: jwk, format: 'jwk' }));
  };
  const cipherName = (mode, key) => {
    const bits = key.length * 8;
    return mode === 'KW' ? `id-aes${bits}-wrap` : `aes-${bits}-${mode.toLowerCase()}`;
  };
  const run = (name, encrypt, key, iv, data, options) => {
    const c = encrypt ? crypto.createCipheriv(name, key, iv, options) : crypto.createDecipheriv(name, key, iv, options);
    return [c, (input) => Buffer.concat([c.update(input), c.final()])];
  };
  // As the C++ natives with a callbacks object: the work runs on libuv's threads, the outcome
  // comes later from the event loop.
  const later = (callbacks, start) => {
    start((error, values) => {
      if (error) callbacks.onError(error.name, error.message);
      else callbacks.onDone(...values);
    });
  };
  return {
    subtleGenerateKeyPair(kind, a, exponent, callbacks) {
      if (callbacks && kind === 'RSA') {
        const e = Number.parseInt(Buffer.from(exponent).toString('hex') || '0', 16);
        if (!(a >= 1024 && a <= 8192 && a % 8 === 0) || (e !== 3 && e !== 65537)) {
          throw named('OperationError', 'bad RSA parameters');
        }
        return later(callbacks, (done) => crypto.generateKeyPair('rsa', { modulusLength: a, publicExponent: e },
          (error, publicKey, privateKey) => done(error, error ? null : [bytes(der(privateKey)), bytes(der(publicKey))])));
      }
      let pair;
      if (kind === 'RSA') {
        const e = Number.parseInt(Buffer.from(exponent).toString('hex') || '0', 16);
        if (!(a >= 1024 && a <= 8192 && a % 8 === 0) || (e !== 3 && e !== 65537)) {
          throw named('OperationError', 'bad RSA parameters');
        }
        pair = crypto.generateKeyPairSync('rsa', { modulusLength: a, publicExponent: e });
      } else if (kind === 'EC') {
        pair = crypto.generateKeyPairSync('ec', { namedCurve: CURVES[a] });
      } else {
        pair = crypto.generateKeyPairSync(TYPES[kind]);
      }
      return array(bytes(der(pair.privateKey)), bytes(der(pair.publicKey)));
    },
    subtleImportKey(kind, format, data, curve) {
      const key = keyOf(kind, format, Buffer.from(data), curve);
      return describe(kind, key);
    },
    subtleImportJwk(kind, curve, parts) {
      let jwk;
      if (kind === 'RSA') {
        jwk = { kty: 'RSA' };
        parts.forEach((p, i) => { jwk[RSA_MEMBERS[i]] = b64(p); });
      } else if (kind === 'EC') {
        jwk = { kty: 'EC', crv: curve, x: b64(parts[0]), y: b64(parts[1]) };
        if (parts[2]) jwk.d = b64(parts[2]);
      } else {
        jwk = { kty: 'OKP', crv: kind, x: b64(parts[0]) };
        if (parts[1]) jwk.d = b64(parts[1]);
      }
      const key = attempt('DataError', 'invalid key data', () => (jwk.d
        ? crypto.createPrivateKey({ key: jwk, format: 'jwk' })
        : crypto.createPublicKey({ key: jwk, format: 'jwk' })));
      if (key.type === 'private' && kind !== 'RSA') {
        const x = crypto.createPublicKey(key).export({ format: 'jwk' }).x;
        if (x !== jwk.x) throw named('DataError', 'the public key does not match');
      }
      return describe(kind, key);
    },
    subtleExportKey(keyDer, isPrivate, format) {
      const key = isPrivate ? priv(keyDer) : pub(keyDer);
      const jwk = key.export({ format: 'jwk' });
      if (format === 'raw') {
        if (jwk.kty === 'EC') return bytes(Buffer.concat([Buffer.of(4), unb64(jwk.x), unb64(jwk.y)]));
        return bytes(unb64(jwk.x));
      }
      const names = jwk.kty === 'RSA' ? RSA_MEMBERS.slice(0, isPrivate ? 8 : 2)
        : jwk.kty === 'EC' ? ['x', 'y', ...(isPrivate ? ['d'] : [])] : ['x', ...(isPrivate ? ['d'] : [])];
      return array(...names.map((n) => bytes(unb64(jwk[n]))));
    },
    subtleSign(alg, hash, key, data, saltLength) {
      if (alg === 'HMAC') return buffer(crypto.createHmac(HASHES[hash], key).update(data).digest());
      const k = priv(key);
      return buffer(attempt('OperationError', 'signing failed', () => crypto.sign(alg === 'Ed25519' ? null : HASHES[hash], data, {
        key: k,
        dsaEncoding: 'ieee-p1363',
        padding: alg === 'RSA-PSS' ? crypto.constants.RSA_PKCS1_PSS_PADDING : undefined,
        saltLength: alg === 'RSA-PSS' ? saltLength : undefined,
      })));
    },
    subtleVerify(alg, hash, key, signature, data, saltLength) {
      if (alg === 'HMAC') {
        const mac = crypto.createHmac(HASHES[hash], key).update(data).digest();
        return mac.length === signature.length && crypto.timingSafeEqual(mac, signature);
      }
      try {
        return crypto.verify(alg === 'Ed25519' ? null : HASHES[hash], data, {
          key: pub(key),
          dsaEncoding: 'ieee-p1363',
          padding: alg === 'RSA-PSS' ? crypto.constants.RSA_PKCS1_PSS_PADDING : undefined,
          saltLength: alg === 'RSA-PSS' ? saltLength : undefined,
        }, signature);
      } catch {
        return false;
      }
    },
    subtleAes(mode, encrypt, key, iv, data, aad, n) {
      const name = cipherName(mode, key);
      return attempt('OperationError', 'the operation failed', () => {
        if (mode === 'GCM') {
          const tagBytes = n / 8;
          const [c] = run(name, encrypt, key, iv, data, { authTagLength: tagBytes });
          c.setAAD(aad);
          if (encrypt) {
            const out = Buffer.concat([c.update(data), c.final()]);
            return buffer(Buffer.concat([out, c.getAuthTag()]));
          }
          c.setAuthTag(data.subarray(data.length - tagBytes));
          return buffer(Buffer.concat([c.update(data.subarray(0, data.length - tagBytes)), c.final()]));
        }
        if (mode === 'KW') return buffer(run(name, encrypt, key, Buffer.from('A6A6A6A6A6A6A6A6', 'hex'), data)[1](data));
        if (mode === 'CBC') return buffer(run(name, encrypt, key, iv, data)[1](data));
        // CTR, wrapping at the low n bits of the counter block.
        const block = BigInt(`0x${Buffer.from(iv).toString('hex')}`);
        const mask = (1n << BigInt(n)) - 1n;
        const left = mask - (block & mask) + 1n;
        const blocks = BigInt(Math.ceil(data.length / 16));
        if (n < 128 && blocks > (1n << BigInt(n))) throw new Error('counter too short');
        if (blocks <= left) return buffer(run(name, encrypt, key, iv, data)[1](data));
        const first = Number(left) * 16;
        const wrapped = Buffer.from((block & ~mask).toString(16).padStart(32, '0'), 'hex');
        return buffer(Buffer.concat([run(name, encrypt, key, iv, data)[1](data.subarray(0, first)),
          run(name, encrypt, key, wrapped, data)[1](data.subarray(first))]));
      });
    },
    subtleRsaOaep(encrypt, hash, key, data, label) {
      const options = {
        key: encrypt ? pub(key) : priv(key), padding: crypto.constants.RSA_PKCS1_OAEP_PADDING,
        oaepHash: HASHES[hash], oaepLabel: label.length ? label : undefined,
      };
      return buffer(attempt('OperationError', 'RSA-OAEP failed',
        () => (encrypt ? crypto.publicEncrypt(options, data) : crypto.privateDecrypt(options, data))));
    },
    subtlePbkdf2: (hash, password, salt, iterations, bits, callbacks) => later(callbacks,
      (done) => crypto.pbkdf2(password, salt, iterations, bits / 8, HASHES[hash],
        (error, out) => done(error, error ? null : [bytes(out)]))),
    subtleHkdf: (hash, key, salt, info, bits) => buffer(attempt('OperationError', 'HKDF failed',
      () => Buffer.from(crypto.hkdfSync(HASHES[hash], key, salt, info, bits / 8)))),
    subtleEcdh: (own, peer) => buffer(attempt('OperationError', 'key agreement failed',
      () => crypto.diffieHellman({ privateKey: priv(own), publicKey: pub(peer) }))),
  };
}

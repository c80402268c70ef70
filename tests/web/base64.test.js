// atob and btoa (HTML forgiving-base64).

test('btoa encodes latin1 strings', () => {
  assert.equal(btoa(''), '');
  assert.equal(btoa('f'), 'Zg==');
  assert.equal(btoa('fo'), 'Zm8=');
  assert.equal(btoa('foo'), 'Zm9v');
  assert.equal(btoa('foobar'), 'Zm9vYmFy');
  assert.equal(btoa('\x00\xff\xfe'), 'AP/+');
  assert.equal(btoa('é'), '6Q==');
  assert.equal(btoa(123), 'MTIz');
  assert.equal(btoa(null), 'bnVsbA==');
});

test('btoa of a character above 0xFF throws InvalidCharacterError', () => {
  const e = assert.throws(() => btoa('€'), 'InvalidCharacterError');
  assert(e instanceof DOMException);
  assert.equal(e.code, 5);
  assert.throws(() => btoa('abc\u0100'), 'InvalidCharacterError');
  assert.throws(() => btoa('\ud83d\ude00'), 'InvalidCharacterError');
});

test('atob decodes', () => {
  assert.equal(atob(''), '');
  assert.equal(atob('Zg=='), 'f');
  assert.equal(atob('Zm8='), 'fo');
  assert.equal(atob('Zm9v'), 'foo');
  assert.equal(atob('AP/+'), '\x00\xff\xfe');
});

test('atob accepts missing padding', () => {
  assert.equal(atob('Zg'), 'f');
  assert.equal(atob('Zm8'), 'fo');
});

test('atob strips ASCII whitespace', () => {
  assert.equal(atob(' Zm 9v\t\n\f\rYmFy '), 'foobar');
  assert.equal(atob('Zg= ='), 'f');
});

test('atob rejects bad input with InvalidCharacterError', () => {
  for (const input of ['Z', 'Zm9vY', 'Zg=', 'Zm8==', 'Zg===', '====', '=Zg=', 'Zm=9', 'Zm9v!', 'Zm9v-_', 'Zg==Zg==', 'é', 'Zm\u00a09v', 'Zm\vv']) {
    assert.throws(() => atob(input), 'InvalidCharacterError');
  }
});

test('atob ignores trailing bits', () => {
  assert.equal(atob('Zh=='), 'f');
  assert.equal(atob('Zm9='), 'fo');
});

test('round trip of every byte', () => {
  let s = '';
  for (let i = 0; i < 256; i++) s += String.fromCharCode(i);
  assert.equal(atob(btoa(s)), s);
  const long = s.repeat(100);
  assert.equal(atob(btoa(long)), long);
});

test('arguments are required', () => {
  assert.throws(() => atob(), TypeError);
  assert.throws(() => btoa(), TypeError);
  // undefined is the 9-character string "undefined": 9 % 4 === 1 is never valid.
  assert.throws(() => atob(undefined), 'InvalidCharacterError');
  assert.equal(btoa(undefined), 'dW5kZWZpbmVk');
});

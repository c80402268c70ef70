// FormData (XMLHttpRequest Standard), formData() on requests and responses (multipart/form-data
// and application/x-www-form-urlencoded), and FormData as a body.

const enc = (s) => new TextEncoder().encode(s);

test('append get getAll has delete set', () => {
  const f = new FormData();
  f.append('a', '1');
  f.append('b', '2');
  f.append('a', '3');
  assert.equal(f.get('a'), '1');
  assert.deepEqual(f.getAll('a'), ['1', '3']);
  assert.equal(f.get('missing'), null);
  assert.deepEqual(f.getAll('missing'), []);
  assert(f.has('b'));
  f.set('a', '9');
  assert.deepEqual([...f], [['a', '9'], ['b', '2']]);
  f.delete('a');
  assert.equal(f.has('a'), false);
  assert.deepEqual([...f.keys()], ['b']);
  assert.deepEqual([...f.values()], ['2']);
  f.set('c', 'new');
  assert.deepEqual([...f.entries()], [['b', '2'], ['c', 'new']]);
  assert.equal(Object.prototype.toString.call(f), '[object FormData]');
  assert.equal(Object.prototype.toString.call(f.entries()), '[object FormData Iterator]');
});

test('values are USVStrings and Blobs become Files', () => {
  const f = new FormData();
  f.append('n', 42);
  f.append('lone', '\ud800');
  f.append('blob', new Blob(['x'], { type: 'text/x' }));
  f.append('named', new Blob(['y']), 'y.txt');
  const file = new File(['z'], 'z.txt');
  f.append('file', file);
  f.append('renamed', file, 'other.txt');
  assert.equal(f.get('n'), '42');
  assert.equal(f.get('lone'), '\ufffd');
  assert(f.get('blob') instanceof File);
  assert.equal(f.get('blob').name, 'blob');
  assert.equal(f.get('blob').type, 'text/x');
  assert.equal(f.get('named').name, 'y.txt');
  assert.equal(f.get('file'), file, 'a File without a new name is kept as it is');
  assert.equal(f.get('renamed').name, 'other.txt');
});

test('argument errors are TypeErrors', () => {
  const f = new FormData();
  assert.throws(() => new FormData({}), TypeError);
  assert.throws(() => f.append('a'), TypeError);
  assert.throws(() => f.append('a', 'string', 'name.txt'), TypeError);
  assert.throws(() => f.set('a', 'string', 'name.txt'), TypeError);
  assert.throws(() => FormData.prototype.get.call({}, 'a'), TypeError);
  assert.throws(() => f.forEach(5), TypeError);
});

test('forEach and iteration are live', () => {
  const f = new FormData();
  f.append('a', '1');
  const seen = [];
  f.forEach((value, name, self) => {
    seen.push(`${name}=${value}`);
    assert.equal(self, f);
    if (name === 'a') f.append('b', '2');
  });
  assert.deepEqual(seen, ['a=1', 'b=2']);
  const it = f.keys();
  assert.equal(it.next().value, 'a');
  f.append('c', '3');
  assert.equal(it.next().value, 'b');
  assert.equal(it.next().value, 'c');
  assert.equal(it.next().done, true);
});

test('a FormData body is multipart form data that parses back', async () => {
  const f = new FormData();
  f.append('text', 'héllo\nworld');
  f.append('quote"name', 'v');
  f.append('upload', new File([new Uint8Array([0, 1, 2, 255])], 'a "b".bin', { type: 'application/x-thing' }));
  const r = new Response(f);
  const type = r.headers.get('content-type');
  assert(/^multipart\/form-data; boundary=----isolaneFormBoundary[0-9a-f]{32}$/.test(type), type);
  const raw = await r.clone().text();
  assert(raw.includes('Content-Disposition: form-data; name="text"\r\n\r\nhéllo\r\nworld\r\n'), raw);
  assert(raw.includes('name="quote%22name"'), raw);
  assert(raw.includes('filename="a %22b%22.bin"\r\nContent-Type: application/x-thing\r\n'), raw);
  const back = await r.formData();
  assert.equal(back.get('text'), 'héllo\r\nworld');
  assert.equal(back.get('quote"name'), 'v');
  const upload = back.get('upload');
  assert(upload instanceof File);
  assert.equal(upload.name, 'a "b".bin');
  assert.equal(upload.type, 'application/x-thing');
  assert.deepEqual(await upload.bytes(), new Uint8Array([0, 1, 2, 255]));
});

test('a request formData reads a browser multipart body', async () => {
  const body = [
    'preamble to ignore',
    '--XyZ',
    'Content-Disposition: form-data; name="title"',
    '',
    'A title',
    '--XyZ',
    'Content-Disposition: form-data; name="file"; filename="notes.txt"',
    'Content-Type: text/plain',
    '',
    'line 1\r\nline 2',
    '--XyZ',
    'Content-Disposition: form-data; name="empty"; filename=""',
    'Content-Type: application/octet-stream',
    '',
    '',
    '--XyZ--',
    'epilogue',
  ].join('\r\n');
  const req = new Request('http://x/', {
    method: 'POST', body, headers: { 'Content-Type': 'multipart/form-data; boundary="XyZ"' },
  });
  const form = await req.formData();
  assert.equal(form.get('title'), 'A title');
  assert.equal(form.get('file').name, 'notes.txt');
  assert.equal(await form.get('file').text(), 'line 1\r\nline 2');
  assert.equal(form.get('empty').name, '');
  assert.equal(form.get('empty').size, 0);
  assert.equal(req.bodyUsed, true);
  await assert.rejects(req.formData(), TypeError);
});

test('filenames keep their backslashes and odd part types become empty', async () => {
  const body = '--b\r\nContent-Disposition: form-data; name="f"; filename="C:\\dir\\a.txt"\r\n' +
    'Content-Type: text/plain\u00ff\r\n\r\nabc\r\n--b--\r\n';
  const form = await new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
  assert.equal(form.get('f').name, 'C:\\dir\\a.txt');
  assert.equal(form.get('f').type, '');
});

test('a part without a Content Type is a text plain file', async () => {
  const body = '--b\r\nContent-Disposition: form-data; name="f"; filename="x"\r\n\r\nabc\r\n--b--\r\n';
  const form = await new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
  assert.equal(form.get('f').type, 'text/plain');
});

test('urlencoded bodies parse as URLSearchParams do', async () => {
  const r = new Response('a=1&b=x+y&a=%C3%A9&c', { headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' } });
  const form = await r.formData();
  assert.deepEqual([...form], [['a', '1'], ['b', 'x y'], ['a', 'é'], ['c', '']]);
  const fromParams = new Request('http://x/', { method: 'POST', body: new URLSearchParams({ k: 'v w' }) });
  assert.equal((await fromParams.formData()).get('k'), 'v w');
});

test('malformed form bodies are TypeErrors', async () => {
  const multipart = (body, type = 'multipart/form-data; boundary=b') =>
    new Response(body, { headers: { 'content-type': type } }).formData();
  await assert.rejects(new Response('a=1').formData(), TypeError, /text\/plain/);
  await assert.rejects(new Response(new Uint8Array([1])).formData(), TypeError, /missing/);
  await assert.rejects(multipart('--b\r\n', 'multipart/form-data'), TypeError, /boundary/);
  await assert.rejects(multipart('no delimiter at all'), TypeError, /delimiter/);
  await assert.rejects(multipart('--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nno end'), TypeError, /close delimiter/);
  await assert.rejects(multipart('--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--'), TypeError, /Content-Disposition/);
  await assert.rejects(multipart('--b\r\nContent-Disposition: attachment\r\n\r\nx\r\n--b--'), TypeError, /form-data with a name/);
  await assert.rejects(multipart('--b\r\nbad header\r\n\r\nx\r\n--b--'), TypeError, /header line/);
  await assert.rejects(multipart('--bX\r\n'), TypeError);
  await assert.rejects(multipart('x', `multipart/form-data; boundary=${'a'.repeat(71)}`), TypeError, /70/);
});

test('formData reads a streamed body', async () => {
  const parts = ['--q\r\nContent-Disposition: form-data; na', 'me="k"\r\n\r\nval', 'ue\r\n--q--\r\n'];
  const stream = new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(enc(p));
      c.close();
    },
  });
  const form = await new Response(stream, { headers: { 'content-type': 'multipart/form-data; boundary=q' } }).formData();
  assert.equal(form.get('k'), 'value');
});

test('an app that rewrites prototypes still gets its form parsed', async () => {
  const saved = { push: Array.prototype.push, indexOf: String.prototype.indexOf, slice: String.prototype.slice };
  try {
    Array.prototype.push = () => { throw new Error('hijacked push'); };
    String.prototype.indexOf = () => -1;
    String.prototype.slice = () => 'hijacked';
    const body = '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--';
    const form = await new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
    Array.prototype.push = saved.push;
    assert.equal(form.get('a'), '1');
  } finally {
    Array.prototype.push = saved.push;
    String.prototype.indexOf = saved.indexOf;
    String.prototype.slice = saved.slice;
  }
});

test('parameters without a value are skipped and the rest still parse', async () => {
  const type = `multipart/form-data; ${';'.repeat(100000)} junk; boundary=zz`;
  const body = '--zz\r\nContent-Disposition: form-data; odd; name="k"\r\n\r\nv\r\n--zz--\r\n';
  const form = await new Response(body, { headers: { 'content-type': type } }).formData();
  assert.equal(form.get('k'), 'v');
});

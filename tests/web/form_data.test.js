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

const urlencodedForm = (body) =>
  new Response(body, { headers: { 'content-type': 'application/x-www-form-urlencoded' } }).formData();

test('urlencoded bodies follow the URL Standard parser', async () => {
  const entries = async (body) => [...await urlencodedForm(body)];
  // Split on '&' (empty pieces skipped), name and value at the first '='.
  assert.deepEqual(await entries('&&a=1&&b==2=&=c&d&'), [['a', '1'], ['b', '=2='], ['', 'c'], ['d', '']]);
  assert.deepEqual(await entries(''), []);
  // A leading '?' is part of the first name (only URLSearchParams's constructor strips one).
  assert.deepEqual(await entries('?a=1'), [['?a', '1']]);
  // '+' is a space before percent-decoding, so an escaped '+' stays a '+'.
  assert.deepEqual(await entries('a+b=c+%2B+d'), [['a b', 'c + d']]);
  // A '%' not followed by two hex digits stays as it is.
  assert.deepEqual(await entries('a=%&b=%4&c=%zz&d=%4g&e=%%41&f=%41%'), [['a', '%'], ['b', '%4'], ['c', '%zz'], ['d', '%4g'], ['e', '%A'], ['f', 'A%']]);
  assert.deepEqual(await entries('%61%62=%63%2a%2A'), [['ab', 'c**']]);
  // Bytes: UTF-8 decoded, escaped or raw, name and value each on its own; invalid sequences
  // become U+FFFD; a BOM stays.
  assert.deepEqual(await entries('%C3%A9=%e2%82%AC&%F0%9F%98%80'), [['é', '€'], ['😀', '']]);
  assert.deepEqual(await entries('a%C3=%A9b&%FF=%C3'), [['a\ufffd', '\ufffdb'], ['\ufffd', '\ufffd']]);
  assert.deepEqual(await entries('%EF%BB%BFa=1'), [['\ufeffa', '1']]);
  assert.deepEqual(await entries('%ED%A0%80=x'), [['\ufffd\ufffd\ufffd', 'x']], 'an escaped surrogate is invalid UTF-8');
  const raw = (...parts) => {
    const bytes = [];
    for (const part of parts) {
      if (typeof part === 'number') bytes.push(part);
      else for (const b of enc(part)) bytes.push(b);
    }
    return new Uint8Array(bytes);
  };
  assert.deepEqual(await entries(raw('k=', 0xc3, 0xa9, '&', 0xef, 0xbb, 0xbf, 'b=', 0xff)), [['k', 'é'], ['\ufeffb', '\ufffd']]);
  assert.deepEqual(await entries(raw('k=%C3', 0xa9, '&x=', 0xc3, '%A9')), [['k', 'é'], ['x', 'é']], 'escaped and raw bytes decode together');
  assert.deepEqual(await entries(raw('k', 0xc3, '=', 0xa9)), [['k\ufffd', '\ufffd']]);
});

test('formData parses a 1 MB urlencoded body', async () => {
  // 250,000 pairs in one scan (the URLSearchParams route it took before cost n squared).
  const n = 250000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = 'a=1';
  parts[0] = 'first=x';
  parts[n - 1] = 'last=y+z';
  const body = parts.join('&');
  assert.equal(body.length, 1000008);
  const form = await urlencodedForm(body);
  assert.equal(form.getAll('a').length, n - 2);
  assert.equal(form.get('last'), 'y z');
  let count = 0;
  let first = null;
  let last = null;
  for (const entry of form) {
    if (count === 0) first = entry;
    last = entry;
    count++;
  }
  assert.equal(count, n);
  assert.deepEqual(first, ['first', 'x']);
  assert.deepEqual(last, ['last', 'y z']);
});

test('formData parses 1 MB of escaped urlencoded pairs', async () => {
  // Every name and value needs percent-decoding, half of them UTF-8 decoding too.
  const n = 125000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = i % 2 === 0 ? 'k%20=%C3%A9' : 'k%20=%41+b';
  const form = await urlencodedForm(parts.join('&'));
  const values = form.getAll('k ');
  assert.equal(values.length, n);
  assert.equal(values[0], 'é');
  assert.equal(values[1], 'A b');
  assert.equal(values[n - 1], 'A b');
  assert.equal(values[n - 2], 'é');
});

test('formData parses a 1 MB multipart body of tiny parts', async () => {
  const n = 20000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = `--b\r\nContent-Disposition: form-data; name="p"\r\n\r\n${i}\r\n`;
  parts[n - 1] = '--b\r\nContent-Disposition: form-data; name="f"; filename="last.txt"\r\n\r\nend\r\n';
  const body = `${parts.join('')}--b--\r\n`;
  assert(body.length > 1000000, `${body.length}`);
  const form = await new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
  const values = form.getAll('p');
  assert.equal(values.length, n - 1);
  assert.equal(values[0], '0');
  assert.equal(values[n - 2], `${n - 2}`);
  assert.equal(form.get('f').name, 'last.txt');
  assert.equal(await form.get('f').text(), 'end');
  // One part whose value is most of a megabyte, among near-misses of the delimiter.
  const big = 'y\r\n--c\r\n-'.repeat(100000);
  const one = `--b\r\nContent-Disposition: form-data; name="big"\r\n\r\n${big}\r\n--b--\r\n`;
  const bigForm = await new Response(one, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
  assert.equal(bigForm.get('big'), big);
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
  const saved = {
    push: Array.prototype.push, indexOf: String.prototype.indexOf, slice: String.prototype.slice,
    iterator: Array.prototype[Symbol.iterator], from: Array.from, charCodeAt: String.prototype.charCodeAt,
  };
  let form = null;
  let urlencoded = null;
  try {
    Array.prototype.push = () => { throw new Error('hijacked push'); };
    Array.prototype[Symbol.iterator] = function () { throw new Error('hijacked iterator'); };
    Array.from = () => { throw new Error('hijacked from'); };
    String.prototype.indexOf = () => -1;
    String.prototype.slice = () => 'hijacked';
    String.prototype.charCodeAt = () => 0;
    const body = '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--';
    form = await new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } }).formData();
    urlencoded = await new Response('x=1+2&y=%C3%A9&z', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }).formData();
  } finally {
    Array.prototype.push = saved.push;
    Array.prototype[Symbol.iterator] = saved.iterator;
    Array.from = saved.from;
    String.prototype.indexOf = saved.indexOf;
    String.prototype.slice = saved.slice;
    String.prototype.charCodeAt = saved.charCodeAt;
  }
  assert.equal(form.get('a'), '1');
  assert.deepEqual([...urlencoded], [['x', '1 2'], ['y', 'é'], ['z', '']]);
});

test('parameters without a value are skipped and the rest still parse', async () => {
  const type = `multipart/form-data; ${';'.repeat(100000)} junk; boundary=zz`;
  const body = '--zz\r\nContent-Disposition: form-data; odd; name="k"\r\n\r\nv\r\n--zz--\r\n';
  const form = await new Response(body, { headers: { 'content-type': type } }).formData();
  assert.equal(form.get('k'), 'v');
});

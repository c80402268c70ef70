// Global fetch(): what can be checked without an upstream. These tests also run in the C++ runner
// (tests/web_js_test.cc), where the host's network natives are real and there is nothing to talk
// to, so none of them may reach the network (the node runner fails a test here that does). The
// exchanges themselves (redirects, body streaming, aborts mid-exchange, host errors) are tested
// against a scripted host in tests/web/node-only/fetch.test.js, and end to end by the C++ tests.

test('fetch is a global function', () => {
  assert.equal(typeof fetch, 'function');
  assert.equal(fetch.name, 'fetch');
  assert.equal(fetch.length, 1);
  const desc = Object.getOwnPropertyDescriptor(globalThis, 'fetch');
  assert.equal(desc.enumerable, true);
  assert.equal(desc.writable, true);
  assert.equal(desc.configurable, true);
});

test('fetch never throws synchronously', async () => {
  let p;
  try {
    p = fetch();
  } catch (e) {
    assert(false, `fetch() threw synchronously: ${e}`);
  }
  assert(p instanceof Promise);
  await assert.rejects(p, TypeError, /1 argument required/);
});

test('invalid and relative URLs reject with TypeError', async () => {
  await assert.rejects(fetch('not a url'), TypeError, /Invalid URL/);
  await assert.rejects(fetch('/relative/path'), TypeError, /Invalid URL/);
  await assert.rejects(fetch('http://'), TypeError);
  await assert.rejects(fetch('https://user:pass@example.com/'), TypeError, /credentials/);
});

test('only http and https schemes are fetched', async () => {
  for (const url of ['ftp://example.com/file', 'file:///etc/passwd', 'data:text/plain,hello', 'about:blank',
    'blob:https://example.com/0000', 'ws://example.com/', 'wss://example.com/', 'javascript:void(0)',
    'mailto:a@example.com', 'gopher://example.com/']) {
    const scheme = url.slice(0, url.indexOf(':'));
    const error = await assert.rejects(fetch(url), TypeError);
    assert(error.message.includes(`"${scheme}"`), `${url}: ${error.message}`);
    assert(error.message.includes('not supported'), `${url}: ${error.message}`);
  }
  await assert.rejects(fetch(new Request('ftp://example.com/')), TypeError, /"ftp" is not supported/);
  await assert.rejects(fetch(new URL('file:///tmp/x')), TypeError, /"file" is not supported/);
});

test('an already aborted signal rejects with its reason', async () => {
  const reason = new Error('my reason');
  const e1 = await assert.rejects(fetch('http://example.com/', { signal: AbortSignal.abort(reason) }));
  assert.equal(e1, reason);

  const e2 = await assert.rejects(fetch('https://example.com/', { signal: AbortSignal.abort() }), 'AbortError');
  assert(e2 instanceof DOMException);

  const controller = new AbortController();
  controller.abort('a string reason');
  const e3 = await assert.rejects(fetch('http://example.com/', { signal: controller.signal }));
  assert.equal(e3, 'a string reason');

  const request = new Request('http://example.com/', { signal: controller.signal });
  const e4 = await assert.rejects(fetch(request));
  assert.equal(e4, 'a string reason');
});

test('the abort check comes before the scheme check', async () => {
  const reason = new RangeError('aborted first');
  const e = await assert.rejects(fetch('ftp://example.com/', { signal: AbortSignal.abort(reason) }));
  assert.equal(e, reason);
});

test('an aborted fetch does not read its body stream', async () => {
  let pulls = 0;
  const body = new ReadableStream({ pull(c) { pulls++; c.enqueue(new Uint8Array([1])); c.close(); } },
    { highWaterMark: 0 });
  await assert.rejects(fetch('http://example.com/', {
    method: 'POST', body, duplex: 'half', signal: AbortSignal.abort(),
  }), 'AbortError');
  await sleep(0);
  assert.equal(pulls, 0);
  assert.equal(body.locked, false);
});

test('RequestInit is validated', async () => {
  const url = 'http://example.com/';
  const signal = AbortSignal.abort(); // if validation passed, this would be the rejection instead
  await assert.rejects(fetch(url, { method: 'GET', body: 'x', signal }), TypeError, /GET\/HEAD/);
  await assert.rejects(fetch(url, { method: 'HEAD', body: 'x', signal }), TypeError, /GET\/HEAD/);
  await assert.rejects(fetch(url, { method: 'bad method', signal }), TypeError, /not a valid HTTP method/);
  await assert.rejects(fetch(url, { method: 'CONNECT', signal }), TypeError, /unsupported/);
  await assert.rejects(fetch(url, { redirect: 'sometimes', signal }), TypeError, /RequestRedirect/);
  await assert.rejects(fetch(url, { headers: { 'bad name': 'x' }, signal }), TypeError, /header name/);
  await assert.rejects(fetch(url, { headers: [['x-a']], signal }), TypeError);
  await assert.rejects(fetch(url, { signal: {} }), TypeError, /AbortSignal/);
  await assert.rejects(fetch(url, 42), TypeError, /RequestInit/);
  await assert.rejects(fetch(url, { window: {}, signal }), TypeError);
});

test('a used or locked body rejects', async () => {
  const used = new Request('http://example.com/', { method: 'POST', body: 'x' });
  await used.text();
  await assert.rejects(fetch(used), TypeError, /already been used/);

  const stream = new ReadableStream();
  stream.getReader();
  await assert.rejects(fetch('http://example.com/', { method: 'POST', body: stream }), TypeError, /locked/);
});

test('fetch does not need a this value', async () => {
  const f = fetch;
  await assert.rejects(f('ftp://example.com/'), TypeError, /not supported/);
  await assert.rejects(fetch.call({}, 'ftp://example.com/'), TypeError, /not supported/);
});

// Global fetch() against the scripted host of tools/dev/web-fake-net.js (globalThis.__fakeNet):
// only tools/dev/web-node-runner.mjs runs this folder. The runner resets the fake before every
// test and fails a test during which the fake saw a violation of the host contract (a pull while
// one is outstanding, a pull after the end, a malformed init...).

const enc = (s) => new TextEncoder().encode(s);
const dec = (b) => new TextDecoder().decode(b);

// Routes every exchange to `table[url]` (a script, or a function of init returning one).
function routes(table) {
  __fakeNet.route((init, id) => {
    const entry = table[init.url];
    if (entry === undefined) return { error: { message: `no route for ${init.url}`, kind: 'network' } };
    return typeof entry === 'function' ? entry(init, id) : entry;
  });
}

function redirectTo(location, status = 302) {
  return { status, statusText: 'Found', headers: [['Location', location], ['Content-Length', '0']], body: [] };
}

function sentHeaders(init) {
  const out = {};
  for (const [name, value] of init.headers) out[name] = value;
  return out;
}

// Lets the fake's scheduled callbacks (setImmediate) run.
async function turns(n = 3) {
  for (let i = 0; i < n; i++) await sleep(0);
}

test('a simple GET', async () => {
  routes({
    'http://upstream.test/hello': {
      status: 200, statusText: 'OK',
      headers: [['Content-Type', 'text/plain'], ['X-Multi', 'a'], ['x-multi', 'b'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2']],
      body: ['hello ', 'world'],
    },
  });
  const r = await fetch('http://upstream.test/hello');
  assert(r instanceof Response);
  assert.equal(r.status, 200);
  assert.equal(r.statusText, 'OK');
  assert.equal(r.ok, true);
  assert.equal(r.type, 'basic');
  assert.equal(r.url, 'http://upstream.test/hello');
  assert.equal(r.redirected, false);
  assert.equal(r.headers.get('content-type'), 'text/plain');
  assert.equal(r.headers.get('x-multi'), 'a, b');
  assert.deepEqual(r.headers.getSetCookie(), ['a=1', 'b=2']);
  assert(r.body instanceof ReadableStream);
  assert.equal(r.bodyUsed, false);
  assert.equal(await r.text(), 'hello world');
  assert.equal(r.bodyUsed, true);

  assert.equal(__fakeNet.requests.length, 1);
  const sent = __fakeNet.requests[0];
  assert.equal(sent.method, 'GET');
  assert.equal(sent.url, 'http://upstream.test/hello');
  assert.equal(sent.body, null);
  assert.equal(sent.timeoutMs, 0);
  assert.deepEqual(sentHeaders(sent), { accept: '*/*' });
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('response headers are immutable', async () => {
  routes({ 'https://upstream.test/': { headers: [['X-A', '1']], body: [] } });
  const r = await fetch('https://upstream.test/');
  assert.throws(() => r.headers.set('x-a', '2'), TypeError, /immutable/);
  assert.throws(() => r.headers.append('x-b', '2'), TypeError, /immutable/);
  assert.throws(() => r.headers.delete('x-a'), TypeError, /immutable/);
  assert.equal(r.headers.get('x-a'), '1');
  // A copy is mutable, as for any Response.
  const copy = new Response(r.body, r);
  copy.headers.set('x-a', '3');
  assert.equal(copy.headers.get('x-a'), '3');
});

test('json arrayBuffer and bytes read the stream', async () => {
  routes({
    'http://u.test/json': { body: ['{"a":', '[1,2', ']}'] },
    'http://u.test/bin': { body: [new Uint8Array([0, 1]), new Uint8Array([255])] },
  });
  assert.deepEqual(await (await fetch('http://u.test/json')).json(), { a: [1, 2] });
  const ab = await (await fetch('http://u.test/bin')).arrayBuffer();
  assert(ab instanceof ArrayBuffer);
  assert.deepEqual(new Uint8Array(ab), new Uint8Array([0, 1, 255]));
  assert.deepEqual(await (await fetch('http://u.test/bin')).bytes(), new Uint8Array([0, 1, 255]));
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('request headers and method are sent', async () => {
  routes({ 'http://u.test/x': { status: 201, body: [] } });
  const r = await fetch('http://u.test/x', {
    method: 'patch',
    headers: { 'X-Custom': 'yes', Accept: 'application/json', Authorization: 'Bearer t' },
  });
  assert.equal(r.status, 201);
  const sent = __fakeNet.requests[0];
  assert.equal(sent.method, 'patch'); // only the six common methods are upper-cased
  assert.deepEqual(sentHeaders(sent), { accept: 'application/json', authorization: 'Bearer t', 'x-custom': 'yes' });
});

test('request bodies are sent as bytes', async () => {
  routes({ 'http://u.test/echo': { body: [] } });
  const cases = [
    ['a string é', enc('a string é'), 'text/plain;charset=UTF-8'],
    [new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]), undefined],
    [new Uint8Array([9, 8, 7]).buffer, new Uint8Array([9, 8, 7]), undefined],
    [new DataView(new Uint8Array([5, 6, 7, 8]).buffer, 1, 2), new Uint8Array([6, 7]), undefined],
    [new URLSearchParams({ a: '1', b: 'x y' }), enc('a=1&b=x+y'), 'application/x-www-form-urlencoded;charset=UTF-8'],
    ['', new Uint8Array(0), 'text/plain;charset=UTF-8'],
  ];
  for (const [body, bytes, type] of cases) {
    __fakeNet.requests = [];
    await fetch('http://u.test/echo', { method: 'POST', body });
    const sent = __fakeNet.requests[0];
    assert.equal(sent.method, 'POST');
    assert(sent.body instanceof Uint8Array, 'body is a Uint8Array');
    assert.deepEqual(sent.body, bytes);
    assert.equal(sentHeaders(sent)['content-type'], type);
  }
});

test('a stream request body is read fully before sending', async () => {
  routes({ 'http://u.test/up': { body: [] } });
  let n = 0;
  const body = new ReadableStream({
    async pull(c) {
      await sleep(1);
      if (n === 3) c.close();
      else c.enqueue(enc(`part${n++};`));
    },
  });
  await fetch('http://u.test/up', { method: 'PUT', body, duplex: 'half' });
  assert.equal(__fakeNet.requests.length, 1);
  assert.equal(dec(__fakeNet.requests[0].body), 'part0;part1;part2;');
  assert.equal(body.locked, true);
});

test('a request body stream that errors rejects without sending', async () => {
  routes({});
  const body = new ReadableStream({ pull(c) { c.error(new RangeError('upload broke')); } });
  const e = await assert.rejects(fetch('http://u.test/up', { method: 'POST', body }), TypeError);
  assert(e.cause instanceof RangeError);
  assert.equal(__fakeNet.requests.length, 0);
});

test('a Request input is sent with its body', async () => {
  routes({ 'http://u.test/r': { body: [] } });
  const request = new Request('http://u.test/r', { method: 'POST', body: 'from request', headers: { 'X-R': '1' } });
  await fetch(request);
  const sent = __fakeNet.requests[0];
  assert.equal(sent.method, 'POST');
  assert.equal(dec(sent.body), 'from request');
  assert.equal(sentHeaders(sent)['x-r'], '1');
  assert.equal(request.bodyUsed, true);
  // init overrides the Request's members.
  __fakeNet.requests = [];
  await fetch(new Request('http://u.test/r', { method: 'POST', body: 'a' }), { method: 'PUT', body: 'b' });
  assert.equal(__fakeNet.requests[0].method, 'PUT');
  assert.equal(dec(__fakeNet.requests[0].body), 'b');
});

test('the fragment is not sent and not in response url', async () => {
  routes({ 'http://u.test/p?q=1': { body: ['x'] } });
  const r = await fetch('http://u.test/p?q=1#frag');
  assert.equal(__fakeNet.requests[0].url, 'http://u.test/p?q=1');
  assert.equal(r.url, 'http://u.test/p?q=1');
  await r.text();
});

test('body bytes are pulled only once the app reads and then a few pieces ahead', async () => {
  routes({ 'http://u.test/s': { body: ['one', 'two', 'three'] } });
  const r = await fetch('http://u.test/s');
  const id = __fakeNet.events[0][1];
  await turns();
  assert.deepEqual(__fakeNet.eventsOf(id), ['start', 'head'], 'no pull before a read');
  const reader = r.body.getReader();
  const first = await reader.read();
  assert.equal(dec(first.value), 'one');
  const pulls = __fakeNet.eventsOf(id).filter((e) => e === 'pull').length;
  assert(pulls >= 2, `the next pieces were asked for with the first (${pulls} pulls)`);
  assert.equal(dec((await reader.read()).value), 'two');
  assert.equal(dec((await reader.read()).value), 'three');
  const last = await reader.read();
  assert.equal(last.done, true);
  assert.deepEqual(__fakeNet.eventsOf(id).filter((e) => e !== 'pull'),
    ['start', 'head', 'chunk', 'chunk', 'chunk', 'end']);
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('a body the app stops reading is read at most a window ahead', async () => {
  const piece = new Uint8Array(65536);
  routes({ 'http://u.test/big': { body: Array.from({ length: 12 }, () => piece) } });
  const r = await fetch('http://u.test/big');
  const id = __fakeNet.events[0][1];
  const reader = r.body.getReader();
  assert.equal((await reader.read()).value.byteLength, 65536);
  await turns(20);
  const chunks = __fakeNet.eventsOf(id).filter((e) => e === 'chunk').length;
  assert(chunks > 1, 'pieces were read ahead');
  assert(chunks <= 5, `the one read and at most a window (4 pieces) queued: ${chunks} chunks`);
  await reader.cancel();
});

test('a BYOB reader reads the body', async () => {
  routes({ 'http://u.test/b': { body: ['abcdef', 'gh'] } });
  const r = await fetch('http://u.test/b');
  const reader = r.body.getReader({ mode: 'byob' });
  let out = '';
  for (;;) {
    const { value, done } = await reader.read(new Uint8Array(4));
    if (done) break;
    out += dec(value);
  }
  assert.equal(out, 'abcdefgh');
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('a cloned response can be read twice', async () => {
  routes({ 'http://u.test/c': { body: ['same ', 'bytes'] } });
  const r = await fetch('http://u.test/c');
  const copy = r.clone();
  assert.equal(copy.url, 'http://u.test/c');
  assert.equal(copy.type, 'basic');
  assert.equal(await r.text(), 'same bytes');
  assert.equal(await copy.text(), 'same bytes');
});

test('cancelling the body aborts the exchange', async () => {
  routes({ 'http://u.test/big': { body: ['1', '2', '3', '4'] } });
  const r = await fetch('http://u.test/big');
  const id = __fakeNet.events[0][1];
  const reader = r.body.getReader();
  await reader.read();
  await reader.cancel('not interested');
  await turns();
  const events = __fakeNet.eventsOf(id);
  assert.deepEqual(events.slice(-2), ['abort', 'error'], events.join());
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('HEAD and null body statuses have no body and are drained', async () => {
  routes({
    'http://u.test/head': { status: 200, headers: [['Content-Length', '10']], body: [] },
    'http://u.test/204': { status: 204, body: [] },
    'http://u.test/304': { status: 304, statusText: 'Not Modified', body: [] },
  });
  const head = await fetch('http://u.test/head', { method: 'HEAD' });
  assert.equal(head.body, null);
  assert.equal(head.headers.get('content-length'), '10');
  assert.equal(await head.text(), '');
  const noContent = await fetch('http://u.test/204');
  assert.equal(noContent.status, 204);
  assert.equal(noContent.body, null);
  const notModified = await fetch('http://u.test/304');
  assert.equal(notModified.status, 304);
  assert.equal(notModified.body, null);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
  assert.equal(__fakeNet.events.filter((e) => e[0] === 'abort').length, 0, 'drained, not aborted');
});

test('error statuses resolve', async () => {
  routes({ 'http://u.test/missing': { status: 404, statusText: 'Not Found', body: ['nope'] } });
  const r = await fetch('http://u.test/missing');
  assert.equal(r.status, 404);
  assert.equal(r.ok, false);
  assert.equal(await r.text(), 'nope');
});

// Redirects.

test('a redirect chain is followed', async () => {
  routes({
    'http://a.test/start': redirectTo('/second', 301),
    'http://a.test/second': redirectTo('third?x=1', 302),
    'http://a.test/third?x=1': redirectTo('https://b.test/last', 307),
    'https://b.test/last': redirectTo('//c.test/final#frag', 308),
    'https://c.test/final': { body: ['arrived'] },
  });
  const r = await fetch('http://a.test/start');
  assert.equal(r.status, 200);
  assert.equal(r.redirected, true);
  assert.equal(r.url, 'https://c.test/final');
  assert.equal(await r.text(), 'arrived');
  assert.deepEqual(__fakeNet.requests.map((i) => i.url), [
    'http://a.test/start', 'http://a.test/second', 'http://a.test/third?x=1', 'https://b.test/last', 'https://c.test/final',
  ]);
  // Every hop that was redirected away from was closed.
  const aborted = __fakeNet.events.filter((e) => e[0] === 'abort').map((e) => e[1]);
  const starts = __fakeNet.events.filter((e) => e[0] === 'start').map((e) => e[1]);
  assert.deepEqual(aborted, starts.slice(0, 4));
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('301 and 302 turn POST into GET without body', async () => {
  for (const status of [301, 302]) {
    __fakeNet.requests = [];
    routes({ 'http://a.test/form': redirectTo('/done', status), 'http://a.test/done': { body: [] } });
    await fetch('http://a.test/form', {
      method: 'POST', body: 'x=1',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Language': 'en', 'X-Keep': 'k' },
    });
    const [first, second] = __fakeNet.requests;
    assert.equal(first.method, 'POST');
    assert.equal(second.method, 'GET', `${status}`);
    assert.equal(second.body, null);
    assert.deepEqual(sentHeaders(second), { accept: '*/*', 'x-keep': 'k' });
  }
});

test('301 and 302 keep other methods and 307 308 keep everything', async () => {
  const cases = [[301, 'PUT'], [302, 'DELETE'], [307, 'POST'], [308, 'POST'], [308, 'PATCH']];
  for (const [status, method] of cases) {
    __fakeNet.requests = [];
    routes({ 'http://a.test/x': redirectTo('/y', status), 'http://a.test/y': { body: [] } });
    await fetch('http://a.test/x', { method, body: 'payload', headers: { 'Content-Type': 'text/x' } });
    const second = __fakeNet.requests[1];
    assert.equal(second.method, method, `${status} ${method}`);
    assert.equal(dec(second.body), 'payload');
    assert.equal(sentHeaders(second)['content-type'], 'text/x');
  }
});

test('a stream body is sent again after a 307', async () => {
  routes({ 'http://a.test/x': redirectTo('/y', 307), 'http://a.test/y': { body: [] } });
  const body = new ReadableStream({ start(c) { c.enqueue(enc('streamed')); c.close(); } });
  await fetch('http://a.test/x', { method: 'POST', body });
  assert.equal(dec(__fakeNet.requests[0].body), 'streamed');
  assert.equal(dec(__fakeNet.requests[1].body), 'streamed');
});

test('303 turns everything but HEAD into GET', async () => {
  for (const method of ['POST', 'PUT', 'DELETE', 'GET', 'HEAD']) {
    __fakeNet.requests = [];
    routes({ 'http://a.test/x': redirectTo('/y', 303), 'http://a.test/y': { body: [] } });
    const init = { method };
    if (method !== 'GET' && method !== 'HEAD') {
      init.body = 'b';
      init.headers = { 'content-type': 'text/plain', 'content-encoding': 'identity' };
    }
    await fetch('http://a.test/x', init);
    const second = __fakeNet.requests[1];
    assert.equal(second.method, method === 'HEAD' ? 'HEAD' : 'GET', method);
    assert.equal(second.body, null, method);
    assert.equal(sentHeaders(second)['content-type'], undefined, method);
    assert.equal(sentHeaders(second)['content-encoding'], undefined, method);
  }
});

test('a cross origin redirect drops credentials headers', async () => {
  const headers = { Authorization: 'Bearer secret', Cookie: 'sid=1', 'Proxy-Authorization': 'p', 'X-Other': 'o' };
  routes({
    'http://a.test/1': redirectTo('http://a.test/2'),
    'http://a.test/2': redirectTo('http://a.test:8080/3'),
    'http://a.test:8080/3': redirectTo('http://b.test/4'),
    'http://b.test/4': { body: [] },
  });
  await fetch('http://a.test/1', { headers });
  const sent = __fakeNet.requests.map(sentHeaders);
  assert.equal(sent[0].authorization, 'Bearer secret');
  assert.equal(sent[1].authorization, 'Bearer secret', 'same origin keeps it');
  assert.equal(sent[1].cookie, 'sid=1');
  assert.equal(sent[2].authorization, undefined, 'another port is another origin');
  assert.equal(sent[2].cookie, undefined);
  assert.equal(sent[2]['proxy-authorization'], undefined);
  assert.equal(sent[2]['x-other'], 'o');
  assert.equal(sent[3].authorization, undefined);
  assert.equal(sent[3]['x-other'], 'o');

  __fakeNet.requests = [];
  routes({ 'http://a.test/1': redirectTo('https://a.test/2'), 'https://a.test/2': { body: [] } });
  await fetch('http://a.test/1', { headers });
  assert.equal(sentHeaders(__fakeNet.requests[1]).authorization, undefined, 'http to https is another origin');
});

test('at most 20 redirects', async () => {
  const chain = (n) => {
    const table = {};
    for (let i = 0; i < n; i++) table[`http://a.test/${i}`] = redirectTo(`/${i + 1}`, 302);
    table[`http://a.test/${n}`] = { body: ['end'] };
    routes(table);
  };
  chain(20);
  const r = await fetch('http://a.test/0');
  assert.equal(await r.text(), 'end');
  assert.equal(r.url, 'http://a.test/20');
  assert.equal(__fakeNet.requests.length, 21);

  __fakeNet.requests = [];
  chain(21);
  const e = await assert.rejects(fetch('http://a.test/0'), TypeError, /^fetch failed$/);
  assert(e.cause instanceof Error);
  assert(/redirect count exceeded/.test(e.cause.message), e.cause.message);
  assert.equal(__fakeNet.requests.length, 21);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('redirect manual returns the redirect response', async () => {
  routes({ 'http://a.test/x': { status: 301, statusText: 'Moved', headers: [['Location', '/y']], body: ['moved'] } });
  const r = await fetch('http://a.test/x', { redirect: 'manual' });
  assert.equal(r.status, 301);
  assert.equal(r.statusText, 'Moved');
  assert.equal(r.headers.get('location'), '/y');
  assert.equal(r.redirected, false);
  assert.equal(r.url, 'http://a.test/x');
  assert.equal(r.type, 'basic');
  assert.equal(await r.text(), 'moved');
  assert.equal(__fakeNet.requests.length, 1);
});

test('redirect error rejects', async () => {
  routes({ 'http://a.test/x': redirectTo('/y') });
  const e = await assert.rejects(fetch('http://a.test/x', { redirect: 'error' }), TypeError, /^fetch failed$/);
  assert(/redirect/.test(e.cause.message));
  assert.equal(__fakeNet.requests.length, 1);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
  // A Request's redirect mode is used too.
  await assert.rejects(fetch(new Request('http://a.test/x', { redirect: 'error' })), TypeError);
});

test('a redirect status without Location is the response', async () => {
  routes({ 'http://a.test/x': { status: 302, body: ['no location'] } });
  const r = await fetch('http://a.test/x');
  assert.equal(r.status, 302);
  assert.equal(r.redirected, false);
  assert.equal(await r.text(), 'no location');
});

test('bad redirect locations are network errors', async () => {
  routes({
    'http://a.test/ftp': redirectTo('ftp://a.test/file'),
    'http://a.test/data': redirectTo('data:text/plain,x'),
    'http://a.test/bad': redirectTo('http://[::1'),
  });
  const e1 = await assert.rejects(fetch('http://a.test/ftp'), TypeError, /^fetch failed$/);
  assert(/scheme/.test(e1.cause.message), e1.cause.message);
  await assert.rejects(fetch('http://a.test/data'), TypeError, /^fetch failed$/);
  const e3 = await assert.rejects(fetch('http://a.test/bad'), TypeError, /^fetch failed$/);
  assert(/invalid redirect location/.test(e3.cause.message), e3.cause.message);
  assert.equal(__fakeNet.requests.length, 3);
});

// Host errors.

test('network errors reject with fetch failed and a cause', async () => {
  for (const kind of ['network', 'timeout', 'too-large']) {
    routes({ 'http://down.test/': { error: { message: `host says ${kind}`, kind } } });
    const e = await assert.rejects(fetch('http://down.test/'), TypeError);
    assert.equal(e.message, 'fetch failed');
    assert(e.cause instanceof Error, kind);
    assert.equal(e.cause.message, `host says ${kind}`);
  }
});

test('policy refusals name the address and the reason', async () => {
  routes({ 'http://10.0.0.1/': { error: { message: 'private address 10.0.0.1 is not allowed', kind: 'policy' } } });
  const e = await assert.rejects(fetch('http://10.0.0.1/'), TypeError);
  assert.equal(e.message, 'fetch to http://10.0.0.1/ refused: private address 10.0.0.1 is not allowed');

  // A host message that already is a whole sentence is kept as it is.
  routes({ 'http://10.0.0.1/': { error: { message: 'fetch to http://10.0.0.1/ refused: private range', kind: 'policy' } } });
  const e2 = await assert.rejects(fetch('http://10.0.0.1/'), TypeError);
  assert.equal(e2.message, 'fetch to http://10.0.0.1/ refused: private range');

  // A refusal on a redirect hop names that hop.
  routes({
    'http://public.test/': redirectTo('http://169.254.169.254/latest'),
    'http://169.254.169.254/latest': { error: { message: 'link-local address', kind: 'policy' } },
  });
  const e3 = await assert.rejects(fetch('http://public.test/'), TypeError);
  assert.equal(e3.message, 'fetch to http://169.254.169.254/latest refused: link-local address');
});

test('an error while reading the body errors the stream', async () => {
  routes({ 'http://u.test/': { body: ['partial'], error: { message: 'connection reset', kind: 'network', at: 1 } } });
  const r = await fetch('http://u.test/');
  const e = await assert.rejects(r.text(), TypeError, /^fetch failed$/);
  assert.equal(e.cause.message, 'connection reset');

  routes({ 'http://u.test/': { body: ['x'], error: { message: 'response too large', kind: 'too-large', at: 1 } } });
  const r2 = await fetch('http://u.test/');
  const reader = r2.body.getReader();
  assert.equal(dec((await reader.read()).value), 'x');
  const e2 = await assert.rejects(reader.read(), TypeError);
  assert.equal(e2.cause.message, 'response too large');
});

test('a host side abort is an AbortError', async () => {
  routes({ 'http://u.test/': { error: { message: 'the request is over', kind: 'aborted' } } });
  const e = await assert.rejects(fetch('http://u.test/'), 'AbortError');
  assert(e instanceof DOMException);
  assert.equal(e.message, 'the request is over');
});

test('a throwing fetchStart rejects with fetch failed', async () => {
  const original = __host.fetchStart;
  __host.fetchStart = () => { throw new Error('native refused the arguments'); };
  try {
    const e = await assert.rejects(fetch('http://u.test/'), TypeError, /^fetch failed$/);
    assert.equal(e.cause.message, 'native refused the arguments');
  } finally {
    __host.fetchStart = original;
  }
});

// Abort.

test('abort during the exchange rejects and calls fetchAbort', async () => {
  routes({ 'http://slow.test/': { hang: 'head' } });
  const controller = new AbortController();
  const p = fetch('http://slow.test/', { signal: controller.signal });
  await turns();
  const id = __fakeNet.events[0][1];
  assert.deepEqual(__fakeNet.eventsOf(id), ['start']);
  const reason = new Error('user gave up');
  controller.abort(reason);
  const e = await assert.rejects(p);
  assert.equal(e, reason);
  await turns();
  assert.deepEqual(__fakeNet.eventsOf(id), ['start', 'abort', 'error']);
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('abort during a redirect hop', async () => {
  routes({ 'http://a.test/1': redirectTo('/2'), 'http://a.test/2': { hang: 'head' } });
  const controller = new AbortController();
  const p = fetch('http://a.test/1', { signal: controller.signal });
  while (__fakeNet.requests.length < 2) await sleep(0);
  controller.abort();
  const e = await assert.rejects(p, 'AbortError');
  assert.equal(e, controller.signal.reason);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('AbortSignal timeout aborts the exchange', async () => {
  routes({ 'http://slow.test/': { hang: 'head' } });
  const e = await assert.rejects(fetch('http://slow.test/', { signal: AbortSignal.timeout(5) }), 'TimeoutError');
  assert(e instanceof DOMException);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('abort after the response errors the body', async () => {
  routes({ 'http://u.test/': { body: ['a', 'b', 'c'] } });
  const controller = new AbortController();
  const r = await fetch('http://u.test/', { signal: controller.signal });
  const reader = r.body.getReader();
  assert.equal(dec((await reader.read()).value), 'a');
  const reason = new Error('stop reading');
  controller.abort(reason);
  const e = await assert.rejects(reader.read());
  assert.equal(e, reason);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
  assert(__fakeNet.events.some((ev) => ev[0] === 'abort'));
});

test('abort while a pull is outstanding', async () => {
  routes({ 'http://u.test/': { body: ['a', 'b'], hang: 1 } });
  const controller = new AbortController();
  const r = await fetch('http://u.test/', { signal: controller.signal });
  const text = r.text();
  await turns(5);
  controller.abort();
  const e = await assert.rejects(text, 'AbortError');
  assert.equal(e, controller.signal.reason);
  await turns();
  assert.deepEqual(__fakeNet.openOps(), []);
});

test('abort before the body is read errors it', async () => {
  routes({ 'http://u.test/': { body: ['never read'] } });
  const controller = new AbortController();
  const r = await fetch('http://u.test/', { signal: controller.signal });
  controller.abort('late');
  const e = await assert.rejects(r.text());
  assert.equal(e, 'late');
});

test('abort after the body ended changes nothing', async () => {
  routes({ 'http://u.test/': { body: ['all'] } });
  const controller = new AbortController();
  const r = await fetch('http://u.test/', { signal: controller.signal });
  assert.equal(await r.text(), 'all');
  controller.abort();
  await turns();
  assert.equal(__fakeNet.events.filter((e) => e[0] === 'abort').length, 0);
});

test('abort while the request body is read', async () => {
  routes({});
  const controller = new AbortController();
  const body = new ReadableStream({ pull() { return new Promise(() => {}); } }); // never ends
  const p = fetch('http://u.test/', { method: 'POST', body, signal: controller.signal });
  await turns();
  controller.abort();
  await assert.rejects(p, 'AbortError');
  await turns();
  assert.equal(__fakeNet.requests.length, 0);
});

test('concurrent fetches are independent', async () => {
  routes({
    'http://u.test/1': { body: ['one'], chunkDelayMs: 5 },
    'http://u.test/2': { body: ['two'] },
    'http://u.test/3': { error: { message: 'boom', kind: 'network' } },
  });
  const results = await Promise.allSettled([
    fetch('http://u.test/1').then((r) => r.text()),
    fetch('http://u.test/2').then((r) => r.text()),
    fetch('http://u.test/3').then((r) => r.text()),
  ]);
  assert.equal(results[0].value, 'one');
  assert.equal(results[1].value, 'two');
  assert.equal(results[2].status, 'rejected');
  assert.deepEqual(__fakeNet.openOps(), []);
});

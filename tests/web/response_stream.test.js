// A Response whose body is a ReadableStream, sent as the app produces it (response_stream.js):
// the head at once, each chunk as enqueued, credit-bounded reads, cancellation reaching the app.

const enc = (s) => new TextEncoder().encode(s);
const dec = (chunks) => new TextDecoder().decode(concat(chunks));
const tick = () => new Promise((r) => setTimeout(r, 0));

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.byteLength; }
  return out;
}

function init(overrides = {}) {
  return { method: 'GET', url: 'http://localhost/s', headers: [], body: null, streaming: true, ...overrides };
}

test('the head goes out before the body is produced', async () => {
  let controller;
  const handler = {
    fetch: () => new Response(new ReadableStream({ start(c) { controller = c; } }),
      { status: 201, headers: { 'content-type': 'text/event-stream' } }),
  };
  const [status, statusText, headers, body, waitUntil, stream] = await __dispatch(handler, init(), {});
  assert.equal(status, 201);
  assert.equal(statusText, '');
  assert.deepEqual(headers, [['content-type', 'text/event-stream']]);
  assert.equal(body, null);
  assert.equal(waitUntil, null);
  assert.equal(stream.chunks.length, 0);
  controller.enqueue(enc('data: 1\n\n'));
  await stream.changed();
  assert.equal(dec(stream.chunks), 'data: 1\n\n');
  controller.enqueue(enc('data: 2\n\n'));
  controller.close();
  while (!stream.ended) await stream.changed();
  assert.equal(dec(stream.chunks), 'data: 1\n\ndata: 2\n\n');
  assert.equal(stream.error, null);
});

test('string and bytes bodies keep the fast path when streaming is allowed', async () => {
  const result = await __dispatch({ fetch: () => new Response('plain') }, init(), {});
  assert.equal(result.length, 5);
  assert.equal(new TextDecoder().decode(result[3]), 'plain');
});

test('without streaming a stream body is read whole', async () => {
  const handler = {
    fetch: () => new Response(new ReadableStream({
      start(c) { c.enqueue(enc('a')); c.enqueue(enc('b')); c.close(); },
    })),
  };
  const result = await __dispatch(handler, init({ streaming: false }), {});
  assert.equal(result.length, 5);
  assert.equal(new TextDecoder().decode(result[3]), 'ab');
});

test('a reader without credit stops the app pull until credit comes', async () => {
  let pulls = 0;
  const handler = {
    fetch: () => new Response(new ReadableStream({
      pull(c) { pulls++; c.enqueue(new Uint8Array(1000)); },
    }, { highWaterMark: 0 })),
  };
  const [, , , , , stream] = await __dispatch(handler, init({ credit: 3000 }), {});
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(stream.bytes, 3000);
  assert.equal(stream.credit, 0);
  const pullsWhenBlocked = pulls;
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(pulls, pullsWhenBlocked, 'no pull while there is no credit');
  stream.grant(2000);
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(stream.bytes, 5000);
  stream.cancel('The client disconnected', 'AbortError');
});

test('a large chunk crosses in pieces of 64 KiB', async () => {
  const big = new Uint8Array(200 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  const handler = {
    fetch: () => new Response(new ReadableStream({ start(c) { c.enqueue(big); c.close(); } })),
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  while (!stream.ended) await stream.changed();
  assert.deepEqual(stream.chunks.map((c) => c.byteLength), [65536, 65536, 65536, 8192]);
  const all = concat(stream.chunks);
  assert.equal(all.length, big.length);
  assert.equal(all[200000], 200000 % 251);
});

test('a chunk split by credit resumes where it stopped', async () => {
  const big = new Uint8Array(100 * 1024).fill(7);
  const handler = {
    fetch: () => new Response(new ReadableStream({ start(c) { c.enqueue(big); c.close(); } })),
  };
  const [, , , , , stream] = await __dispatch(handler, init({ credit: 1 }), {});
  for (let i = 0; i < 10; i++) await tick();
  assert.equal(stream.bytes, 65536, 'one piece, then no credit');
  stream.grant(1 << 20);
  while (!stream.ended) await stream.changed();
  assert.equal(stream.bytes, 100 * 1024);
});

test('a cancel from the host reaches the underlying source and the request signal', async () => {
  let reason = null;
  let request;
  const handler = {
    fetch(req) {
      request = req;
      return new Response(new ReadableStream({
        start(c) { c.enqueue(enc('x')); },
        cancel(r) { reason = r; },
      }));
    },
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  await tick();
  stream.cancel('the client went away', 'AbortError');
  for (let i = 0; i < 5; i++) await tick();
  assert(reason instanceof DOMException);
  assert.equal(reason.name, 'AbortError');
  assert.equal(reason.message, 'the client went away');
  assert.equal(request.signal.aborted, true);
  assert.equal(request.signal.reason, reason);
});

test('a stream limit cancels with a TimeoutError', async () => {
  let reason = null;
  const handler = {
    fetch: () => new Response(new ReadableStream({ cancel(r) { reason = r; } })),
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  stream.cancel('the response stream produced nothing for 10 ms', 'TimeoutError');
  for (let i = 0; i < 5; i++) await tick();
  assert.equal(reason.name, 'TimeoutError');
});

test('an error mid stream fails the stream after its head', async () => {
  const handler = {
    fetch: () => new Response(new ReadableStream({
      start(c) { c.enqueue(enc('part')); setTimeout(() => c.error(new RangeError('broke')), 1); },
    })),
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  while (stream.error === null) await stream.changed();
  assert(stream.error instanceof RangeError);
  assert.equal(dec(stream.chunks), 'part');
  assert.equal(stream.ended, false);
});

test('a chunk that is not bytes fails the stream with a TypeError', async () => {
  let reason = null;
  const handler = {
    fetch: () => new Response(new ReadableStream({
      start(c) { c.enqueue('text'); },
      cancel(r) { reason = r; },
    })),
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  while (stream.error === null) await stream.changed();
  assert(stream.error instanceof TypeError);
  await tick();
  assert(reason instanceof TypeError, 'the app stream is cancelled with the same error');
});

test('waitUntil work is handed over at the end of the stream', async () => {
  let finish;
  const handler = {
    fetch(req, env, ctx) {
      ctx.waitUntil(new Promise((r) => { finish = r; }));
      return new Response(new ReadableStream({ start(c) { c.enqueue(enc('a')); c.close(); } }));
    },
  };
  const [, , , , , stream] = await __dispatch(handler, init(), {});
  while (!stream.ended) await stream.changed();
  assert(stream.waitUntil instanceof Promise);
  finish();
  await stream.waitUntil;
});

test('prototype tricks do not reach the pump', async () => {
  const saved = {
    read: ReadableStreamDefaultReader.prototype.read,
    subarray: Uint8Array.prototype.subarray,
    then: Promise.prototype.then,
  };
  const handler = {
    fetch() {
      const body = new ReadableStream({
        start(c) { c.enqueue(new Uint8Array(70 * 1024).fill(1)); c.close(); },
      });
      ReadableStreamDefaultReader.prototype.read = () => { throw new Error('app read'); };
      Uint8Array.prototype.subarray = () => { throw new Error('app subarray'); };
      return new Response(body);
    },
  };
  try {
    const [, , , , , stream] = await __dispatch(handler, init(), {});
    while (!stream.ended && stream.error === null) await stream.changed();
    assert.equal(stream.error, null);
    assert.equal(stream.bytes, 70 * 1024);
  } finally {
    ReadableStreamDefaultReader.prototype.read = saved.read;
    Uint8Array.prototype.subarray = saved.subarray;
  }
});

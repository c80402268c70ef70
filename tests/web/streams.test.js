// ReadableStream, WritableStream, TransformStream and friends (WHATWG Streams).

async function readAll(stream) {
  const reader = stream.getReader();
  const out = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

test('ReadableStream with a start enqueue', async () => {
  const s = new ReadableStream({
    start(c) { c.enqueue('a'); c.enqueue('b'); c.close(); },
  });
  assert.equal(s.locked, false);
  assert.deepEqual(await readAll(s), ['a', 'b']);
});

test('ReadableStream pull and backpressure', async () => {
  let i = 0;
  const s = new ReadableStream({
    pull(c) {
      i++;
      if (i > 3) c.close();
      else c.enqueue(i);
    },
  }, new CountQueuingStrategy({ highWaterMark: 1 }));
  assert.deepEqual(await readAll(s), [1, 2, 3]);
});

test('locked streams and releaseLock', async () => {
  const s = new ReadableStream();
  const reader = s.getReader();
  assert.equal(s.locked, true);
  assert.throws(() => s.getReader(), TypeError);
  reader.releaseLock();
  assert.equal(s.locked, false);
  assert(s.getReader() instanceof ReadableStreamDefaultReader);
});

test('cancel calls the source cancel with the reason', async () => {
  let reason;
  const s = new ReadableStream({ cancel(r) { reason = r; } });
  await s.cancel('stop');
  assert.equal(reason, 'stop');
});

test('errored stream rejects reads', async () => {
  const s = new ReadableStream({ start(c) { c.error(new TypeError('bad')); } });
  await assert.rejects(s.getReader().read(), TypeError, /bad/);
});

test('tee gives two copies', async () => {
  const s = new ReadableStream({ start(c) { c.enqueue(1); c.enqueue(2); c.close(); } });
  const [a, b] = s.tee();
  assert.deepEqual(await readAll(a), [1, 2]);
  assert.deepEqual(await readAll(b), [1, 2]);
});

test('async iteration', async () => {
  const s = new ReadableStream({ start(c) { c.enqueue('x'); c.enqueue('y'); c.close(); } });
  const out = [];
  for await (const chunk of s) out.push(chunk);
  assert.deepEqual(out, ['x', 'y']);
});

test('ReadableStream from an iterable', async () => {
  assert.equal(typeof ReadableStream.from, 'function');
  const s = ReadableStream.from((function* () { yield 1; yield 2; })());
  assert.deepEqual(await readAll(s), [1, 2]);
});

test('byte streams and BYOB readers', async () => {
  const s = new ReadableStream({
    type: 'bytes',
    start(c) { c.enqueue(new Uint8Array([1, 2, 3, 4])); c.close(); },
  });
  const reader = s.getReader({ mode: 'byob' });
  assert(reader instanceof ReadableStreamBYOBReader);
  const first = await reader.read(new Uint8Array(2));
  assert.deepEqual(Array.from(first.value), [1, 2]);
  const second = await reader.read(new Uint8Array(8));
  assert.deepEqual(Array.from(second.value), [3, 4]);
  const end = await reader.read(new Uint8Array(1));
  assert.equal(end.done, true);
});

test('byte stream enqueue does not call structuredClone', async () => {
  const original = globalThis.structuredClone;
  let calls = 0;
  globalThis.structuredClone = (...args) => { calls++; return original(...args); };
  try {
    const s = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(new Uint8Array([7])); c.close(); } });
    const chunks = await readAll(s);
    assert.deepEqual(Array.from(chunks[0]), [7]);
  } finally {
    globalThis.structuredClone = original;
  }
  assert.equal(calls, 0);
});

test('WritableStream receives chunks in order', async () => {
  const written = [];
  let closed = false;
  const ws = new WritableStream({
    write(chunk) { written.push(chunk); },
    close() { closed = true; },
  });
  const writer = ws.getWriter();
  assert(writer instanceof WritableStreamDefaultWriter);
  await writer.write('a');
  await writer.write('b');
  await writer.close();
  assert.deepEqual(written, ['a', 'b']);
  assert.equal(closed, true);
});

test('WritableStream abort', async () => {
  let reason;
  const ws = new WritableStream({ abort(r) { reason = r; } });
  await ws.abort('nope');
  assert.equal(reason, 'nope');
});

test('TransformStream and pipeThrough', async () => {
  const upper = new TransformStream({
    transform(chunk, controller) { controller.enqueue(chunk.toUpperCase()); },
  });
  const s = new ReadableStream({ start(c) { c.enqueue('a'); c.enqueue('b'); c.close(); } });
  assert.deepEqual(await readAll(s.pipeThrough(upper)), ['A', 'B']);
});

test('pipeTo with an abort signal rejects with the reason', async () => {
  const controller = new AbortController();
  const s = new ReadableStream({ pull() { return new Promise(() => {}); } });
  const ws = new WritableStream();
  const p = s.pipeTo(ws, { signal: controller.signal });
  controller.abort();
  const e = await assert.rejects(p, 'AbortError');
  assert(e instanceof DOMException);
});

test('queuing strategies', () => {
  const bl = new ByteLengthQueuingStrategy({ highWaterMark: 16 });
  assert.equal(bl.highWaterMark, 16);
  assert.equal(bl.size(new Uint8Array(5)), 5);
  const c = new CountQueuingStrategy({ highWaterMark: 3 });
  assert.equal(c.highWaterMark, 3);
  assert.equal(c.size(), 1);
});

test('a Response body can be piped through a TransformStream', async () => {
  const decoder = new TextDecoder();
  const t = new TransformStream({
    transform(chunk, controller) { controller.enqueue(decoder.decode(chunk).toUpperCase()); },
  });
  const out = await readAll(new Response('shout').body.pipeThrough(t));
  assert.equal(out.join(''), 'SHOUT');
});

test('a Response can be built from a TransformStream readable side', async () => {
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  writer.write(new TextEncoder().encode('streamed '));
  writer.write(new TextEncoder().encode('body'));
  writer.close();
  assert.equal(await new Response(readable).text(), 'streamed body');
});

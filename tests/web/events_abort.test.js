// Event, EventTarget (DOM §2), AbortController and AbortSignal (DOM §3).

test('Event basics', () => {
  const e = new Event('ping', { cancelable: true, bubbles: true });
  assert.equal(e.type, 'ping');
  assert.equal(e.cancelable, true);
  assert.equal(e.bubbles, true);
  assert.equal(e.defaultPrevented, false);
  assert.equal(e.isTrusted, false);
  assert.equal(e.target, null);
  assert.equal(e.eventPhase, Event.NONE);
  assert.equal(typeof e.timeStamp, 'number');
  e.preventDefault();
  assert.equal(e.defaultPrevented, true);
  assert.throws(() => new Event(), TypeError);
  assert.equal(new Event(undefined).type, 'undefined');
});

test('preventDefault on a non cancelable event does nothing', () => {
  const e = new Event('x');
  e.preventDefault();
  assert.equal(e.defaultPrevented, false);
});

test('addEventListener and dispatchEvent', () => {
  const target = new EventTarget();
  const calls = [];
  const listener = (e) => calls.push(['fn', e.type, e.target === target, e.currentTarget === target]);
  target.addEventListener('x', listener);
  target.addEventListener('x', listener, {});
  target.addEventListener('x', { handleEvent(e) { calls.push(['obj', this === undefined ? 'undef' : 'obj']); } });
  const result = target.dispatchEvent(new Event('x'));
  assert.equal(result, true);
  assert.deepEqual(calls, [['fn', 'x', true, true], ['obj', 'obj']]);
  target.removeEventListener('x', listener);
  calls.length = 0;
  target.dispatchEvent(new Event('x'));
  assert.deepEqual(calls, [['obj', 'obj']]);
});

test('dispatchEvent returns false when canceled', () => {
  const target = new EventTarget();
  target.addEventListener('c', (e) => e.preventDefault());
  assert.equal(target.dispatchEvent(new Event('c', { cancelable: true })), false);
  assert.equal(target.dispatchEvent(new Event('c')), true);
});

test('once listeners run once', () => {
  const target = new EventTarget();
  let n = 0;
  target.addEventListener('x', () => n++, { once: true });
  target.dispatchEvent(new Event('x'));
  target.dispatchEvent(new Event('x'));
  assert.equal(n, 1);
});

test('listener signal removes the listener', () => {
  const target = new EventTarget();
  const controller = new AbortController();
  let n = 0;
  target.addEventListener('x', () => n++, { signal: controller.signal });
  target.dispatchEvent(new Event('x'));
  controller.abort();
  target.dispatchEvent(new Event('x'));
  assert.equal(n, 1);
  target.addEventListener('x', () => n++, { signal: AbortSignal.abort() });
  target.dispatchEvent(new Event('x'));
  assert.equal(n, 1);
});

test('stopImmediatePropagation stops later listeners', () => {
  const target = new EventTarget();
  const calls = [];
  target.addEventListener('x', (e) => { calls.push(1); e.stopImmediatePropagation(); });
  target.addEventListener('x', () => calls.push(2));
  target.dispatchEvent(new Event('x'));
  assert.deepEqual(calls, [1]);
});

test('a throwing listener is reported and others still run', () => {
  const start = __capturedLogs.length;
  const target = new EventTarget();
  let second = false;
  target.addEventListener('x', () => { throw new Error('listener boom'); });
  target.addEventListener('x', () => { second = true; });
  target.dispatchEvent(new Event('x'));
  assert.equal(second, true);
  assert(logsSince(start).some(([level, text]) => level === 'error' && text.includes('listener boom')));
});

test('dispatchEvent requires an Event', () => {
  const target = new EventTarget();
  assert.throws(() => target.dispatchEvent({ type: 'x' }), TypeError);
  assert.throws(() => target.dispatchEvent(), TypeError);
});

test('redispatching an event being dispatched throws InvalidStateError', () => {
  const target = new EventTarget();
  let error;
  target.addEventListener('x', (e) => {
    try { target.dispatchEvent(e); } catch (err) { error = err; }
  });
  target.dispatchEvent(new Event('x'));
  assert(error instanceof DOMException);
  assert.equal(error.name, 'InvalidStateError');
});

test('EventTarget can be subclassed', () => {
  class Emitter extends EventTarget {}
  const em = new Emitter();
  let got = null;
  em.addEventListener('hi', (e) => { got = e.target; });
  em.dispatchEvent(new Event('hi'));
  assert.equal(got, em);
});

test('AbortController abort with default reason', () => {
  const controller = new AbortController();
  const { signal } = controller;
  assert.equal(signal.aborted, false);
  assert.equal(signal.reason, undefined);
  signal.throwIfAborted();
  controller.abort();
  assert.equal(signal.aborted, true);
  assert(signal.reason instanceof DOMException);
  assert.equal(signal.reason.name, 'AbortError');
  assert.equal(signal.reason.code, 20);
  const e = assert.throws(() => signal.throwIfAborted(), 'AbortError');
  assert.equal(e, signal.reason);
});

test('abort with a reason and only once', () => {
  const controller = new AbortController();
  let events = 0;
  controller.signal.addEventListener('abort', (e) => {
    events++;
    assert.equal(e.type, 'abort');
    assert.equal(e.target, controller.signal);
  });
  controller.abort('first');
  controller.abort('second');
  assert.equal(controller.signal.reason, 'first');
  assert.equal(events, 1);
  const err = new Error('custom');
  const c2 = new AbortController();
  c2.abort(err);
  assert.equal(assert.throws(() => c2.signal.throwIfAborted(), Error), err);
  const c3 = new AbortController();
  c3.abort(null);
  assert.equal(c3.signal.reason, null);
});

test('onabort handler', () => {
  const controller = new AbortController();
  const calls = [];
  assert.equal(controller.signal.onabort, null);
  const handler = (e) => calls.push(e.type);
  controller.signal.onabort = handler;
  assert.equal(controller.signal.onabort, handler);
  controller.signal.addEventListener('abort', () => calls.push('listener'));
  controller.abort();
  assert.deepEqual(calls, ['abort', 'listener']);
  controller.signal.onabort = 'not a function';
  assert.equal(controller.signal.onabort, null);
});

test('AbortSignal abort static', () => {
  const s = AbortSignal.abort();
  assert.equal(s.aborted, true);
  assert.equal(s.reason.name, 'AbortError');
  assert.equal(AbortSignal.abort('r').reason, 'r');
  assert(s instanceof EventTarget);
});

test('AbortSignal timeout aborts with TimeoutError', async () => {
  const s = AbortSignal.timeout(10);
  assert.equal(s.aborted, false);
  const event = await new Promise((resolve) => s.addEventListener('abort', resolve));
  assert.equal(event.type, 'abort');
  assert.equal(s.aborted, true);
  assert(s.reason instanceof DOMException);
  assert.equal(s.reason.name, 'TimeoutError');
  assert.equal(s.reason.code, 23);
});

test('AbortSignal timeout argument is an unsigned long long', () => {
  assert.throws(() => AbortSignal.timeout(-1), TypeError);
  assert.throws(() => AbortSignal.timeout(Infinity), TypeError);
  assert.throws(() => AbortSignal.timeout(NaN), TypeError);
  assert.throws(() => AbortSignal.timeout(), TypeError);
  assert.equal(AbortSignal.timeout(0).aborted, false, 'aborts later, not synchronously');
});

test('AbortSignal any follows its sources', () => {
  const a = new AbortController();
  const b = new AbortController();
  const any = AbortSignal.any([a.signal, b.signal]);
  assert.equal(any.aborted, false);
  let fired = 0;
  any.addEventListener('abort', () => fired++);
  b.abort('from b');
  assert.equal(any.aborted, true);
  assert.equal(any.reason, 'from b');
  a.abort('from a');
  assert.equal(any.reason, 'from b');
  assert.equal(fired, 1);
});

test('AbortSignal any with an aborted source is aborted at once', () => {
  const any = AbortSignal.any([new AbortController().signal, AbortSignal.abort('early')]);
  assert.equal(any.aborted, true);
  assert.equal(any.reason, 'early');
  assert.equal(AbortSignal.any([]).aborted, false);
});

test('AbortSignal any of any follows the original sources', () => {
  const a = new AbortController();
  const inner = AbortSignal.any([a.signal]);
  const outer = AbortSignal.any([inner]);
  const order = [];
  inner.addEventListener('abort', () => order.push('inner'));
  outer.addEventListener('abort', () => order.push('outer'));
  a.signal.addEventListener('abort', () => order.push('source'));
  a.abort();
  assert.equal(outer.aborted, true);
  assert.deepEqual(order, ['source', 'inner', 'outer']);
});

test('dependent signals see the reason before events fire', () => {
  const a = new AbortController();
  const dep = AbortSignal.any([a.signal]);
  let seen;
  a.signal.addEventListener('abort', () => { seen = dep.aborted; });
  a.abort();
  assert.equal(seen, true);
});

test('AbortSignal any rejects non signals', () => {
  assert.throws(() => AbortSignal.any([{}]), TypeError);
  assert.throws(() => AbortSignal.any(null), TypeError);
  assert.throws(() => AbortSignal.any(), TypeError);
});

test('Event timeStamp is relative to the time origin', () => {
  const before = performance.now();
  const e = new Event('t');
  const after = performance.now();
  assert(e.timeStamp >= before && e.timeStamp <= after, `${before} <= ${e.timeStamp} <= ${after}`);
});

test('CustomEvent ErrorEvent and PromiseRejectionEvent carry their values', async () => {
  const target = new EventTarget();
  let seen = null;
  target.addEventListener('ping', (e) => { seen = e.detail; });
  target.dispatchEvent(new CustomEvent('ping', { detail: { n: 1 } }));
  assert.deepEqual(seen, { n: 1 });
  assert.equal(new CustomEvent('x').detail, null);
  assert(new CustomEvent('x') instanceof Event);
  const boom = new Error('boom');
  const err = new ErrorEvent('error', { message: 'm', filename: 'f.js', lineno: 3, colno: 4, error: boom });
  assert.equal(err.message, 'm');
  assert.equal(err.filename, 'f.js');
  assert.equal(err.lineno, 3);
  assert.equal(err.colno, 4);
  assert.equal(err.error, boom);
  assert.equal(new ErrorEvent('error').message, '');
  const promise = Promise.reject(new Error('no'));
  promise.catch(() => {});
  const rejection = new PromiseRejectionEvent('unhandledrejection', { promise, reason: 'why' });
  assert.equal(rejection.promise, promise);
  assert.equal(rejection.reason, 'why');
  assert.throws(() => new PromiseRejectionEvent('unhandledrejection', {}), TypeError);
  assert.throws(() => new CustomEvent(), TypeError);
  const detail = Object.getOwnPropertyDescriptor(CustomEvent.prototype, 'detail').get;
  assert.throws(() => detail.call(new Event('x')), TypeError);
});

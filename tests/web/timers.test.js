// setTimeout/setInterval/clearTimeout/clearInterval and queueMicrotask (HTML).

test('setTimeout returns a positive integer id', () => {
  const id = setTimeout(() => {}, 10);
  assert.equal(typeof id, 'number');
  assert(Number.isInteger(id) && id > 0);
  const id2 = setTimeout(() => {}, 10);
  assert.notEqual(id, id2);
  clearTimeout(id);
  clearTimeout(id2);
});

test('timers fire in order of delay then of creation', async () => {
  const order = [];
  setTimeout(() => order.push('c'), 30);
  setTimeout(() => order.push('a1'), 0);
  setTimeout(() => order.push('b'), 10);
  setTimeout(() => order.push('a2'), 0);
  await sleep(60);
  assert.deepEqual(order, ['a1', 'a2', 'b', 'c']);
});

test('extra arguments are passed to the callback', async () => {
  let got;
  setTimeout((...args) => { got = args; }, 0, 1, 'two', null);
  await sleep(10);
  assert.deepEqual(got, [1, 'two', null]);
});

test('callback this is the global object', async () => {
  let self;
  setTimeout(function () { self = this; }, 0);
  await sleep(10);
  assert.equal(self, globalThis);
});

test('clearTimeout cancels', async () => {
  let fired = false;
  const id = setTimeout(() => { fired = true; }, 5);
  clearTimeout(id);
  await sleep(20);
  assert.equal(fired, false);
});

test('clearTimeout ignores unknown and odd ids', () => {
  clearTimeout();
  clearTimeout(undefined);
  clearTimeout(null);
  clearTimeout(123456);
  clearTimeout('nope');
  clearTimeout({});
  clearInterval(-1);
});

test('clearInterval and clearTimeout are interchangeable', async () => {
  let count = 0;
  const id = setInterval(() => { count++; }, 5);
  clearTimeout(id);
  const id2 = setTimeout(() => { count += 100; }, 5);
  clearInterval(id2);
  await sleep(25);
  assert.equal(count, 0);
});

test('setInterval repeats until cleared', async () => {
  let count = 0;
  let id;
  await new Promise((resolve) => {
    id = setInterval((step) => {
      count += step;
      if (count >= 3) {
        clearInterval(id);
        resolve();
      }
    }, 2, 1);
  });
  const at = count;
  await sleep(15);
  assert.equal(count, at, 'no more calls after clearInterval');
  assert.equal(at, 3);
});

test('non function callbacks throw TypeError', () => {
  assert.throws(() => setTimeout('code()', 0), TypeError);
  assert.throws(() => setInterval('code()', 0), TypeError);
  assert.throws(() => setTimeout(null), TypeError);
  assert.throws(() => setTimeout(), TypeError);
});

test('negative NaN and huge delays run as soon as possible', async () => {
  const fired = [];
  setTimeout(() => fired.push('neg'), -100);
  setTimeout(() => fired.push('nan'), NaN);
  setTimeout(() => fired.push('str'), '1');
  setTimeout(() => fired.push('wrap'), 2 ** 32);
  await sleep(20);
  assert.deepEqual(fired.sort(), ['nan', 'neg', 'str', 'wrap']);
});

test('an exception in a timer callback is reported and later timers run', async () => {
  const start = __capturedLogs.length;
  setTimeout(() => { throw new Error('timer boom'); }, 0);
  let ran = false;
  setTimeout(() => { ran = true; }, 5);
  await sleep(20);
  assert.equal(ran, true);
  const logs = logsSince(start);
  assert(logs.some(([level, text]) => level === 'error' && text.includes('timer boom')), JSON.stringify(logs));
});

test('queueMicrotask runs before timers and in order', async () => {
  const order = [];
  setTimeout(() => order.push('timeout'), 0);
  queueMicrotask(() => order.push('m1'));
  Promise.resolve().then(() => order.push('p'));
  queueMicrotask(() => order.push('m2'));
  order.push('sync');
  await sleep(10);
  assert.deepEqual(order, ['sync', 'm1', 'p', 'm2', 'timeout']);
});

test('queueMicrotask requires a function', () => {
  assert.throws(() => queueMicrotask('x'), TypeError);
  assert.throws(() => queueMicrotask(), TypeError);
  assert.throws(() => queueMicrotask({}), TypeError);
});

test('an exception in a microtask is reported', async () => {
  const start = __capturedLogs.length;
  queueMicrotask(() => { throw new TypeError('micro boom'); });
  await sleep(0);
  assert(logsSince(start).some(([level, text]) => level === 'error' && text.includes('micro boom')));
});

test('performance now and timeOrigin', async () => {
  const a = performance.now();
  assert.equal(typeof a, 'number');
  assert(a >= 0);
  await sleep(15);
  const b = performance.now();
  assert(b - a >= 10, `elapsed ${b - a}`);
  assert(Math.abs(performance.timeOrigin + b - Date.now()) < 1000, 'timeOrigin is wall clock');
  assert.deepEqual(Object.keys(performance.toJSON()), ['timeOrigin']);
  const { now } = Performance.prototype;
  assert.equal(typeof now.call(performance), 'number');
});

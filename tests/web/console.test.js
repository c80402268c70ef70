// console (WHATWG Console) with Node's util.format/util.inspect formatting. The expected strings
// are what Node 18 prints for the same calls. Output is observed through __capturedLogs, which
// the runner fills from host.log(level, text).

function logged(fn) {
  const start = __capturedLogs.length;
  fn();
  return logsSince(start);
}

function logText(...args) {
  const lines = logged(() => console.log(...args));
  assert.equal(lines.length, 1, 'one log call');
  assert.equal(lines[0][0], 'log');
  return lines[0][1];
}

class Foo { constructor() { this.x = 1; this.y = 'two'; } }
class Empty {}

test('levels', () => {
  const lines = logged(() => {
    console.log('l');
    console.info('i');
    console.debug('d');
    console.warn('w');
    console.error('e');
  });
  assert.deepEqual(lines, [['log', 'l'], ['info', 'i'], ['debug', 'd'], ['warn', 'w'], ['error', 'e']]);
});

test('methods work detached from console', () => {
  const { log } = console;
  const lines = logged(() => log('detached'));
  assert.deepEqual(lines, [['log', 'detached']]);
});

test('format specifiers s d i f', () => {
  assert.equal(logText('%s is %d years and %i, %f', 'Bob', 42.5, 42.9, '3.25'), 'Bob is 42.5 years and 42, 3.25');
  assert.equal(logText('%s %s', 5n, -0), '5n -0');
  assert.equal(logText('%d %i', 7n, '0x10'), '7n 16');
  assert.equal(logText('%s', Symbol('sym')), 'Symbol(sym)');
  assert.equal(logText('%d', Symbol('x')), 'NaN');
  assert.equal(logText('%s', null, undefined), 'null undefined');
});

test('format s with objects inspects at depth 0', () => {
  assert.equal(logText('%s', { a: 1 }), '{ a: 1 }');
  assert.equal(logText('%s', [1, [2, [3]]]), '[ 1, [Array] ]');
  assert.equal(logText('%s', { toString() { return 'custom'; } }), 'custom');
});

test('format o shows hidden properties', () => {
  assert.equal(logText('%o', { a: [1] }), '{ a: [ 1, [length]: 1 ] }');
});

test('format j o O c and percent', () => {
  assert.equal(logText('%j', { a: [1, 'x'] }), '{"a":[1,"x"]}');
  const circ = {};
  circ.self = circ;
  assert.equal(logText('%j', circ), '[Circular]');
  assert.equal(logText('100%% sure %c styled', 'color: red'), '100% sure  styled');
  assert.equal(logText('%o', [1, 2]), '[ 1, 2, [length]: 2 ]');
  assert.equal(logText('%O', { a: { b: { c: { d: 1 } } } }), '{ a: { b: { c: [Object] } } }');
});

test('format leftovers', () => {
  assert.equal(logText('%s'), '%s');
  assert.equal(logText('%x %s', 1), '%x 1');
  assert.equal(logText('a', 'b', 1, { c: 2 }), 'a b 1 { c: 2 }');
  assert.equal(logText('trailing %'), 'trailing %');
  assert.equal(logText('%s and', 'x', 'rest', 2), 'x and rest 2');
  assert.equal(logText(), '');
});

test('inspect objects and arrays', () => {
  assert.equal(logText({ a: 1, b: 'x' }), "{ a: 1, b: 'x' }");
  assert.equal(logText([1, 2]), '[ 1, 2 ]');
  assert.equal(logText([]), '[]');
  assert.equal(logText({}), '{}');
  assert.equal(logText([undefined, null, -0, 1n, true]), '[ undefined, null, -0, 1n, true ]');
  assert.equal(logText({ 'a-b': 1, valid_id: 2, 3: 'x', [Symbol('s')]: 4 }), "{ '3': 'x', 'a-b': 1, valid_id: 2, [Symbol(s)]: 4 }");
  assert.equal(logText(Object.assign([1, 2], { extra: true })), '[ 1, 2, extra: true ]');
  assert.equal(logText([, 1, , , 2]), '[ <1 empty item>, 1, <2 empty items>, 2 ]');
  assert.equal(logText(new Array(5)), '[ <5 empty items> ]');
  assert.equal(logText(1, 'two', null), '1 two null');
});

test('inspect depth limit of 2', () => {
  assert.equal(logText({ a: { b: { c: { d: {} } } } }), '{ a: { b: { c: [Object] } } }');
  assert.equal(logText({ a: { b: { c: {} } } }), '{ a: { b: { c: {} } } }');
  assert.equal(logText([[1, [2, [3, [4]]]]]), '[ [ 1, [ 2, [Array] ] ] ]');
  assert.equal(logText({ nested: { arr: [1, 2, 3], obj: { deep: { deeper: true } } } }),
    '{ nested: { arr: [ 1, 2, 3 ], obj: { deep: [Object] } } }');
  assert.equal(logText({ a: [{ b: [{ c: 1 }] }] }), '{ a: [ { b: [Array] } ] }');
});

test('inspect circular references', () => {
  const circ = { name: 'root' };
  circ.self = circ;
  circ.list = [circ, { back: circ }];
  assert.equal(logText(circ),
    "<ref *1> {\n  name: 'root',\n  self: [Circular *1],\n  list: [ [Circular *1], { back: [Circular *1] } ]\n}");
});

test('inspect Map Set and class instances', () => {
  assert.equal(logText(new Map([['a', 1], ['b', { c: 2 }]])), "Map(2) { 'a' => 1, 'b' => { c: 2 } }");
  assert.equal(logText(new Set([1, 'two'])), "Set(2) { 1, 'two' }");
  assert.equal(logText(new Map()), 'Map(0) {}');
  assert.equal(logText(new Map([[{ k: 1 }, new Set([1])]])), 'Map(1) { { k: 1 } => Set(1) { 1 } }');
  assert.equal(logText(new Foo()), "Foo { x: 1, y: 'two' }");
  assert.equal(logText(new Empty()), 'Empty {}');
  assert.equal(logText(Object.create(null)), '[Object: null prototype] {}');
  assert.equal(logText(Object.assign(Object.create(null), { a: 1 })), '[Object: null prototype] { a: 1 }');
  assert.equal(logText(new WeakMap()), 'WeakMap { <items unknown> }');
});

test('inspect long arrays are grouped in columns', () => {
  assert.equal(logText([1, 2, 3, 4, 5, 6, 7]), '[\n  1, 2, 3, 4,\n  5, 6, 7\n]');
  assert.equal(logText(Array.from({ length: 30 }, (_, k) => k * 3)),
    '[\n   0,  3,  6,  9, 12, 15, 18, 21, 24,\n  27, 30, 33, 36, 39, 42, 45, 48, 51,\n  54, 57, 60, 63, 66, 69, 72, 75, 78,\n  81, 84, 87\n]');
  assert.equal(logText(Array.from({ length: 26 }, (_, k) => String.fromCharCode(97 + k).repeat(k % 5 + 1))),
    "[\n  'a',     'bb',    'ccc',   'dddd',\n  'eeeee', 'f',     'gg',    'hhh',\n  'iiii',  'jjjjj', 'k',     'll',\n  'mmm',   'nnnn',  'ooooo', 'p',\n  'qq',    'rrr',   'ssss',  'ttttt',\n  'u',     'vv',    'www',   'xxxx',\n  'yyyyy', 'z'\n]");
});

test('inspect more than 100 items', () => {
  const text = logText(Array.from({ length: 120 }, (_, k) => k));
  assert(text.endsWith('  96, 97, 98, 99,\n  ... 20 more items\n]'), text);
  assert(text.startsWith('[\n   0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11,\n'), text);
});

test('inspect long entries break lines', () => {
  assert.equal(logText({ long: 'x'.repeat(70), other: 'y'.repeat(20) }),
    `{\n  long: '${'x'.repeat(70)}',\n  other: '${'y'.repeat(20)}'\n}`);
});

test('inspect strings quoting and escapes', () => {
  assert.equal(logText(["it's"]), '[ "it\'s" ]');
  assert.equal(logText(['both \' and "']), '[ `both \' and "` ]');
  assert.equal(logText(['line\nbreak\t\x01']), "[ 'line\\nbreak\\t\\x01' ]");
  assert.equal(logText(['str']), "[ 'str' ]");
});

test('inspect functions and classes', () => {
  assert.equal(logText(function named() {}), '[Function: named]');
  assert.equal(logText(() => {}), '[Function (anonymous)]');
  assert.equal(logText(class A {}), '[class A]');
  assert.equal(logText(class B extends Foo {}), '[class B extends Foo]');
  assert.equal(logText(async function af() {}), '[AsyncFunction: af]');
  assert.equal(logText(function* g() {}), '[GeneratorFunction: g]');
  assert.equal(logText({ f: function () {} }), '{ f: [Function: f] }');
  assert.equal(logText(Object.assign(() => {}, { prop: 1 })), '[Function (anonymous)] { prop: 1 }');
});

test('inspect other built ins', () => {
  assert.equal(logText(new Date(0)), '1970-01-01T00:00:00.000Z');
  assert.equal(logText(/re+/g), '/re+/g');
  assert.equal(logText(new Uint8Array([1, 2, 3])), 'Uint8Array(3) [ 1, 2, 3 ]');
  assert.equal(logText(new Uint8Array([1, 2]).buffer), 'ArrayBuffer { [Uint8Contents]: <01 02>, byteLength: 2 }');
  assert.equal(logText({ get g() { return 1; }, set s(v) {}, get gs() { return 1; }, set gs(v) {} }),
    '{ g: [Getter], s: [Setter], gs: [Getter/Setter] }');
  assert.equal(logText(new Number(3)), '[Number: 3]');
  assert.equal(logText(new String('ab')), "[String: 'ab']");
  assert.equal(logText(Symbol('q')), 'Symbol(q)');
});

test('inspect errors shows the stack', () => {
  const e = new Error('msg');
  const text = logText(e);
  assert(text.startsWith('Error: msg\n    at '), text);
  const nested = logText({ e });
  assert(nested.startsWith('{\n  e: Error: msg\n      at '), nested);
  const withProps = logText(Object.assign(new TypeError('bad'), { code: 'E_BAD' }));
  assert(withProps.startsWith('TypeError: bad\n    at '), withProps);
  assert(withProps.endsWith("{\n  code: 'E_BAD'\n}"), withProps);
  const noStack = new Error('plain');
  noStack.stack = undefined;
  assert.equal(logText(noStack), '[Error: plain]');
});

test('inspect DOMException', () => {
  const text = logText(new DOMException('nope', 'NotFoundError'));
  assert(text.startsWith('NotFoundError: nope'), text);
});

test('inspect runtime objects', () => {
  assert.equal(logText(new Headers({ 'Content-Type': 'text/plain', 'x-a': '1' })),
    "Headers { 'content-type': 'text/plain', 'x-a': '1' }");
  assert.equal(logText(new URL('https://a.example/p?q=1')), [
    'URL {', "  href: 'https://a.example/p?q=1',", "  origin: 'https://a.example',", "  protocol: 'https:',",
    "  username: '',", "  password: '',", "  host: 'a.example',", "  hostname: 'a.example',", "  port: '',",
    "  pathname: '/p',", "  search: '?q=1',", "  searchParams: URLSearchParams { 'q' => '1' },", "  hash: ''", '}',
  ].join('\n'));
  assert.equal(logText(new URLSearchParams('a=1&b=2')), "URLSearchParams { 'a' => '1', 'b' => '2' }");
  assert.equal(logText({ u: new URLSearchParams() }), '{ u: URLSearchParams {} }');
  assert.equal(logText(new AbortController()), 'AbortController { signal: AbortSignal { aborted: false } }');
  assert.equal(logText(new TextDecoder()), "TextDecoder { encoding: 'utf-8', fatal: false, ignoreBOM: false }");
  const stream = logText(new ReadableStream());
  assert(stream.startsWith('ReadableStream {') && stream.includes("state: 'readable'") && !stream.includes('_'), stream);
  const response = new Response('x', { status: 201 });
  const res = logText(response);
  assert(res.startsWith('Response {'), res);
  assert(res.includes('status: 201'), res);
  assert(res.includes("body: ReadableStream { locked: false, state: 'readable', supportsBYOB: true }"), res);
  assert(res.includes("headers: Headers { 'content-type': 'text/plain;charset=UTF-8' }"), res);
  const req = logText(new Request('https://a.example/'));
  assert(req.includes("url: 'https://a.example/'"), req);
  assert(req.includes("method: 'GET'"), req);
});

test('custom inspect symbol is honoured', () => {
  const obj = { [Symbol.for('nodejs.util.inspect.custom')]() { return 'CUSTOM'; } };
  assert.equal(logText(obj), 'CUSTOM');
  assert.equal(logText({ inner: obj }), '{ inner: CUSTOM }');
});

test('group indents output', () => {
  const lines = logged(() => {
    console.group('Title');
    console.log('inside');
    console.group();
    console.warn('deeper\nsecond line');
    console.groupEnd();
    console.groupEnd();
    console.groupEnd();
    console.log('outside');
  });
  assert.deepEqual(lines, [
    ['log', 'Title'],
    ['log', '  inside'],
    ['warn', '    deeper\n    second line'],
    ['log', 'outside'],
  ]);
});

test('assert', () => {
  const lines = logged(() => {
    console.assert(true, 'not shown');
    console.assert(false, 'shown %s', 'here');
    console.assert(0);
    console.assert(false, { a: 1 });
  });
  assert.deepEqual(lines, [
    ['error', 'Assertion failed: shown here'],
    ['error', 'Assertion failed'],
    ['error', 'Assertion failed: { a: 1 }'],
  ]);
});

test('count and countReset', () => {
  const lines = logged(() => {
    console.count();
    console.count();
    console.count('x');
    console.countReset();
    console.count();
    console.countReset('missing');
  });
  assert.deepEqual(lines.map((l) => l[1]), ['default: 1', 'default: 2', 'x: 1', 'default: 1', "Count for 'missing' does not exist"]);
});

test('time timeLog and timeEnd', async () => {
  const start = __capturedLogs.length;
  console.time('t');
  await sleep(5);
  console.timeLog('t', 'extra');
  console.timeEnd('t');
  console.timeEnd('t');
  const lines = logsSince(start);
  assert.equal(lines.length, 3);
  assert(/^t: \d+\.\d{3}ms extra$/.test(lines[0][1]), lines[0][1]);
  assert(/^t: \d+\.\d{3}ms$/.test(lines[1][1]), lines[1][1]);
  assert.deepEqual(lines[2], ['warn', "Timer 't' does not exist"]);
});

test('trace includes a stack', () => {
  const lines = logged(() => console.trace('here %d', 1));
  assert.equal(lines.length, 1);
  assert(lines[0][1].startsWith('Trace: here 1\n    at '), lines[0][1]);
});

test('dir ignores custom inspect', () => {
  const obj = { a: 1, [Symbol.for('nodejs.util.inspect.custom')]() { return 'CUSTOM'; } };
  const lines = logged(() => console.dir(obj));
  assert.equal(lines[0][1], '{\n  a: 1,\n  [Symbol(nodejs.util.inspect.custom)]: [Function: [nodejs.util.inspect.custom]]\n}');
});

test('console toStringTag', () => {
  assert.equal(Object.prototype.toString.call(console), '[object console]');
});

// A line is cut at 16 KiB of UTF-8 before it is copied out of JavaScript, never inside a
// character, and says how much went: console.log of 20 MiB is not a 20 MiB log line.
test('a huge line is cut at 16 KiB with a marker', () => {
  const line = logText('x'.repeat(20 * 1024 * 1024));
  assert.equal(line, `${'x'.repeat(16384)}... [console line cut: ${20 * 1024 * 1024 - 16384} more bytes]`);
  const wide = logText('a' + '\u00e9'.repeat(10000));  // 'a' then two-byte characters
  assert(wide.startsWith('a\u00e9'), wide.slice(0, 10));
  const kept = wide.slice(0, wide.indexOf('...'));
  assert.equal(kept, 'a' + '\u00e9'.repeat(8191));  // 16383 bytes: the next would split
  assert(wide.endsWith(`... [console line cut: ${20001 - 16383} more bytes]`), wide.slice(-60));
});

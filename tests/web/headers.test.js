// Headers (Fetch §5.2).

test('get is case insensitive', () => {
  const h = new Headers({ 'Content-Type': 'text/html' });
  assert.equal(h.get('content-type'), 'text/html');
  assert.equal(h.get('CONTENT-TYPE'), 'text/html');
  assert.equal(h.has('Content-type'), true);
  assert.equal(h.get('x-missing'), null);
  assert.equal(h.has('x-missing'), false);
});

test('append combines with comma space', () => {
  const h = new Headers();
  h.append('Accept', 'text/html');
  h.append('accept', 'application/json');
  assert.equal(h.get('ACCEPT'), 'text/html, application/json');
});

test('set replaces all values', () => {
  const h = new Headers([['a', '1'], ['a', '2']]);
  h.set('A', '3');
  assert.equal(h.get('a'), '3');
  assert.deepEqual([...h], [['a', '3']]);
});

test('delete removes every value', () => {
  const h = new Headers([['a', '1'], ['A', '2'], ['b', '3']]);
  h.delete('a');
  assert.equal(h.has('a'), false);
  assert.deepEqual([...h], [['b', '3']]);
  h.delete('not-there');
});

test('iteration is sorted and lowercased', () => {
  const h = new Headers([['Zeta', 'z'], ['alpha', 'a'], ['Mid', 'm'], ['ALPHA', 'b']]);
  assert.deepEqual([...h], [['alpha', 'a, b'], ['mid', 'm'], ['zeta', 'z']]);
  assert.deepEqual([...h.keys()], ['alpha', 'mid', 'zeta']);
  assert.deepEqual([...h.values()], ['a, b', 'm', 'z']);
  assert.deepEqual([...h.entries()], [...h]);
  assert.equal(h[Symbol.iterator], h.entries);
});

test('set cookie values are not combined in iteration', () => {
  const h = new Headers();
  h.append('Set-Cookie', 'a=1');
  h.append('set-cookie', 'b=2');
  h.append('Content-Type', 'text/plain');
  h.append('X-Z', 'z');
  assert.deepEqual([...h], [
    ['content-type', 'text/plain'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x-z', 'z'],
  ]);
  assert.equal(h.get('set-cookie'), 'a=1, b=2');
});

test('getSetCookie returns each value', () => {
  const h = new Headers([['Set-Cookie', 'a=1; Path=/'], ['Set-Cookie', 'b=2, c=3']]);
  assert.deepEqual(h.getSetCookie(), ['a=1; Path=/', 'b=2, c=3']);
  assert.deepEqual(new Headers().getSetCookie(), []);
  const list = h.getSetCookie();
  list.push('x');
  assert.equal(h.getSetCookie().length, 2, 'returns a copy');
  h.set('set-cookie', 'only=1');
  assert.deepEqual(h.getSetCookie(), ['only=1']);
  h.delete('Set-Cookie');
  assert.deepEqual(h.getSetCookie(), []);
  assert.equal(h.has('set-cookie'), false);
});

test('values are stripped of leading and trailing HTTP whitespace', () => {
  const h = new Headers();
  h.append('a', ' \t value \r\n');
  assert.equal(h.get('a'), 'value');
  h.set('b', '\n\n');
  assert.equal(h.get('b'), '');
  h.append('c', 'in  side');
  assert.equal(h.get('c'), 'in  side');
});

test('invalid header names throw TypeError', () => {
  for (const name of ['', 'a b', 'a:b', 'é', 'a\n', '(x)', 'a"b', '[x]', 'a/b', '{', 'a@b']) {
    assert.throws(() => new Headers([[name, 'v']]), TypeError, undefined);
    assert.throws(() => new Headers().append(name, 'v'), TypeError);
    assert.throws(() => new Headers().get(name), TypeError);
    assert.throws(() => new Headers().has(name), TypeError);
    assert.throws(() => new Headers().set(name, 'v'), TypeError);
    assert.throws(() => new Headers().delete(name), TypeError);
  }
  // Every token character is accepted.
  const h = new Headers([["!#$%&'*+-.^_`|~09azAZ", 'ok']]);
  assert.equal(h.get("!#$%&'*+-.^_`|~09azAZ"), 'ok');
});

test('invalid header values throw TypeError', () => {
  for (const value of ['a\0b', 'a\rb', 'a\nb', 'caf\u0101', '\u2028']) {
    assert.throws(() => new Headers([['a', value]]), TypeError);
    assert.throws(() => new Headers().append('a', value), TypeError);
    assert.throws(() => new Headers().set('a', value), TypeError);
  }
});

test('other control characters and latin1 are valid values', () => {
  const h = new Headers();
  h.set('a', 'x\x01\x7fy');
  assert.equal(h.get('a'), 'x\x01\x7fy');
  h.set('b', 'caf\xe9');
  assert.equal(h.get('b'), 'caf\xe9');
});

test('values are converted with String', () => {
  const h = new Headers();
  h.set('n', 42);
  h.set('o', { toString: () => 'obj' });
  h.set('u', undefined);
  assert.equal(h.get('n'), '42');
  assert.equal(h.get('o'), 'obj');
  assert.equal(h.get('u'), 'undefined');
});

test('init from record', () => {
  const h = new Headers({ A: '1', b: '2' });
  assert.deepEqual([...h], [['a', '1'], ['b', '2']]);
  const proto = Object.create({ inherited: 'no' });
  proto.own = 'yes';
  assert.deepEqual([...new Headers(proto)], [['own', 'yes']]);
  const withSymbol = { a: '1', [Symbol('s')]: 'x' };
  assert.throws(() => new Headers(withSymbol), TypeError);
});

test('init from sequence and iterables', () => {
  const h = new Headers([['a', '1'], ['b', '2'], ['a', '3']]);
  assert.equal(h.get('a'), '1, 3');
  const m = new Map([['x', 'y']]);
  assert.equal(new Headers(m).get('x'), 'y');
  function* gen() { yield ['g', 'h']; }
  assert.equal(new Headers(gen()).get('g'), 'h');
});

test('init pairs must have exactly two items', () => {
  assert.throws(() => new Headers([['a']]), TypeError);
  assert.throws(() => new Headers([['a', 'b', 'c']]), TypeError);
  assert.throws(() => new Headers(['ab']), TypeError);
  assert.throws(() => new Headers([1]), TypeError);
});

test('init must be an object', () => {
  assert.throws(() => new Headers('a'), TypeError);
  assert.throws(() => new Headers(1), TypeError);
  assert.throws(() => new Headers(null), TypeError);
  assert.deepEqual([...new Headers(undefined)], []);
});

test('init from another Headers copies including set cookie', () => {
  const a = new Headers([['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['x', 'y']]);
  const b = new Headers(a);
  assert.deepEqual(b.getSetCookie(), ['a=1', 'b=2']);
  b.set('x', 'z');
  assert.equal(a.get('x'), 'y', 'the copy is independent');
});

test('missing arguments throw TypeError', () => {
  const h = new Headers();
  assert.throws(() => h.get(), TypeError);
  assert.throws(() => h.has(), TypeError);
  assert.throws(() => h.delete(), TypeError);
  assert.throws(() => h.append('a'), TypeError);
  assert.throws(() => h.set('a'), TypeError);
  assert.throws(() => h.forEach(), TypeError);
});

test('forEach passes value key and headers', () => {
  const h = new Headers([['b', '2'], ['a', '1']]);
  const seen = [];
  const thisArg = {};
  h.forEach(function (value, key, headers) {
    seen.push([key, value, headers === h, this === thisArg]);
  }, thisArg);
  assert.deepEqual(seen, [['a', '1', true, true], ['b', '2', true, true]]);
  assert.throws(() => h.forEach('nope'), TypeError);
});

test('iterators see changes made during iteration', () => {
  const h = new Headers([['a', '1'], ['c', '3']]);
  const it = h.keys();
  assert.deepEqual(it.next(), { value: 'a', done: false });
  h.append('b', '2');
  assert.deepEqual(it.next(), { value: 'b', done: false });
  assert.deepEqual(it.next(), { value: 'c', done: false });
  assert.deepEqual(it.next(), { value: undefined, done: true });
});

test('iterator objects look like WebIDL iterators', () => {
  const it = new Headers().entries();
  assert.equal(Object.prototype.toString.call(it), '[object Headers Iterator]');
  const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
  assert.equal(Object.getPrototypeOf(Object.getPrototypeOf(it)), IteratorPrototype);
  assert.equal(it[Symbol.iterator](), it);
});

test('immutable headers of Response error reject changes', () => {
  const h = Response.error().headers;
  assert.throws(() => h.append('a', 'b'), TypeError, /immutable/);
  assert.throws(() => h.set('a', 'b'), TypeError, /immutable/);
  assert.throws(() => h.delete('a'), TypeError, /immutable/);
  assert.equal(h.get('a'), null);
});

test('immutable headers of Response redirect reject changes', () => {
  const h = Response.redirect('https://example.com/', 301).headers;
  assert.equal(h.get('location'), 'https://example.com/');
  assert.throws(() => h.set('location', '/x'), TypeError);
  assert.throws(() => h.append('x', 'y'), TypeError);
});

test('invalid name is reported before the guard', () => {
  const h = Response.error().headers;
  assert.throws(() => h.append('bad name', 'v'), TypeError, /name/);
});

test('method lengths follow WebIDL', () => {
  assert.equal(Headers.length, 0);
  assert.equal(Headers.prototype.append.length, 2);
  assert.equal(Headers.prototype.get.length, 1);
  assert.equal(Headers.prototype.forEach.length, 1);
});

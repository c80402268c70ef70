// URL and URLSearchParams (WHATWG URL), from whatwg-url.

test('parts of an absolute URL', () => {
  const u = new URL('https://user:pw@Example.COM:8080/p/a/t/h?query=1#frag');
  assert.equal(u.href, 'https://user:pw@example.com:8080/p/a/t/h?query=1#frag');
  assert.equal(u.protocol, 'https:');
  assert.equal(u.username, 'user');
  assert.equal(u.password, 'pw');
  assert.equal(u.host, 'example.com:8080');
  assert.equal(u.hostname, 'example.com');
  assert.equal(u.port, '8080');
  assert.equal(u.pathname, '/p/a/t/h');
  assert.equal(u.search, '?query=1');
  assert.equal(u.hash, '#frag');
  assert.equal(u.origin, 'https://example.com:8080');
  assert.equal(String(u), u.href);
  assert.equal(u.toJSON(), u.href);
});

test('relative URLs against a base', () => {
  assert.equal(new URL('b/c', 'https://a.example/x/y').href, 'https://a.example/x/b/c');
  assert.equal(new URL('../c', 'https://a.example/x/y/z').href, 'https://a.example/x/c');
  assert.equal(new URL('/root', 'https://a.example/x/y').href, 'https://a.example/root');
  assert.equal(new URL('//other.example/p', 'https://a.example/').href, 'https://other.example/p');
  assert.equal(new URL('?q', 'https://a.example/p?old#h').href, 'https://a.example/p?q');
  assert.equal(new URL('#h2', 'https://a.example/p?q#h').href, 'https://a.example/p?q#h2');
  assert.equal(new URL('', 'https://a.example/p?q#h').href, 'https://a.example/p?q');
  assert.equal(new URL('https://abs.example/', 'https://a.example/').href, 'https://abs.example/');
  assert.equal(new URL('x', new URL('https://a.example/d/')).href, 'https://a.example/d/x');
});

test('invalid URLs throw TypeError', () => {
  assert.throws(() => new URL('relative'), TypeError);
  assert.throws(() => new URL('http://exa mple.com'), TypeError);
  assert.throws(() => new URL('https://'), TypeError);
  assert.throws(() => new URL('http://[::1'), TypeError);
  assert.throws(() => new URL('http://example.com:99999'), TypeError);
  assert.throws(() => new URL('x', 'not a base'), TypeError);
  assert.throws(() => new URL(), TypeError);
});

test('URL canParse and parse', () => {
  assert.equal(URL.canParse('https://a.example'), true);
  assert.equal(URL.canParse('nope'), false);
  assert.equal(URL.canParse('/p', 'https://a.example'), true);
  assert.equal(URL.parse('nope'), null);
  assert.equal(URL.parse('/p', 'https://a.example').href, 'https://a.example/p');
});

test('IDNA hosts become punycode', () => {
  assert.equal(new URL('https://münchen.de/').hostname, 'xn--mnchen-3ya.de');
  assert.equal(new URL('https://EXAMPLE.com').hostname, 'example.com');
  assert.equal(new URL('https://ÉXAMPLE.com').hostname, 'xn--xample-9ua.com');
  assert.equal(new URL('https://xn--mnchen-3ya.de/').hostname, 'xn--mnchen-3ya.de');
  assert.equal(new URL('https://a.b\u3002c/').hostname, 'a.b.c', 'ideographic full stop is a dot');
  assert.equal(new URL('https://a\u00adb.example/').hostname, 'ab.example', 'soft hyphen is mapped away');
  assert.throws(() => new URL('https://\u200d.example/'), TypeError, undefined);
  assert.throws(() => new URL('https://a%00b/'), TypeError);
});

test('IPv4 and IPv6 hosts', () => {
  assert.equal(new URL('http://0x7f.0.0.1/').hostname, '127.0.0.1');
  assert.equal(new URL('http://2130706433/').hostname, '127.0.0.1');
  assert.equal(new URL('http://[0:0::1]/').hostname, '[::1]');
  assert.equal(new URL('http://[2001:db8::FFFF]:81/').host, '[2001:db8::ffff]:81');
  assert.throws(() => new URL('http://1.2.3.256/'), TypeError);
});

test('default ports are dropped', () => {
  assert.equal(new URL('http://a.example:80/').port, '');
  assert.equal(new URL('https://a.example:443/').href, 'https://a.example/');
  assert.equal(new URL('https://a.example:80/').port, '80');
  assert.equal(new URL('ws://a.example:80/').port, '');
});

test('percent encoding of path query and fragment', () => {
  const u = new URL('https://a.example/a b/é?x=a b&y=é#f g');
  assert.equal(u.pathname, '/a%20b/%C3%A9');
  assert.equal(u.search, '?x=a%20b&y=%C3%A9');
  assert.equal(u.hash, '#f%20g');
  assert.equal(new URL("https://a.example/?'").search, '?%27');
  assert.equal(new URL("foo://a.example/?'").search, "?'", 'non special keeps quote');
});

test('dot segments and backslashes', () => {
  assert.equal(new URL('https://a.example/a/./b/../c').pathname, '/a/c');
  assert.equal(new URL('https://a.example/a/%2e%2E/c').pathname, '/c');
  assert.equal(new URL('https://a.example\\a\\b').href, 'https://a.example/a/b');
});

test('non special schemes', () => {
  const u = new URL('mailto:someone@example.com');
  assert.equal(u.protocol, 'mailto:');
  assert.equal(u.pathname, 'someone@example.com');
  assert.equal(u.origin, 'null');
  const d = new URL('data:text/plain,hi there');
  assert.equal(d.pathname, 'text/plain,hi there');
  assert.equal(new URL('file:///C:/x/../y').href, 'file:///C:/y');
});

test('setters', () => {
  const u = new URL('https://a.example/p');
  u.pathname = '/new path';
  u.search = 'a=1';
  u.hash = 'top';
  u.port = '8443';
  u.hostname = 'B.example';
  assert.equal(u.href, 'https://b.example:8443/new%20path?a=1#top');
  u.protocol = 'http';
  assert.equal(u.protocol, 'http:');
  u.port = '80';
  assert.equal(u.port, '');
  u.href = 'https://c.example/';
  assert.equal(u.host, 'c.example');
  assert.throws(() => { u.href = 'not a url'; }, TypeError);
});

test('searchParams are live in both directions', () => {
  const u = new URL('https://a.example/?a=1&b=2&a=3');
  const p = u.searchParams;
  assert.equal(u.searchParams, p, 'same object');
  assert.deepEqual(p.getAll('a'), ['1', '3']);
  p.append('c', 'x y');
  assert.equal(u.search, '?a=1&b=2&a=3&c=x+y');
  p.delete('a');
  assert.equal(u.href, 'https://a.example/?b=2&c=x+y');
  u.search = '?z=9';
  assert.equal(p.get('z'), '9');
  assert.equal(p.has('b'), false);
  p.delete('z');
  assert.equal(u.href, 'https://a.example/', 'empty params remove the ?');
});

test('URLSearchParams parsing and serialization', () => {
  const p = new URLSearchParams('?a=1&b=x+y&c=%20%C3%A9&d&=e&a=2');
  assert.equal(p.get('a'), '1');
  assert.deepEqual(p.getAll('a'), ['1', '2']);
  assert.equal(p.get('b'), 'x y');
  assert.equal(p.get('c'), ' é');
  assert.equal(p.get('d'), '');
  assert.equal(p.get(''), 'e');
  assert.equal(p.get('none'), null);
  assert.equal(p.toString(), 'a=1&b=x+y&c=+%C3%A9&d=&=e&a=2');
  assert.equal(p.size, 6);
});

test('URLSearchParams init forms', () => {
  assert.equal(new URLSearchParams({ a: '1', b: 'two words' }).toString(), 'a=1&b=two+words');
  assert.equal(new URLSearchParams([['a', '1'], ['a', '2']]).toString(), 'a=1&a=2');
  assert.equal(new URLSearchParams(new Map([['k', 'v']])).toString(), 'k=v');
  assert.throws(() => new URLSearchParams([['a']]), TypeError);
  assert.equal(new URLSearchParams('a=%zz').get('a'), '%zz');
});

test('URLSearchParams sort set has delete with value', () => {
  const p = new URLSearchParams('c=3&a=2&b=1&a=1');
  p.sort();
  assert.equal(p.toString(), 'a=2&a=1&b=1&c=3');
  p.set('a', 'only');
  assert.equal(p.toString(), 'a=only&b=1&c=3');
  p.append('b', '2');
  assert.equal(p.has('b', '2'), true);
  assert.equal(p.has('b', '3'), false);
  p.delete('b', '1');
  assert.deepEqual(p.getAll('b'), ['2']);
});

test('URLSearchParams iteration', () => {
  const p = new URLSearchParams('a=1&b=2');
  assert.deepEqual([...p], [['a', '1'], ['b', '2']]);
  assert.deepEqual([...p.keys()], ['a', 'b']);
  assert.deepEqual([...p.values()], ['1', '2']);
  const seen = [];
  p.forEach((v, k) => seen.push(k + v));
  assert.deepEqual(seen, ['a1', 'b2']);
});

// 1 MB of query: 250,000 pairs, the first and last told apart from the rest.
function quarterMillionPairs() {
  const n = 250000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = 'a=1';
  parts[0] = 'x=first';
  parts[n - 1] = 'y=last';
  return { n, query: parts.join('&') };
}

test('URLSearchParams iterates a quarter million pairs', () => {
  // Each way of iterating walks the list once (whatwg-url's copied it at every step: n squared).
  const { n, query } = quarterMillionPairs();
  const p = new URLSearchParams(query);
  assert.equal(p.size, n);
  let count = 0;
  let first = null;
  let last = null;
  for (const pair of p) {
    if (count === 0) first = pair;
    last = pair;
    count++;
  }
  assert.equal(count, n);
  assert.deepEqual(first, ['x', 'first']);
  assert.deepEqual(last, ['y', 'last']);
  count = 0;
  for (const pair of p.entries()) {
    if (count === 1) assert.deepEqual(pair, ['a', '1']);
    count++;
  }
  assert.equal(count, n);
  const keys = [];
  for (const key of p.keys()) keys.push(key);
  assert.equal(keys.length, n);
  assert.equal(keys[0], 'x');
  assert.equal(keys[n - 1], 'y');
  const values = [];
  for (const value of p.values()) values.push(value);
  assert.equal(values.length, n);
  assert.equal(values[0], 'first');
  assert.equal(values[n - 1], 'last');
  count = 0;
  let lastSeen = null;
  p.forEach((value, key, self) => {
    count++;
    lastSeen = `${key}=${value}`;
    if (count === 1) assert.equal(self, p);
  });
  assert.equal(count, n);
  assert.equal(lastSeen, 'y=last');
});

test('URLSearchParams iteration sees the list as it changes', () => {
  // forEach walks the live list by index: an entry appended by the callback is visited, and
  // deleting the current entry shifts the next one into its index, so that one is not visited.
  const p = new URLSearchParams('a=1&b=2&c=3');
  const seen = [];
  p.forEach((value, key) => {
    seen.push(`${key}=${value}`);
    if (key === 'a') {
      p.append('d', '4');
      p.delete('a');
    }
  });
  assert.deepEqual(seen, ['a=1', 'c=3', 'd=4']);
  // An iterator likewise reads the list at every next().
  const q = new URLSearchParams('a=1&b=2');
  const it = q.entries();
  assert.deepEqual(it.next(), { value: ['a', '1'], done: false });
  q.append('c', '3');
  q.delete('a');
  assert.deepEqual(it.next(), { value: ['c', '3'], done: false });
  assert.deepEqual(it.next(), { value: undefined, done: true });
  q.append('d', '4');
  assert.deepEqual(it.next(), { value: ['d', '4'], done: false }, 'a default iterator has no finished state');
  q.set('c', 'x');
  q.sort();
  assert.deepEqual([...q], [['b', '2'], ['c', 'x'], ['d', '4']]);
  // Setting the URL's query replaces the list an iterator of its searchParams reads.
  const u = new URL('https://a.example/?a=1&b=2');
  const keys = u.searchParams.keys();
  assert.equal(keys.next().value, 'a');
  u.search = '?x=1&y=2&z=3';
  assert.equal(keys.next().value, 'y');
  u.href = 'https://a.example/?only=1';
  assert.equal(keys.next().done, true);
  // forEach's thisArg, and pairs handed out as new arrays each time.
  const self = {};
  let thisSeen = null;
  new URLSearchParams('k=v').forEach(function () { thisSeen = this; }, self);
  assert.equal(thisSeen, self);
  const pairs = new URLSearchParams('k=v');
  const one = pairs.entries().next().value;
  one[1] = 'changed';
  assert.equal(pairs.get('k'), 'v');
});

test('URLSearchParams iteration brand checks and shapes', () => {
  const p = new URLSearchParams('a=1');
  const proto = URLSearchParams.prototype;
  for (const name of ['entries', 'keys', 'values', 'forEach']) {
    assert.throws(() => proto[name].call({}, () => {}), TypeError);
    assert.throws(() => proto[name].call(Object.create(proto), () => {}), TypeError);
    assert.throws(() => proto[name].call(new URL('https://a.example/?a=1'), () => {}), TypeError);
    assert.throws(() => proto[name].call(undefined, () => {}), TypeError);
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    assert(desc.enumerable && desc.writable && desc.configurable, name);
    assert.equal(desc.value.name, name);
    assert.equal(desc.value.length, name === 'forEach' ? 1 : 0);
    assert.throws(() => new desc.value(), TypeError); // an operation is not a constructor
  }
  assert.equal(proto[Symbol.iterator], proto.entries);
  assert.equal(Object.getOwnPropertyDescriptor(proto, Symbol.iterator).enumerable, false);
  assert.throws(() => p.forEach(), TypeError);
  assert.throws(() => p.forEach(5), TypeError);
  assert.throws(() => p.forEach({}), TypeError);
  // The iterator: its own prototype, inheriting %IteratorPrototype%, with its toStringTag.
  const it = p.keys();
  const itProto = Object.getPrototypeOf(it);
  assert.equal(itProto, Object.getPrototypeOf(p.entries()));
  assert.equal(itProto, Object.getPrototypeOf(new URLSearchParams().values()));
  assert.equal(Object.getPrototypeOf(itProto), Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())));
  assert.equal(Object.prototype.toString.call(it), '[object URLSearchParams Iterator]');
  assert.deepEqual(Object.keys(itProto), ['next']);
  assert.deepEqual(Object.getOwnPropertyNames(it), []);
  assert.equal(it[Symbol.iterator](), it);
  const next = itProto.next;
  assert.equal(next.name, 'next');
  for (const other of [{}, Object.create(it), Object.create(itProto), new FormData().keys(), new Headers().keys(), undefined, null, 1]) {
    assert.throws(() => next.call(other), TypeError);
  }
  assert.equal(it.next().value, 'a');
  // A subclass's instances iterate as URLSearchParams do.
  class Params extends URLSearchParams {}
  const sub = new Params('s=1&t=2');
  assert.deepEqual([...sub], [['s', '1'], ['t', '2']]);
  const seen = [];
  sub.forEach((value, key, self) => seen.push(self === sub && key + value));
  assert.deepEqual(seen, ['s1', 't2']);
});

test('URLSearchParams iteration survives rewritten builtins', () => {
  const p = new URLSearchParams('a=1&b=2');
  const saved = {
    push: Array.prototype.push, iterator: Array.prototype[Symbol.iterator], from: Array.from,
    map: Array.prototype.map, create: Object.create, defineProperty: Object.defineProperty,
    defineProperties: Object.defineProperties, descriptors: Object.getOwnPropertyDescriptors,
    call: Function.prototype.call,
  };
  const seen = [];
  const add = (s) => { seen[seen.length] = s; };
  try {
    Array.prototype.push = () => { throw new Error('hijacked push'); };
    Array.prototype[Symbol.iterator] = function () { throw new Error('hijacked iterator'); };
    Array.prototype.map = () => { throw new Error('hijacked map'); };
    Array.from = () => { throw new Error('hijacked from'); };
    Object.create = () => { throw new Error('hijacked create'); };
    Object.defineProperty = () => { throw new Error('hijacked defineProperty'); };
    Object.defineProperties = () => { throw new Error('hijacked defineProperties'); };
    Object.getOwnPropertyDescriptors = () => { throw new Error('hijacked descriptors'); };
    Function.prototype.call = () => { throw new Error('hijacked call'); };
    // Getters and setters that property descriptors and assignments to missing properties meet.
    Reflect.defineProperty(Object.prototype, 'get', { __proto__: null, get() { throw new Error('hijacked get'); }, configurable: true });
    Reflect.defineProperty(Object.prototype, 'value', { __proto__: null, set() { throw new Error('hijacked value'); }, configurable: true });
    for (const pair of p) add(`${pair[0]}=${pair[1]}`);
    const keys = p.keys();
    for (let step = keys.next(); !step.done; step = keys.next()) add(step.value);
    const values = p.values();
    for (let step = values.next(); !step.done; step = values.next()) add(step.value);
    p.forEach((value, key) => add(`${key}:${value}`));
  } finally {
    delete Object.prototype.get;
    delete Object.prototype.value;
    Array.prototype.push = saved.push;
    Array.prototype[Symbol.iterator] = saved.iterator;
    Array.prototype.map = saved.map;
    Array.from = saved.from;
    Object.create = saved.create;
    Object.defineProperty = saved.defineProperty;
    Object.defineProperties = saved.defineProperties;
    Object.getOwnPropertyDescriptors = saved.descriptors;
    Function.prototype.call = saved.call;
  }
  assert.deepEqual(seen, ['a=1', 'b=2', 'a', 'b', '1', '2', 'a:1', 'b:2']);
});

test('URLSearchParams delete and set on a quarter million pairs', () => {
  // One pass each (whatwg-url spliced each removed entry out: n squared).
  const n = 250000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = i % 2 === 0 ? 'a=1' : 'b=2';
  const query = parts.join('&');
  const p = new URLSearchParams(query);
  p.delete('a');
  assert.equal(p.size, n / 2);
  assert.equal(p.has('a'), false);
  p.set('b', 'x');
  assert.equal(p.size, 1);
  assert.equal(p.toString(), 'b=x');
  const q = new URLSearchParams(query);
  q.set('a', 'first');
  assert.equal(q.size, n / 2 + 1);
  assert.deepEqual([...q.keys()].slice(0, 3), ['a', 'b', 'b']);
  assert.equal(q.get('a'), 'first');
  q.delete('b', '2');
  assert.deepEqual([...q], [['a', 'first']]);
});

test('URLSearchParams delete and set keep order and update the URL', () => {
  const u = new URL('https://a.example/?a=1&b=2&a=3&c=4&a=5');
  const p = u.searchParams;
  p.set('a', 'x');
  assert.deepEqual([...p], [['a', 'x'], ['b', '2'], ['c', '4']]);
  assert.equal(u.search, '?a=x&b=2&c=4');
  p.set('d', 'new');
  assert.equal(u.search, '?a=x&b=2&c=4&d=new');
  p.append('b', '9');
  p.delete('b', '2');
  assert.equal(u.search, '?a=x&c=4&d=new&b=9');
  p.delete('b', 'absent');
  p.delete('absent');
  assert.equal(u.search, '?a=x&c=4&d=new&b=9');
  p.delete('a');
  p.delete('c');
  p.delete('d');
  p.delete('b');
  assert.equal(p.size, 0);
  assert.equal(u.href, 'https://a.example/');
});

test('special characters in form encoding', () => {
  const p = new URLSearchParams();
  p.append('q', "a&b=c+d/e?f~*'()!");
  assert.equal(p.toString(), 'q=a%26b%3Dc%2Bd%2Fe%3Ff%7E*%27%28%29%21');
  assert.equal(new URLSearchParams(p.toString()).get('q'), "a&b=c+d/e?f~*'()!");
});

test('URLSearchParams parses strings as the URL Standard says', () => {
  const entries = (s) => [...new URLSearchParams(s)];
  assert.deepEqual(entries('?a=1'), [['a', '1']], 'one leading ? is dropped');
  assert.deepEqual(entries('??a=1'), [['?a', '1']]);
  assert.deepEqual(entries('&&a=1&&b==2=&=c&d&'), [['a', '1'], ['b', '=2='], ['', 'c'], ['d', '']]);
  assert.deepEqual(entries('a+b=c+%2B+d'), [['a b', 'c + d']]);
  assert.deepEqual(entries('a=%&b=%4&c=%zz&e=%%41&f=%41%'), [['a', '%'], ['b', '%4'], ['c', '%zz'], ['e', '%A'], ['f', 'A%']]);
  // Characters are UTF-8 encoded, then the escapes decoded among their bytes.
  assert.deepEqual(entries('é=%C3%A9+é&%F0%9F%98%80=😀'), [['é', 'é é'], ['😀', '😀']]);
  assert.deepEqual(entries('a%C3=%A9b&%C3é=%ZZé'), [['a\ufffd', '\ufffdb'], ['\ufffdé', '%ZZé']]);
  assert.deepEqual(entries('%EF%BB%BF=\ufeff'), [['\ufeff', '\ufeff']]);
  assert.deepEqual(entries('\ud800=\udc00x&y=\ud83d\ude00'), [['\ufffd', '\ufffdx'], ['y', '\ud83d\ude00']]);
  // The same parser for a URL's query, as it is set.
  const u = new URL('https://a.example/?a=%C3%A9+b&c');
  assert.deepEqual([...u.searchParams], [['a', 'é b'], ['c', '']]);
  u.search = 'x=%41&y=é';
  assert.deepEqual([...u.searchParams], [['x', 'A'], ['y', 'é']]);
  u.href = 'https://a.example/?z=+';
  assert.deepEqual([...u.searchParams], [['z', ' ']]);
});

test('URLSearchParams serializes as the URL Standard says', () => {
  // Every ASCII character: alphanumerics and *-._ as they are, space as +, the rest %XX.
  let all = '';
  let expected = '';
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    all += ch;
    if (/[A-Za-z0-9*\-._]/.test(ch)) expected += ch;
    else if (c === 32) expected += '+';
    else expected += `%${c.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  const p = new URLSearchParams();
  p.append(all, all);
  assert.equal(p.toString(), `${expected}=${expected}`);
  assert.deepEqual([...new URLSearchParams(p.toString())], [[all, all]]);
  // UTF-8 bytes of 2, 3 and 4 bytes; lone surrogates as U+FFFD.
  const q = new URLSearchParams([['\u0080\u07ff\u0800\uffff', '\ud83d\ude00\ud800x\udc00']]);
  assert.equal(q.toString(), '%C2%80%DF%BF%E0%A0%80%EF%BF%BF=%F0%9F%98%80%EF%BF%BDx%EF%BF%BD');
  assert.equal(new URLSearchParams([['', ''], ['a', ''], ['', 'b']]).toString(), '=&a=&=b');
  assert.equal(new URLSearchParams().toString(), '');
  // The same serializer for a URL's query and for a body.
  const u = new URL('https://a.example/');
  u.searchParams.append('k', 'a b&é');
  assert.equal(u.search, '?k=a+b%26%C3%A9');
});

test('URLSearchParams of a megabyte parse and serialize', async () => {
  const { n, query } = quarterMillionPairs();
  const p = new URLSearchParams(query);
  assert.equal(p.toString(), query);
  assert.equal(await new Response(p).text(), query);
  const escaped = new Array(n / 2);
  for (let i = 0; i < n / 2; i++) escaped[i] = i % 2 === 0 ? 'é+=%C3%A9' : 'k%20=%41+b';
  const q = new URLSearchParams(escaped.join('&'));
  assert.equal(q.size, n / 2);
  assert.equal(q.getAll('é ').length, n / 4);
  assert.equal(q.getAll('k ')[n / 4 - 1], 'A b');
  const serialized = q.toString();
  assert.equal(serialized.length, (n / 4) * ('%C3%A9+=%C3%A9'.length + 'k+=A+b'.length) + n / 2 - 1);
  assert.equal(serialized.slice(0, 21), '%C3%A9+=%C3%A9&k+=A+b');
});

test('lone surrogates become replacement characters', () => {
  assert.equal(new URL('https://a.example/\ud800').pathname, '/%EF%BF%BD');
  assert.equal(new URLSearchParams({ a: '\udc00' }).toString(), 'a=%EF%BF%BD');
});

test('toStringTag and class names', () => {
  assert.equal(URL.name, 'URL');
  assert.equal(URLSearchParams.name, 'URLSearchParams');
  assert.equal(Object.prototype.toString.call(new URLSearchParams()), '[object URLSearchParams]');
});

test('the URL fast path serializes like the full parser', async () => {
  const inputs = [
    'http://localhost/', 'http://localhost:8080/a/b?c=d&e', 'https://example.com/x?y=%20',
    'http://127.0.0.1:3000/', 'http://example.com:80/', 'https://example.com:443/a',
    'http://Example.com/', 'http://a.example/%2e/b', 'http://a.example/./b', 'http://a.example/x/..',
    'http://a.example', 'http://a.example/a|b[c]^', 'http://a.example/?q=a\'b', 'http://a.example/{x}',
    'http://a.example:08080/', 'http://a.example:65536/', 'http://1.2.3/', 'http://0x10.0.0.1/',
    'http://a.example/\\x', 'http://xn--mnchen-3ya.de/', 'http://a-.example/', 'http://a.example/?`{}',
    'http://a.example/"<>', 'http://a.example/p?"<>#', 'http://a.1example/', 'http://a.example./',
  ];
  for (const input of inputs) {
    let expected;
    try {
      expected = new URL(input).href;
    } catch {
      expected = null;
    }
    let actual;
    try {
      actual = new Request(input).url;
    } catch {
      actual = null;
    }
    assert.equal(actual, expected, input);
  }
});

test('URLPattern matches and captures groups', () => {
  const p = new URLPattern({ pathname: '/books/:id(\\d+)' });
  assert(p.test('https://example.com/books/123'));
  assert.equal(p.test('https://example.com/books/abc'), false);
  assert.equal(p.exec('https://example.com/books/42').pathname.groups.id, '42');
  const full = new URLPattern('https://*.example.com/api/*');
  assert(full.test('https://a.example.com/api/x/y'));
  assert.equal(full.exec({ hostname: 'other.org', pathname: '/api/x', protocol: 'https' }), null);
  assert.equal(Object.prototype.toString.call(p), '[object URLPattern]');
  assert.throws(() => new URLPattern({ pathname: '/(' }), TypeError);
});

// Which globals the runtime provides, and that nothing of Node or of the host leaks.

test('no Node or host globals leak', () => {
  assert.equal(typeof require, 'undefined');
  assert.equal(typeof process, 'undefined');
  assert.equal(typeof Buffer, 'undefined');
  assert.equal(typeof module, 'undefined');
  assert.equal(typeof exports, 'undefined');
  assert.equal(typeof global, 'undefined');
  assert.equal(typeof __isolane_host, 'undefined');
  assert.equal('__isolane_host' in globalThis, false);
  assert.equal(typeof setImmediate, 'undefined');
});

test('self is the global object', () => {
  assert.equal(self, globalThis);
});

test('web API globals exist', () => {
  const names = [
    'Headers', 'Request', 'Response', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder',
    'atob', 'btoa', 'DOMException', 'structuredClone', 'setTimeout', 'setInterval',
    'clearTimeout', 'clearInterval', 'queueMicrotask', 'Event', 'EventTarget', 'AbortController',
    'AbortSignal', 'ReadableStream', 'WritableStream', 'TransformStream',
    'ReadableStreamDefaultReader', 'ReadableStreamBYOBReader', 'ReadableStreamDefaultController',
    'ReadableByteStreamController', 'ReadableStreamBYOBRequest', 'WritableStreamDefaultWriter',
    'WritableStreamDefaultController', 'TransformStreamDefaultController',
    'ByteLengthQueuingStrategy', 'CountQueuingStrategy', 'Crypto', 'SubtleCrypto', 'Performance',
    'fetch', 'Blob', 'File', 'FormData', 'CompressionStream', 'DecompressionStream',
    'TextEncoderStream', 'TextDecoderStream', 'URLPattern', 'Navigator', 'CustomEvent', 'ErrorEvent',
    'PromiseRejectionEvent', 'reportError',
  ];
  for (const name of names) {
    assert.equal(typeof globalThis[name], 'function', name);
    assert.equal(globalThis[name].name, name, `${name}.name`);
  }
  assert.equal(typeof crypto, 'object');
  assert.equal(typeof performance, 'object');
  assert.equal(typeof console, 'object');
  assert.equal(typeof navigator, 'object');
  assert.equal(typeof WebAssembly.instantiateStreaming, 'function');
});

test('interfaces are non enumerable and operations enumerable', () => {
  const keys = Object.keys(globalThis);
  assert(!keys.includes('Headers'), 'Headers should not be enumerable');
  assert(!keys.includes('URL'), 'URL should not be enumerable');
  assert(keys.includes('setTimeout'), 'setTimeout should be enumerable');
  assert(keys.includes('atob'), 'atob should be enumerable');
  assert(keys.includes('fetch'), 'fetch should be enumerable');
  const desc = Object.getOwnPropertyDescriptor(globalThis, 'Response');
  assert.equal(desc.writable, true);
  assert.equal(desc.configurable, true);
});

test('toStringTag of instances', () => {
  assert.equal(Object.prototype.toString.call(new Headers()), '[object Headers]');
  assert.equal(Object.prototype.toString.call(new Response()), '[object Response]');
  assert.equal(Object.prototype.toString.call(new Request('https://a.example/')), '[object Request]');
  assert.equal(Object.prototype.toString.call(new URL('https://a.example/')), '[object URL]');
  assert.equal(Object.prototype.toString.call(new TextEncoder()), '[object TextEncoder]');
  assert.equal(Object.prototype.toString.call(new AbortController()), '[object AbortController]');
  assert.equal(Object.prototype.toString.call(new AbortController().signal), '[object AbortSignal]');
  assert.equal(Object.prototype.toString.call(new Event('x')), '[object Event]');
  assert.equal(Object.prototype.toString.call(new EventTarget()), '[object EventTarget]');
  assert.equal(Object.prototype.toString.call(new DOMException()), '[object DOMException]');
  assert.equal(Object.prototype.toString.call(crypto), '[object Crypto]');
  assert.equal(Object.prototype.toString.call(crypto.subtle), '[object SubtleCrypto]');
  assert.equal(Object.prototype.toString.call(performance), '[object Performance]');
  assert.equal(Object.prototype.toString.call(new ReadableStream()), '[object ReadableStream]');
  assert.equal(Object.prototype.toString.call(console), '[object console]');
});

test('illegal constructors', () => {
  assert.throws(() => new AbortSignal(), TypeError);
  assert.throws(() => new Crypto(), TypeError);
  assert.throws(() => new SubtleCrypto(), TypeError);
  assert.throws(() => new Performance(), TypeError);
});

test('prototype members are enumerable like WebIDL', () => {
  assert(Object.keys(Headers.prototype).includes('append'));
  assert(Object.keys(Response.prototype).includes('text'));
  assert(Object.keys(Response.prototype).includes('status'));
  assert(Object.keys(Request.prototype).includes('clone'));
});

test('brand checks', () => {
  const get = (cls, name) => Object.getOwnPropertyDescriptor(cls.prototype, name).get;
  assert.throws(() => get(Response, 'status').call({}), TypeError);
  assert.throws(() => get(Request, 'url').call(new Response()), TypeError);
  assert.throws(() => Headers.prototype.get.call({}, 'a'), TypeError);
  assert.throws(() => get(AbortSignal, 'aborted').call({}), TypeError);
  assert.throws(() => TextDecoder.prototype.decode.call({}), TypeError);
});

test('the helper globals of the runtime internals are not exposed', () => {
  for (const name of ['host', 'dispatch', 'BodyState', 'inspect', 'ExecutionContext']) {
    assert.equal(name in globalThis, false, name);
  }
});

test('DOMException names codes and messages', () => {
  const d = new DOMException();
  assert.equal(d.name, 'Error');
  assert.equal(d.message, '');
  assert.equal(d.code, 0);
  const e = new DOMException('gone', 'NotFoundError');
  assert.equal(e.name, 'NotFoundError');
  assert.equal(e.message, 'gone');
  assert.equal(e.code, 8);
  assert.equal(String(e), 'NotFoundError: gone');
  assert(e instanceof Error);
  assert(e instanceof DOMException);
  assert.equal(Object.getPrototypeOf(DOMException.prototype), Error.prototype);
  assert.equal(typeof e.stack, 'string');
  assert.equal(new DOMException('x', 'CustomName').code, 0);
  const codes = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InUseAttributeError: 10,
    InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
    InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
    URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
    EncodingError: 0, NotReadableError: 0, OperationError: 0, DataError: 0, ConstraintError: 0,
  };
  for (const [name, code] of Object.entries(codes)) assert.equal(new DOMException('', name).code, code, name);
});

test('DOMException constants and accessors', () => {
  assert.equal(DOMException.ABORT_ERR, 20);
  assert.equal(DOMException.prototype.DATA_CLONE_ERR, 25);
  assert.equal(new DOMException().INDEX_SIZE_ERR, 1);
  assert.equal(Object.hasOwn(new DOMException('m', 'n'), 'message'), false, 'message is a prototype getter');
  const getName = Object.getOwnPropertyDescriptor(DOMException.prototype, 'name').get;
  assert.throws(() => getName.call({}), TypeError);
  assert.equal(new DOMException(undefined, undefined).name, 'Error');
  assert.equal(new DOMException(null, null).name, 'null');
});

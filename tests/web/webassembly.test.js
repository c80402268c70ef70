// WebAssembly as apps use it: asynchronous compile and instantiate settle (V8 finishes them
// through foreground tasks the executor runs), and errors are WebAssembly's own.

// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const ADD = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01,
  0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x07, 0x01, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00, 0x0a, 0x09,
  0x01, 0x07, 0x00, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b,
]);

test('instantiate from bytes settles', async () => {
  const { instance, module } = await WebAssembly.instantiate(ADD);
  assert(module instanceof WebAssembly.Module);
  assert.equal(instance.exports.add(2, 40), 42);
});

test('compile then instantiate a module', async () => {
  const module = await WebAssembly.compile(ADD);
  const instance = await WebAssembly.instantiate(module);
  assert.equal(instance.exports.add(-1, 1), 0);
  assert.deepEqual(WebAssembly.Module.exports(module), [{ name: 'add', kind: 'function' }]);
});

test('synchronous compile works too', () => {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(ADD));
  assert.equal(instance.exports.add(3, 4), 7);
  assert(WebAssembly.validate(ADD));
});

test('invalid bytes reject with a CompileError', async () => {
  await assert.rejects(WebAssembly.instantiate(new Uint8Array([0, 1, 2, 3])), WebAssembly.CompileError);
  await assert.rejects(WebAssembly.compile(new Uint8Array(0)), WebAssembly.CompileError);
});

test('instantiateStreaming and compileStreaming from a Response', async () => {
  const response = new Response(ADD, { headers: { 'content-type': 'application/wasm' } });
  const { instance } = await WebAssembly.instantiateStreaming(response);
  assert.equal(instance.exports.add(1, 2), 3);
  const module = await WebAssembly.compileStreaming(Promise.resolve(new Response(ADD, { headers: { 'content-type': 'application/wasm' } })));
  assert(module instanceof WebAssembly.Module);
  await assert.rejects(WebAssembly.instantiateStreaming(new Response(ADD)), TypeError, /application\/wasm/);
  await assert.rejects(WebAssembly.compileStreaming(new Response(ADD, { status: 404, headers: { 'content-type': 'application/wasm' } })), TypeError, /ok/);
  await assert.rejects(WebAssembly.compileStreaming(ADD), TypeError);
});

test('memory growth past the limit fails as a RangeError', () => {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 2 });
  memory.grow(1);
  assert.throws(() => memory.grow(1), RangeError);
});

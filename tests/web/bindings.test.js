// Service bindings and host.createEnv. The C++ runner gives these tests no way to reach
// host.createEnv or an env with bindings, so the bindings themselves are tested against a
// scripted host in tests/web/node-only/bindings.test.js (and end to end by the C++ tests). What
// can be checked here: nothing of the machinery leaks onto the global object.

test('binding machinery is not on the global object', () => {
  assert.equal(typeof Fetcher, 'undefined');
  assert.equal('Fetcher' in globalThis, false);
  assert.equal(typeof createEnv, 'undefined');
  assert.equal('__isolane_host' in globalThis, false);
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    const value = globalThis[name];
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
      assert.equal(Object.hasOwn(value, 'createEnv'), false, `${name}.createEnv`);
      assert.equal(Object.hasOwn(value, 'serviceFetch'), false, `${name}.serviceFetch`);
      assert.equal(Object.hasOwn(value, 'fetchStart'), false, `${name}.fetchStart`);
    }
  }
});

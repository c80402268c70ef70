// Lets whatwg-url's dependency webidl-conversions 8 load on V8 10.2.
//
// webidl-conversions reads, at its top level,
//   Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "resizable").get
//   Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, "growable").get
// Resizable buffers arrived in V8 11.x; on 10.2 the descriptors are undefined and the `.get`
// throws, so the whole bundle would fail. For the duration of whatwg-url's evaluation we put
// stand-in getters there (every buffer on this engine is non-resizable, so `false` is the truth),
// and url.js removes them again right after, so apps never see them. The library keeps the
// functions it captured, which is all it needs.
const added = [];

function addFalseGetter(proto, key, brandGetter) {
  if (Object.getOwnPropertyDescriptor(proto, key) !== undefined) return;
  Object.defineProperty(proto, key, {
    configurable: true,
    get() { brandGetter.call(this); return false; }, // throws on non-buffers, like the real one
  });
  added.push([proto, key]);
}

addFalseGetter(ArrayBuffer.prototype, 'resizable',
  Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get);

// An embedder may leave SharedArrayBuffer out entirely; the library still dereferences it.
let removeSAB = false;
if (typeof SharedArrayBuffer !== 'function') {
  globalThis.SharedArrayBuffer = class SharedArrayBuffer {
    get byteLength() { throw new TypeError('not a SharedArrayBuffer'); }
  };
  removeSAB = true;
}
addFalseGetter(SharedArrayBuffer.prototype, 'growable',
  Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get);

export function removeUrlPrelude() {
  for (const [proto, key] of added) delete proto[key];
  added.length = 0;
  if (removeSAB) delete globalThis.SharedArrayBuffer;
}

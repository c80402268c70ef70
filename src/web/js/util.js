// Small helpers shared by the API modules: installing globals the way WebIDL does, argument and
// type conversions (ByteString, USVString, BufferSource), and cheap brand checks.
// Hand-written: these are the bits of WebIDL glue that no library exposes on its own.

// Interfaces and namespaces are non-enumerable globals; operations (atob, setTimeout, ...) are
// enumerable. Both are writable and configurable, as in browsers and Workers.
export function defineGlobal(name, value, enumerable = false) {
  Object.defineProperty(globalThis, name, { value, writable: true, enumerable, configurable: true });
}

// esbuild renames top-level bindings that collide across bundled modules (our `Event` vs the
// shim's `Event`, our `atob` vs @exodus/bytes' `atob`...), and a class's `name` comes from its
// binding. So every exposed class and function gets its name set explicitly.
export function setName(fn, name) {
  Object.defineProperty(fn, 'name', { value: name, configurable: true });
  return fn;
}

// Makes a class look like a WebIDL interface: correct `name`, `Symbol.toStringTag` on the
// prototype, and enumerable prototype members (WebIDL attributes and operations are enumerable;
// class syntax makes them non-enumerable).
export function exposeInterface(cls, name, { global = true } = {}) {
  setName(cls, name);
  const proto = cls.prototype;
  for (const key of Reflect.ownKeys(proto)) {
    if (key === 'constructor' || typeof key === 'symbol') continue;
    const desc = Object.getOwnPropertyDescriptor(proto, key);
    if (!desc.enumerable) Object.defineProperty(proto, key, { enumerable: true });
  }
  Object.defineProperty(proto, Symbol.toStringTag, { value: name, configurable: true });
  if (global) defineGlobal(name, cls);
  return cls;
}

export function exposeFunction(fn, name) {
  setName(fn, name);
  defineGlobal(name, fn, true);
  return fn;
}

// WebIDL "N arguments required" check, with Chrome-style wording.
export function requireArgs(given, needed, context) {
  if (given < needed) {
    throw new TypeError(
      `${context}: ${needed} argument${needed === 1 ? '' : 's'} required, but only ${given} present.`,
    );
  }
}

// WebIDL dictionary conversion: undefined/null mean "empty", other non-objects are a TypeError.
export function toDictionary(value, context) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' && typeof value !== 'function') {
    throw new TypeError(`${context}: The provided value is not of type 'object'.`);
  }
  return value;
}

// WebIDL ByteString: every code unit must fit in a byte.
const NON_BYTE = /[^\x00-\xff]/;
export function toByteString(value, context) {
  const s = typeof value === 'string' ? value : String(value);
  if (NON_BYTE.test(s)) {
    throw new TypeError(`${context}: Cannot convert to ByteString because the character at index ${s.search(NON_BYTE)} has a value of ${s.charCodeAt(s.search(NON_BYTE))} which is greater than 255.`);
  }
  return s;
}

// WebIDL USVString: lone surrogates become U+FFFD. (String.prototype.toWellFormed is newer than
// V8 10.2.) The quick test keeps the common all-BMP-no-surrogate case to one scan.
const ANY_SURROGATE = /[\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
export function toUSVString(value) {
  const s = typeof value === 'string' ? value : String(value);
  return ANY_SURROGATE.test(s) ? s.replace(LONE_SURROGATE, '\ufffd') : s;
}

// Brand checks that cannot be fooled by prototypes: they go through the engine's own getters.
const typedArrayTag = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
const abByteLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
const sabByteLength = typeof SharedArrayBuffer === 'function'
  ? Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength').get
  : null;

// 'Uint8Array', 'Float32Array', ... or undefined for anything that is not a TypedArray.
export function typedArrayName(value) {
  return typedArrayTag.call(value);
}

export function isUint8Array(value) {
  return typedArrayTag.call(value) === 'Uint8Array';
}

export function isArrayBuffer(value) {
  if (value instanceof ArrayBuffer) return true;
  if (typeof value !== 'object' || value === null) return false;
  try { abByteLength.call(value); return true; } catch { return false; }
}

export function isSharedArrayBuffer(value) {
  if (sabByteLength === null || typeof value !== 'object' || value === null) return false;
  try { sabByteLength.call(value); return true; } catch { return false; }
}

// BufferSource (ArrayBuffer or a view on one) -> a Uint8Array over the same memory (no copy), or
// null when the value is not a BufferSource. `allowShared` admits SharedArrayBuffer too.
export function bufferSourceView(value, allowShared = false) {
  if (ArrayBuffer.isView(value)) {
    return typedArrayTag.call(value) === 'Uint8Array'
      ? value
      : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  if (isArrayBuffer(value) || (allowShared && isSharedArrayBuffer(value))) return new Uint8Array(value);
  return null;
}

export const EMPTY_BYTES = new Uint8Array(0);

// Concatenates Uint8Array chunks into one new Uint8Array.
export function concatBytes(chunks, total) {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) { out.set(c, offset); offset += c.byteLength; }
  return out;
}

// The ArrayBuffer holding exactly these bytes: the view's own buffer when it spans all of it,
// otherwise a copy. Callers pass bytes nobody else holds.
export function exactArrayBuffer(u8) {
  return u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength ? u8.buffer : u8.slice().buffer;
}

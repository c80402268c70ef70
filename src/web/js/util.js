// Small helpers shared by the API modules: installing globals the way WebIDL does, argument and
// type conversions (ByteString, USVString, BufferSource), and cheap brand checks.
// Hand-written: these are the bits of WebIDL glue that no library exposes on its own.
import {
  ArrayBufferIsView, ArrayPrototypeJoin, ArrayPrototypePush, ReflectApply, RegExpPrototypeExec,
  StringCtor, StringFromCharCode, StringPrototypeCharCodeAt, StringPrototypeSlice, StringPrototypeToWellFormed,
  SymbolIterator, TypeErrorCtor,
  TypedArrayPrototype, TypedArrayPrototypeGetByteLength, TypedArrayPrototypeGetSymbolToStringTag,
  TypedArrayPrototypeSet, TypedArrayPrototypeSlice, Uint8ArrayCtor, uncurryGetter,
} from './primordials.js';

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
    throw new TypeErrorCtor(
      `${context}: ${needed} argument${needed === 1 ? '' : 's'} required, but only ${given} present.`,
    );
  }
}

// WebIDL dictionary conversion: undefined/null mean "empty", other non-objects are a TypeError.
export function toDictionary(value, context) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' && typeof value !== 'function') {
    throw new TypeErrorCtor(`${context}: The provided value is not of type 'object'.`);
  }
  return value;
}

// WebIDL ByteString: every code unit must fit in a byte.
const NON_BYTE = /[^\x00-\xff]/;
export function toByteString(value, context) {
  const s = typeof value === 'string' ? value : StringCtor(value);
  const match = RegExpPrototypeExec(NON_BYTE, s);
  if (match !== null) {
    const at = match.index;
    throw new TypeErrorCtor(`${context}: Cannot convert to ByteString because the character at index ${at} has a value of ${StringPrototypeCharCodeAt(s, at)} which is greater than 255.`);
  }
  return s;
}

// WebIDL USVString: lone surrogates become U+FFFD (String.prototype.toWellFormed, the runtime's
// own copy).
export function toUSVString(value) {
  return StringPrototypeToWellFormed(typeof value === 'string' ? value : StringCtor(value));
}

// Brand checks that cannot be fooled by prototypes: they go through the engine's own getters.
const abByteLength = uncurryGetter(ArrayBuffer.prototype, 'byteLength');
const sabByteLength = typeof SharedArrayBuffer === 'function'
  ? uncurryGetter(SharedArrayBuffer.prototype, 'byteLength')
  : null;
const viewBuffer = uncurryGetter(TypedArrayPrototype, 'buffer');
const viewByteOffset = uncurryGetter(TypedArrayPrototype, 'byteOffset');
const dataViewBuffer = uncurryGetter(DataView.prototype, 'buffer');
const dataViewByteOffset = uncurryGetter(DataView.prototype, 'byteOffset');
const dataViewByteLength = uncurryGetter(DataView.prototype, 'byteLength');

// 'Uint8Array', 'Float32Array', ... or undefined for anything that is not a TypedArray.
export function typedArrayName(value) {
  return TypedArrayPrototypeGetSymbolToStringTag(value);
}

export function isUint8Array(value) {
  return TypedArrayPrototypeGetSymbolToStringTag(value) === 'Uint8Array';
}

export function isArrayBuffer(value) {
  if (typeof value !== 'object' || value === null) return false;
  try { abByteLength(value); return true; } catch { return false; }
}

export function isSharedArrayBuffer(value) {
  if (sabByteLength === null || typeof value !== 'object' || value === null) return false;
  try { sabByteLength(value); return true; } catch { return false; }
}

// BufferSource (ArrayBuffer or a view on one) -> a Uint8Array over the same memory (no copy), or
// null when the value is not a BufferSource. `allowShared` admits SharedArrayBuffer too.
export function bufferSourceView(value, allowShared = false) {
  if (ArrayBufferIsView(value)) {
    const tag = TypedArrayPrototypeGetSymbolToStringTag(value);
    const buffer = tag !== undefined ? viewBuffer(value) : dataViewBuffer(value);
    // WebIDL: not [AllowShared]. Asked as "is it an ArrayBuffer", which costs no exception in
    // the common case (the shared check throws for every ArrayBuffer it is given).
    if (!allowShared && !isArrayBuffer(buffer)) return null;
    if (tag === 'Uint8Array') return value;
    if (tag !== undefined) {
      return new Uint8ArrayCtor(buffer, viewByteOffset(value), TypedArrayPrototypeGetByteLength(value));
    }
    return new Uint8ArrayCtor(buffer, dataViewByteOffset(value), dataViewByteLength(value));
  }
  if (isArrayBuffer(value) || (allowShared && isSharedArrayBuffer(value))) return new Uint8ArrayCtor(value);
  return null;
}

export const EMPTY_BYTES = new Uint8Array(0);

// A copy of bytes [start, end) of a Uint8Array, in a new Uint8Array. Not %TypedArray%.slice,
// which makes its result with the constructor an app can set (Symbol.species, `constructor`).
export function copyBytes(u8, start = 0, end = TypedArrayPrototypeGetByteLength(u8)) {
  const length = end > start ? end - start : 0;
  const out = new Uint8ArrayCtor(length);
  if (length > 0) {
    TypedArrayPrototypeSet(out, new Uint8ArrayCtor(viewBuffer(u8), viewByteOffset(u8) + start, length));
  }
  return out;
}

// Bytes [start, end) of a Uint8Array as a string of one code unit per byte (latin1): text that
// String's indexOf and slice can search and cut without decoding it. In pieces of 8192 bytes, the
// arguments String.fromCharCode is given at once.
export function bytesToLatin1(u8, start = 0, end = TypedArrayPrototypeGetByteLength(u8)) {
  if (end - start <= 8192) {
    const whole = start === 0 && end === TypedArrayPrototypeGetByteLength(u8);
    return ReflectApply(StringFromCharCode, null, whole ? u8 : copyBytes(u8, start, end));
  }
  const pieces = [];
  for (let i = start; i < end; i += 8192) {
    ArrayPrototypePush(pieces, ReflectApply(StringFromCharCode, null, copyBytes(u8, i, i + 8192 < end ? i + 8192 : end)));
  }
  return ArrayPrototypeJoin(pieces, '');
}

// The code units [start, end) of a latin1 string (each below 256) as bytes.
export function latin1ToBytes(s, start = 0, end = s.length) {
  const out = new Uint8ArrayCtor(end > start ? end - start : 0);
  for (let i = start; i < end; i++) out[i - start] = StringPrototypeCharCodeAt(s, i) & 0xff;
  return out;
}

// Concatenates Uint8Array chunks into one new Uint8Array.
export function concatBytes(chunks, total) {
  const out = new Uint8ArrayCtor(total);
  let offset = 0;
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i];
    TypedArrayPrototypeSet(out, c, offset);
    offset += TypedArrayPrototypeGetByteLength(c);
  }
  return out;
}

// The ArrayBuffer holding exactly these bytes: the view's own buffer when it spans all of it,
// otherwise a copy. Callers pass bytes nobody else holds.
export function exactArrayBuffer(u8) {
  const buffer = viewBuffer(u8);
  return viewByteOffset(u8) === 0 && TypedArrayPrototypeGetByteLength(u8) === abByteLength(buffer)
    ? buffer : viewBuffer(TypedArrayPrototypeSlice(u8));
}

// A WebIDL sequence from an iterable: the values its iterator yields, in a list of ours.
// `iter` is the @@iterator method already read, or null to read it now.
export function sequenceOf(value, iter, context) {
  if (iter === null) {
    if (value === null || typeof value !== 'object') {
      throw new TypeErrorCtor(`${context}: The provided value cannot be converted to a sequence.`);
    }
    iter = value[SymbolIterator];
    if (typeof iter !== 'function') {
      throw new TypeErrorCtor(`${context}: The provided value cannot be converted to a sequence.`);
    }
  }
  const iterator = ReflectApply(iter, value, []);
  if (iterator === null || (typeof iterator !== 'object' && typeof iterator !== 'function')) {
    throw new TypeErrorCtor(`${context}: The iterator is not an object.`);
  }
  const next = iterator.next;
  const items = [];
  for (;;) {
    const step = ReflectApply(next, iterator, []);
    if (step === null || (typeof step !== 'object' && typeof step !== 'function')) {
      throw new TypeErrorCtor(`${context}: The iterator result is not an object.`);
    }
    if (step.done) return items;
    ArrayPrototypePush(items, step.value);
  }
}

// HTTP whitespace (Fetch): tab, LF, CR, space.
export function isHttpWhitespace(c) {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

// `s` without leading and trailing HTTP whitespace (`s` itself when it has none).
export function trimHttpWhitespace(s) {
  let start = 0;
  let end = s.length;
  while (start < end && isHttpWhitespace(StringPrototypeCharCodeAt(s, start))) start++;
  while (end > start && isHttpWhitespace(StringPrototypeCharCodeAt(s, end - 1))) end--;
  return start === 0 && end === s.length ? s : StringPrototypeSlice(s, start, end);
}

// Every line break of `text` (CR LF, a lone CR or a lone LF) as `newline`: Blob's "native"
// endings ('\n') and multipart/form-data's values ('\r\n').
export function replaceLineBreaks(text, newline) {
  const pieces = [];
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = StringPrototypeCharCodeAt(text, i);
    if (c !== 10 && c !== 13) continue;
    ArrayPrototypePush(pieces, StringPrototypeSlice(text, from, i), newline);
    if (c === 13 && StringPrototypeCharCodeAt(text, i + 1) === 10) i++;
    from = i + 1;
  }
  if (from === 0) return text;
  ArrayPrototypePush(pieces, StringPrototypeSlice(text, from));
  return ArrayPrototypeJoin(pieces, '');
}

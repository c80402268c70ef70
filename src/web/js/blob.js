// Blob and File (W3C File API §3, §4). A Blob's bytes live in one Uint8Array that no app can
// reach (a private field; every method hands out copies), so a Blob is immutable as the standard
// says. Hand-written: the npm implementations (fetch-blob, buffer's Blob) are Node modules (they
// import node:stream and use top-level await) and call app-reachable methods at run time.
import { host } from './host.js';
import { utf8DecodeStripBOM } from './encoding.js';
import { ReadableStream } from './streams.js';
import {
  bufferSourceView, concatBytes, copyBytes, exactArrayBuffer, exposeInterface, replaceLineBreaks,
  requireArgs, sequenceOf, toDictionary, toUSVString,
} from './util.js';
import {
  ArrayPrototypePush, DateNow, MathMax, MathMin, MathTrunc, NumberCtor,
  RegExpPrototypeExec, PromiseReject, PromiseResolve, StringPrototypeToLowerCase, SymbolIterator, TypeErrorCtor,
  TypedArrayPrototypeGetByteLength,
} from './primordials.js';

const INTERNAL = Symbol('internal');
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

export let blobBytes;    // (blob) -> its Uint8Array, not a copy: callers must not hand it out
export let blobType;     // (blob) -> its type
export let fileInfo;     // (blob) -> { name, lastModified } of a File, null for another Blob
export let isBlob;
export let makeBlob;     // (bytes owned by the new Blob, type) -> Blob
export let makeFile;     // (bytes owned by the new File, name, type, lastModified) -> File
let fillBlob;            // (blob, bytes, type): File's constructor fills its Blob part with it

// Whether a type may be a Blob's: only characters U+0020-U+007E.
export function isValidBlobType(type) {
  return RegExpPrototypeExec(PRINTABLE_ASCII, type) !== null;
}

// Blob's `type`: lower-cased, or '' when it has a character outside U+0020-U+007E.
export function normalizeType(type) {
  const t = toUSVString(type);
  return isValidBlobType(t) ? StringPrototypeToLowerCase(t) : '';
}

// "process blob parts": the concatenated bytes of a sequence of BufferSource, Blob or USVString.
function processParts(parts, endings, context) {
  if (parts === undefined) return new Uint8Array(0);
  if (parts === null || (typeof parts !== 'object' && typeof parts !== 'function')) {
    throw new TypeErrorCtor(`${context}: The provided value cannot be converted to a sequence.`);
  }
  const iter = parts[SymbolIterator];
  if (typeof iter !== 'function') {
    throw new TypeErrorCtor(`${context}: The object must have a callable @@iterator property.`);
  }
  const items = sequenceOf(parts, iter, context);
  const chunks = [];
  let total = 0;
  for (let i = 0; i < items.length; i++) {
    const part = items[i];
    let bytes;
    if (isBlob(part)) {
      bytes = blobBytes(part);
    } else {
      const view = bufferSourceView(part);
      if (view !== null) {
        bytes = copyBytes(view);
      } else {
        let text = toUSVString(part);
        if (endings === 'native') text = replaceLineBreaks(text, '\n');
        bytes = host.utf8Encode(text);
      }
    }
    ArrayPrototypePush(chunks, bytes);
    total += TypedArrayPrototypeGetByteLength(bytes);
  }
  return concatBytes(chunks, total);
}

// The Blob's bytes as a byte stream, in pieces of at most 64 KiB.
function bytesStream(bytes) {
  let offset = 0;
  return new ReadableStream({
    type: 'bytes',
    pull(controller) {
      const length = TypedArrayPrototypeGetByteLength(bytes);
      if (offset >= length) {
        controller.close();
        return;
      }
      const end = MathMin(offset + 65536, length);
      controller.enqueue(copyBytes(bytes, offset, end));
      offset = end;
      if (offset >= length) controller.close();
    },
  });
}

// slice()'s relative positions: negative counts from the end, then clamped to [0, size].
function relativeIndex(value, size) {
  const n = NumberCtor(value);
  const i = n !== n ? 0 : MathTrunc(n); // ToIntegerOrInfinity
  return i < 0 ? MathMax(size + i, 0) : MathMin(i, size);
}

class Blob {
  #bytes;
  #type = '';

  constructor(blobParts = undefined, options = undefined) {
    if (blobParts === INTERNAL) return;
    const context = "Failed to construct 'Blob'";
    const opts = toDictionary(options, context);
    const endings = opts === undefined || opts.endings === undefined ? 'transparent' : `${opts.endings}`;
    if (endings !== 'transparent' && endings !== 'native') {
      throw new TypeErrorCtor(`${context}: The provided value '${endings}' is not a valid enum value of type EndingType.`);
    }
    const type = opts === undefined || opts.type === undefined ? '' : opts.type;
    this.#bytes = processParts(blobParts, endings, context);
    this.#type = normalizeType(type);
  }

  get size() {
    if (!(#type in this)) throw new TypeErrorCtor('Illegal invocation');
    return TypedArrayPrototypeGetByteLength(this.#bytes);
  }

  get type() {
    if (!(#type in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#type;
  }

  slice(start = undefined, end = undefined, contentType = undefined) {
    if (!(#type in this)) throw new TypeErrorCtor('Illegal invocation');
    const size = TypedArrayPrototypeGetByteLength(this.#bytes);
    const from = start === undefined ? 0 : relativeIndex(start, size);
    const to = end === undefined ? size : relativeIndex(end, size);
    const bytes = copyBytes(this.#bytes, from, MathMax(from, to));
    return makeBlob(bytes, contentType === undefined ? '' : normalizeType(contentType));
  }

  stream() {
    if (!(#type in this)) throw new TypeErrorCtor('Illegal invocation');
    return bytesStream(this.#bytes);
  }

  text() {
    if (!(#type in this)) return PromiseReject(new TypeErrorCtor('Illegal invocation'));
    try {
      return PromiseResolve(utf8DecodeStripBOM(this.#bytes));
    } catch (e) {
      return PromiseReject(e);
    }
  }

  arrayBuffer() {
    if (!(#type in this)) return PromiseReject(new TypeErrorCtor('Illegal invocation'));
    return PromiseResolve(exactArrayBuffer(copyBytes(this.#bytes)));
  }

  bytes() {
    if (!(#type in this)) return PromiseReject(new TypeErrorCtor('Illegal invocation'));
    return PromiseResolve(copyBytes(this.#bytes));
  }

  static {
    blobBytes = (b) => b.#bytes;
    blobType = (b) => b.#type;
    isBlob = (value) => typeof value === 'object' && value !== null && #type in value;
    makeBlob = (bytes, type) => {
      const b = new Blob(INTERNAL);
      b.#bytes = bytes;
      b.#type = type;
      return b;
    };
    fillBlob = (b, bytes, type) => {
      b.#bytes = bytes;
      b.#type = type;
    };
  }
}

class File extends Blob {
  #name = '';
  #lastModified = 0;

  constructor(fileBits, fileName = undefined, options = undefined) {
    super(INTERNAL);
    if (fileBits === INTERNAL) return;
    const context = "Failed to construct 'File'";
    requireArgs(arguments.length, 2, context);
    const opts = toDictionary(options, context);
    const endings = opts === undefined || opts.endings === undefined ? 'transparent' : `${opts.endings}`;
    if (endings !== 'transparent' && endings !== 'native') {
      throw new TypeErrorCtor(`${context}: The provided value '${endings}' is not a valid enum value of type EndingType.`);
    }
    const type = opts === undefined || opts.type === undefined ? '' : opts.type;
    const lastModified = opts === undefined || opts.lastModified === undefined ? DateNow() : opts.lastModified;
    fillBlob(this, processParts(fileBits, endings, context), normalizeType(type));
    this.#name = toUSVString(fileName);
    // WebIDL long long: ToNumber, truncated; not finite is 0.
    const n = NumberCtor(lastModified);
    this.#lastModified = n === n && n !== Infinity && n !== -Infinity ? MathTrunc(n) : 0;
  }

  get name() {
    if (!(#name in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#name;
  }

  get lastModified() {
    if (!(#name in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#lastModified;
  }

  static {
    fileInfo = (b) => (#name in b ? { name: b.#name, lastModified: b.#lastModified } : null);
    makeFile = (bytes, name, type, lastModified) => {
      const f = new File(INTERNAL);
      fillBlob(f, bytes, type);
      f.#name = name;
      f.#lastModified = lastModified;
      return f;
    };
  }
}

// File and Blob bodies in fetch and Response: a copy, since a body owns (and may hand out) its
// bytes while the Blob stays whole.
export function blobBodyBytes(blob) {
  return copyBytes(blobBytes(blob));
}

exposeInterface(Blob, 'Blob');
exposeInterface(File, 'File');

export { Blob, File };

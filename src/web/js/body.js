// The Fetch "Body" mixin (Fetch §5.3): body extraction and the text()/json()/arrayBuffer()/bytes()
// methods, shared by Request and Response. Hand-written: it is Fetch's own logic.
//
// A body is kept in the form it was given in for as long as possible: a string stays a string and
// bytes stay bytes, and a ReadableStream is only created when `.body` is read. Reading a string
// body with text(), or handing a string/bytes body to the server, never touches the streams
// library: that is the hello-world path.
import { host } from './host.js';
import { utf8DecodeStripBOM } from './encoding.js';
import {
  ReadableStream, describeReadableStream, isDisturbed, readerCancel, readerRead, streamGetReader,
} from './streams.js';
import { inspect } from './inspect.js';
import { searchParamsBody } from './url.js';
import { blobBodyBytes, blobType, isBlob, isValidBlobType, makeBlob } from './blob.js';
import { isFormData } from './form_data.js';
import { parseContentType, parseFormBody, serializeFormData, serializeMimeType } from './multipart.js';
import {
  bufferSourceView, concatBytes, copyBytes, exactArrayBuffer, isUint8Array, toUSVString,
} from './util.js';
import {
  ArrayPrototypePush, PromisePrototypeThen, PromiseResolve, RangeErrorCtor, ReflectApply, SafePromise,
  TypeErrorCtor,
  TypedArrayPrototypeGetByteLength, Uint8ArrayCtor,
} from './primordials.js';


export const TEXT_PLAIN = 'text/plain;charset=UTF-8';
const FORM_URLENCODED = 'application/x-www-form-urlencoded;charset=UTF-8';

// One body: `source` is a string or a Uint8Array this body owns, until `.body` turns it into
// `stream` (a ReadableStream). `used` records consumption of a source that never became a stream;
// once there is a stream, the stream's own disturbed/locked state is the truth.
// Fields are declared, so they are own properties from the start: assigning them never reaches a
// setter an app put on Object.prototype.
export class BodyState {
  source = null;
  stream = null;
  contentType = null; // from extraction, or null
  used = false;

  constructor(source, stream, contentType) {
    this.source = source;
    this.stream = stream;
    this.contentType = contentType;
  }
}

// The body of an incoming request that arrives as the client sends it. It becomes a
// ReadableStream (makeStream(), bodyPull underneath) only when `.body` is read; read whole before
// that (text(), json(), arrayBuffer(), ...) the host gathers it into one buffer as it arrives:
// gather(callback) returns false when it cannot (no declared length), and the stream reads it.
// The functions are own fields: calling them reaches nothing an app can change.
export class IncomingBody {
  #incoming = true; // the brand: checking it never runs app code, as instanceof could
  makeStream = null;
  gather = null;

  constructor(makeStream, gather) {
    this.makeStream = makeStream;
    this.gather = gather;
  }

  static is(o) {
    return typeof o === 'object' && o !== null && #incoming in o;
  }
}

// All the bytes of an incoming body, as a SafePromise of a Uint8Array.
function readIncoming(incoming) {
  return new SafePromise((resolve, reject) => {
    // 0: the bytes; 2: the body failed (cut, or not as long as announced); 3: no room for it.
    const gathered = incoming.gather((kind, value) => {
      if (kind === 0) resolve(value);
      else if (kind === 3) reject(new RangeErrorCtor(`The request body could not be read: ${value}`));
      else reject(new TypeErrorCtor(`The request body could not be read: ${value}`));
    });
    if (!gathered) resolve(readStreamBytes(incoming.makeStream()));
  });
}

// "extract a body" for BodyInit. Throws TypeError for a disturbed or locked stream.
export function extractBody(object, context) {
  if (typeof object === 'string') return new BodyState(object, null, TEXT_PLAIN);
  if (object instanceof ReadableStream) {
    if (isDisturbed(object) || object.locked) {
      throw new TypeError(`${context}: The provided ReadableStream is disturbed or locked.`);
    }
    return new BodyState(null, object, null);
  }
  const view = bufferSourceView(object);
  if (view !== null) return new BodyState(copyBytes(view), null, null); // the spec copies the bytes
  const params = searchParamsBody(object);
  if (params !== null) return new BodyState(params, null, FORM_URLENCODED);
  if (isBlob(object)) {
    const type = blobType(object);
    return new BodyState(blobBodyBytes(object), null, type === '' ? null : type);
  }
  if (isFormData(object)) {
    const form = serializeFormData(object);
    return new BodyState(form.bytes, null, form.contentType);
  }
  // By WebIDL's union rules anything else is a USVString.
  return new BodyState(toUSVString(object), null, TEXT_PLAIN);
}

export function isUnusable(b) {
  return b.stream !== null ? isDisturbed(b.stream) || b.stream.locked : b.used;
}

export function isBodyUsed(b) {
  return b !== null && (b.stream !== null ? isDisturbed(b.stream) : b.used);
}

// The body's ReadableStream (a byte stream, as Fetch specifies), created on first use.
export function bodyStream(b) {
  if (b.stream !== null) return b.stream;
  const source = b.source;
  b.source = null;
  if (b.used) {
    // Consumed before anyone looked at `.body`: show what the spec's fully-read stream looks
    // like, closed, disturbed and locked by the reader that read it.
    b.stream = new ReadableStream({ type: 'bytes', start(c) { c.close(); } });
    b.stream.getReader().read();
    return b.stream;
  }
  if (IncomingBody.is(source)) {
    b.stream = source.makeStream();
    return b.stream;
  }
  const bytes = typeof source === 'string' ? host.utf8Encode(source) : source;
  b.stream = new ReadableStream({
    type: 'bytes',
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
  return b.stream;
}

// What console.log shows as `body`: the stream if there is one, else a stand-in that looks like
// the stream `.body` would create, so that logging a Response does not turn its body into a
// stream (which would take it off the fast path).
export function bodyForInspection(b) {
  if (b === null) return null;
  if (b.stream !== null) return b.stream;
  const text = describeReadableStream(b.used, b.used ? 'closed' : 'readable', true);
  return { [inspect.custom]: () => text };
}

// "clone a body". The caller has checked the body is usable.
export function cloneBody(b) {
  if (b.stream === null && !IncomingBody.is(b.source)) {
    const s = b.source;
    // Strings are immutable; bytes are copied so each body owns what it hands out.
    return new BodyState(typeof s === 'string' ? s : s.slice(), null, b.contentType);
  }
  bodyStream(b); // an incoming body: its stream, teed
  const [one, two] = b.stream.tee();
  b.stream = one;
  return new BodyState(null, two, b.contentType);
}

// Moves a body to a new owner (new Request(request)); the old owner's body reads as used.
export function takeBody(b) {
  const moved = new BodyState(b.source, b.stream, b.contentType);
  b.source = null;
  b.stream = null;
  b.used = true;
  return moved;
}

// The stream's bytes, for an app's text()/bytes(): a plain Promise, as Fetch gives.
function readAllBytes(stream) {
  return PromiseResolve(readStreamBytes(stream));
}

function usedError(context) {
  return new TypeError(`${context}: Body has already been used or its stream is locked.`);
}

// Takes the source of a usable, not-yet-streamed body, marking the body used.
function takeSource(b) {
  b.used = true;
  const s = b.source;
  b.source = null;
  return s;
}

// Text of a string source as UTF-8 decode(UTF-8 encode(s)) would give: BOM dropped, lone
// surrogates replaced.
function stringText(s) {
  return toUSVString(s.charCodeAt(0) === 0xfeff ? s.slice(1) : s);
}

function consumeText(b, context) {
  if (b === null) return Promise.resolve('');
  if (isUnusable(b)) return Promise.reject(usedError(context));
  if (b.stream === null) {
    const s = takeSource(b);
    if (IncomingBody.is(s)) return PromiseResolve(PromisePrototypeThen(readIncoming(s), utf8DecodeStripBOM));
    try {
      return Promise.resolve(typeof s === 'string' ? stringText(s) : utf8DecodeStripBOM(s));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  return readAllBytes(b.stream).then(utf8DecodeStripBOM);
}

function consumeBytes(b, context) {
  if (b === null) return Promise.resolve(new Uint8Array(0));
  if (isUnusable(b)) return Promise.reject(usedError(context));
  if (b.stream === null) {
    const s = takeSource(b);
    if (IncomingBody.is(s)) return PromiseResolve(readIncoming(s));
    return Promise.resolve(typeof s === 'string' ? host.utf8Encode(s) : s);
  }
  return readAllBytes(b.stream);
}

// The body for the server: no stream is made for string/bytes bodies. Returns the bytes (a
// Uint8Array); or, for a stream body, the stream itself when `streaming` (the caller sends it as
// it is produced) and else a SafePromise of all its bytes.
export function bodyForServer(b, streaming) {
  if (b === null) return new Uint8ArrayCtor(0);
  if (isUnusable(b)) throw new TypeErrorCtor('The Response body has already been used or its stream is locked.');
  if (b.stream === null) {
    const s = takeSource(b);
    if (IncomingBody.is(s)) return streaming ? s.makeStream() : readIncoming(s);
    return typeof s === 'string' ? host.utf8Encode(s) : s;
  }
  return streaming ? b.stream : readStreamBytes(b.stream);
}

// Reads a stream to its end into one Uint8Array, without `await` and without looking methods up
// on the stream or its reader, whose prototypes an app can reach: the SafePromise resolves with
// what the stream produced.
function readStreamBytes(stream) {
  return new SafePromise((resolve, reject) => {
    const reader = ReflectApply(streamGetReader, stream, []);
    const chunks = [];
    let total = 0;
    const step = (result) => {
      if (result.done) {
        resolve(concatBytes(chunks, total));
        return;
      }
      const value = result.value;
      if (!isUint8Array(value)) {
        const error = new TypeErrorCtor('The body stream produced a chunk that is not a Uint8Array.');
        PromisePrototypeThen(ReflectApply(readerCancel, reader, [error]), undefined, () => {});
        reject(error);
        return;
      }
      ArrayPrototypePush(chunks, value);
      total += TypedArrayPrototypeGetByteLength(value);
      pump();
    };
    const pump = () => {
      try {
        PromisePrototypeThen(ReflectApply(readerRead, reader, []), (result) => {
          try { step(result); } catch (error) { reject(error); }
        }, reject);
      } catch (error) {
        reject(error);
      }
    };
    pump();
  });
}

// blob(): the bytes, typed with the Content-Type header's MIME type as the MIME Sniffing
// standard serialises it ('' when there is none, or it is not printable ASCII).
function toBlob(bytes, contentType) {
  const parsed = parseContentType(contentType);
  if (parsed === null) return makeBlob(bytes, '');
  // Not lower-cased as a Blob constructor's type is: the parameters' values keep their case.
  const type = serializeMimeType(parsed);
  return makeBlob(bytes, isValidBlobType(type) ? type : '');
}

// Installs text/json/arrayBuffer/bytes/blob/formData and the body/bodyUsed getters on a class.
// `getBody(obj)` returns the object's BodyState or null, or undefined when obj is not an
// instance; `getContentType(obj)` its Content-Type header's value or null.
export function installBodyMixin(cls, name, getBody, getContentType) {
  const ctx = (method) => `Failed to execute '${method}' on '${name}'`;
  const illegal = () => Promise.reject(new TypeError('Illegal invocation'));
  const methods = {
    text() {
      const b = getBody(this);
      return b === undefined ? illegal() : consumeText(b, ctx('text'));
    },
    json() {
      const b = getBody(this);
      return b === undefined ? illegal() : consumeText(b, ctx('json')).then(JSON.parse);
    },
    arrayBuffer() {
      const b = getBody(this);
      return b === undefined ? illegal() : consumeBytes(b, ctx('arrayBuffer')).then(exactArrayBuffer);
    },
    bytes() {
      const b = getBody(this);
      return b === undefined ? illegal() : consumeBytes(b, ctx('bytes'));
    },
    blob() {
      const b = getBody(this);
      if (b === undefined) return illegal();
      const type = getContentType(this);
      return PromisePrototypeThen(consumeBytes(b, ctx('blob')), (bytes) => toBlob(bytes, type));
    },
    formData() {
      const b = getBody(this);
      if (b === undefined) return illegal();
      const type = getContentType(this);
      return PromisePrototypeThen(consumeBytes(b, ctx('formData')), (bytes) => parseFormBody(bytes, type));
    },
  };
  const getters = {
    get body() {
      const b = getBody(this);
      if (b === undefined) throw new TypeError('Illegal invocation');
      return b === null ? null : bodyStream(b);
    },
    get bodyUsed() {
      const b = getBody(this);
      if (b === undefined) throw new TypeError('Illegal invocation');
      return isBodyUsed(b);
    },
  };
  for (const [key, fn] of Object.entries(methods)) {
    Object.defineProperty(cls.prototype, key, { value: fn, writable: true, enumerable: true, configurable: true });
  }
  for (const key of Object.keys(getters)) {
    const { get } = Object.getOwnPropertyDescriptor(getters, key);
    Object.defineProperty(cls.prototype, key, { get, enumerable: true, configurable: true });
  }
}

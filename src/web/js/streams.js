// ReadableStream, WritableStream, TransformStream and their readers, controllers and queuing
// strategies (WHATWG Streams): web-streams-polyfill's ponyfill, which follows the reference
// implementation.
import './domexception.js'; // the ponyfill picks up globalThis.DOMException when it loads
import * as streams from 'web-streams-polyfill';
import { registerInspector } from './inspect.js';
import { defineGlobal, setName } from './util.js';
import { uncurryGetter } from './primordials.js';

const {
  ReadableStream, ReadableStreamDefaultReader, ReadableStreamBYOBReader,
  ReadableStreamDefaultController, ReadableByteStreamController, ReadableStreamBYOBRequest,
  WritableStream, WritableStreamDefaultWriter, WritableStreamDefaultController,
  TransformStream, TransformStreamDefaultController,
  ByteLengthQueuingStrategy, CountQueuingStrategy,
} = streams;

const exported = {
  ReadableStream, ReadableStreamDefaultReader, ReadableStreamBYOBReader,
  ReadableStreamDefaultController, ReadableByteStreamController, ReadableStreamBYOBRequest,
  WritableStream, WritableStreamDefaultWriter, WritableStreamDefaultController,
  TransformStream, TransformStreamDefaultController,
  ByteLengthQueuingStrategy, CountQueuingStrategy,
};
for (const [name, cls] of Object.entries(exported)) {
  setName(cls, name);
  defineGlobal(name, cls);
}

// console.log(stream) shows its state, as Node does, not the ponyfill's internal fields.
export function describeReadableStream(locked, state, supportsBYOB) {
  return `ReadableStream { locked: ${locked}, state: '${state}', supportsBYOB: ${supportsBYOB} }`;
}
const streamLocked = Object.getOwnPropertyDescriptor(ReadableStream.prototype, 'locked').get;
registerInspector(ReadableStream.prototype, (stream) => {
  let locked;
  try { locked = streamLocked.call(stream); } catch { return undefined; }
  return describeReadableStream(locked, stream._state,
    stream._readableStreamController instanceof ReadableByteStreamController);
});

// Byte streams "transfer" enqueued buffers: the ponyfill uses ArrayBuffer.prototype.transfer (V8
// 13.6 has it), so a chunk moves to the stream without a copy and the producer's view of it is
// detached, as the Streams standard says.

// The ponyfill keeps the stream's [[disturbed]] slot as `_disturbed`; Fetch needs it
// ("body is unusable if its stream is disturbed or locked").
export function isDisturbed(stream) {
  return stream._disturbed === true;
}

export function isReadableStream(value) {
  return value instanceof ReadableStream;
}

// The reader methods the server paths use (reading a body for the server, sending a response
// stream), taken before any app code can replace them: call with ReflectApply.
export const streamGetReader = ReadableStream.prototype.getReader;
export const readerRead = ReadableStreamDefaultReader.prototype.read;
export const readerCancel = ReadableStreamDefaultReader.prototype.cancel;

export {
  ReadableStream, ReadableStreamDefaultReader, WritableStream, TransformStream,
  ReadableStreamDefaultController, WritableStreamDefaultController, TransformStreamDefaultController,
};

// WebIDL's GenericTransformStream mixin (CompressionStream, TextEncoderStream, ...): `readable`
// and `writable` getters on the class's own prototype. `pairOf(obj)` returns the instance's
// { readable, writable } (own data properties), or undefined when obj is not an instance.
export function installGenericTransformStream(cls, pairOf) {
  const getters = {
    get readable() {
      const pair = pairOf(this);
      if (pair === undefined) throw new TypeError('Illegal invocation');
      return pair.readable;
    },
    get writable() {
      const pair = pairOf(this);
      if (pair === undefined) throw new TypeError('Illegal invocation');
      return pair.writable;
    },
  };
  for (const key of ['readable', 'writable']) {
    const { get } = Object.getOwnPropertyDescriptor(getters, key);
    Object.defineProperty(cls.prototype, key, { get, enumerable: true, configurable: true });
  }
}

// The two sides of a TransformStream, read through its getters as the library defined them.
const transformReadable = uncurryGetter(TransformStream.prototype, 'readable');
const transformWritable = uncurryGetter(TransformStream.prototype, 'writable');
export function transformPair(transform) {
  return { __proto__: null, readable: transformReadable(transform), writable: transformWritable(transform) };
}

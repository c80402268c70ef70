// Sends a Response whose body is a ReadableStream to the host as the app produces it: the head
// at once, then each chunk, then the end. Hand-written glue between the server and the Streams
// library (see ../README.md, "Streamed responses").
//
// Flow control: the host answers each piece with the credit left (bytes it may still take before
// the client has read more; below zero by at most one piece), or `false` once the stream is over.
// At zero or below, no more is read from the app's stream (so its
// `pull()` is not called) until the host calls `control(CREDIT)`. Chunks are split into pieces of
// at most PIECE bytes (views, no copy). When the client goes away or a stream limit is reached,
// the host calls `control(CANCEL, message, name)`: the app's stream is cancelled with that reason,
// which reaches its underlying source's `cancel(reason)`.
//
// Only the runtime's own copies of the reader methods are used: the app can reach the stream's
// and the reader's prototypes.
import { DOMException } from './domexception.js';
import { reportException } from './console.js';
import { readerCancel, readerRead, streamGetReader } from './streams.js';
import { isUint8Array } from './util.js';
import {
  PromisePrototypeThen, ReflectApply, TypeErrorCtor, TypedArrayPrototypeGetBuffer,
  TypedArrayPrototypeGetByteLength, TypedArrayPrototypeGetByteOffset, Uint8ArrayCtor,
} from './primordials.js';


const CREDIT = 0;
const CANCEL = 1;
export const PIECE = 64 * 1024;

// bytes [start, end) of a Uint8Array, as a new view of the same memory. Not subarray(): that
// looks up the chunk's species constructor, which the app controls.
function view(chunk, start, end) {
  return new Uint8ArrayCtor(TypedArrayPrototypeGetBuffer(chunk),
    TypedArrayPrototypeGetByteOffset(chunk) + start, end - start);
}

function cancelQuietly(reader, reason) {
  try {
    PromisePrototypeThen(ReflectApply(readerCancel, reader, [reason]), undefined, (error) => {
      reportException(error, 'Uncaught (in the cancel of a response stream)');
    });
  } catch (error) {
    reportException(error, 'Uncaught (in the cancel of a response stream)');
  }
}

// `head` is what responseForServer gave; `host` the natives; `finish(waitUntil)` is called once
// the stream ended, `failWith(error)` if it errored.
export function sendStream(id, head, host, waitUntil, onCancel) {
  const reader = ReflectApply(streamGetReader, head.stream, []);
  let over = false;      // ended, errored or cancelled: nothing more is sent
  let waiting = false;   // out of credit, waiting for control(CREDIT)
  let reading = false;   // a read is outstanding
  let rest = null;       // what is left of a chunk when the credit ran out
  let credit = 0;

  const stop = (reason) => {
    over = true;
    rest = null;
    cancelQuietly(reader, reason);
  };

  // Sends pieces of `rest` while there is credit; true when all of it went.
  const drain = () => {
    while (rest !== null) {
      const size = TypedArrayPrototypeGetByteLength(rest);
      const piece = size > PIECE ? view(rest, 0, PIECE) : rest;
      rest = size > PIECE ? view(rest, PIECE, size) : null;
      const left = host.streamChunk(id, piece);
      if (typeof left !== 'number') {
        // The host ended the stream (the client went away or a limit was reached): its control
        // call, if any, cancels with the real reason; this one only stops us reading.
        stop(new DOMException('The response stream was closed by the server', 'AbortError'));
        return false;
      }
      credit = left;
      if (credit <= 0 && rest !== null) return false;
    }
    return true;
  };

  const onRead = (result) => {
    reading = false;
    if (over) return;
    if (result.done) {
      over = true;
      host.streamEnd(id, waitUntil());
      return;
    }
    const value = result.value;
    if (!isUint8Array(value)) {
      const error = new TypeErrorCtor('The response body stream produced a chunk that is not a Uint8Array.');
      stop(error);
      host.fail(id, error);
      return;
    }
    rest = TypedArrayPrototypeGetByteLength(value) > 0 ? value : null;
    pump();
  };

  const onError = (error) => {
    reading = false;
    if (over) return;
    over = true;
    host.fail(id, error);
  };

  function pump() {
    if (over || reading) return;
    if (!drain()) {
      if (!over) waiting = true;
      return;
    }
    if (credit <= 0) {
      waiting = true;
      return;
    }
    reading = true;
    try {
      PromisePrototypeThen(ReflectApply(readerRead, reader, []), onRead, onError);
    } catch (error) {
      onError(error);
    }
  }

  const control = (kind, message, name) => {
    if (over) return;
    if (kind === CANCEL) {
      const reason = new DOMException(`${message}`, `${name}`);
      stop(reason);
      onCancel(reason);
      return;
    }
    if (kind === CREDIT && waiting) {
      waiting = false;
      credit = 1;  // the host only calls when there is credit; the exact figure comes with the next piece
      pump();
    }
  };

  const initial = host.streamHead(id, head.status, head.statusText, head.headers, control);
  if (typeof initial !== 'number') {
    stop(new DOMException('The response stream was refused by the server', 'AbortError'));
    return;
  }
  credit = initial;
  pump();
}

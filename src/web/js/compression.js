// CompressionStream and DecompressionStream (WHATWG Compression), over the host's zlib natives
// (web/compression.h), in the formats gzip, deflate and deflate-raw. Hand-written glue: the
// compression itself is zlib's.
//
// Not a TransformStream: a transformer must give all the output of a chunk at once, and one
// small chunk of a decompression bomb inflates to gigabytes. Here the readable side makes output
// as it is read (host.zlibRead, 64 KiB at a time) and keeps at most 1 MiB queued ahead of its
// reader; a write resolves once zlib has consumed its chunk, so a writer waits for the reader.
// The native stream is freed when it completes, fails or is cancelled, and, for one its app
// dropped, by a FinalizationRegistry.
import { host } from './host.js';
import {
  ReadableStream, ReadableStreamDefaultController, WritableStream, WritableStreamDefaultController,
  installGenericTransformStream,
} from './streams.js';
import { bufferSourceView, exposeInterface, requireArgs } from './util.js';
import {
  FinalizationRegistryCtor, FinalizationRegistryPrototypeRegister,
  FinalizationRegistryPrototypeUnregister, ReflectApply, SafePromise, TypeErrorCtor,
  TypedArrayPrototypeGetByteLength, uncurryGetter,
} from './primordials.js';

// The controllers' methods as the streams library defined them (their prototypes are globals).
const readableDesiredSize = uncurryGetter(ReadableStreamDefaultController.prototype, 'desiredSize');
const readableEnqueue = ReadableStreamDefaultController.prototype.enqueue;
const readableClose = ReadableStreamDefaultController.prototype.close;
const readableError = ReadableStreamDefaultController.prototype.error;
const writableError = WritableStreamDefaultController.prototype.error;
const call = (fn, self, ...args) => ReflectApply(fn, self, args);

const FORMATS = ['gzip', 'deflate', 'deflate-raw'];
const NEEDS_INPUT = 0; // what host.zlibRead answers when it has no bytes to give
const FINISHED = 1;
const QUEUED_AHEAD = 1024 * 1024;

// Made on first use: a registry is not something the startup snapshot can hold.
let dropped = null;

// The { readable, writable } pair of one zlib stream; `label` names the class in errors.
function zlibPair(format, decompress, label) {
  const id = host.zlibCreate(format, decompress);
  const token = { __proto__: null };
  let ended = false;
  let readableController = null;
  let writableController = null;
  let inputConsumed = null; // resolves the write (or close) waiting for zlib to take its input
  let inputFailed = null;
  let wakeReader = null;    // resolves a pull waiting for input

  const end = () => {
    if (ended) return;
    ended = true;
    host.zlibEnd(id);
    FinalizationRegistryPrototypeUnregister(dropped, token);
  };
  const settleInput = (error) => {
    const resolve = inputConsumed;
    const reject = inputFailed;
    inputConsumed = null;
    inputFailed = null;
    if (error === undefined) { if (resolve !== null) resolve(); } else if (reject !== null) reject(error);
  };
  const failBoth = (error) => {
    end();
    try { call(readableError, readableController, error); } catch { /* already closed or errored */ }
    try { call(writableError, writableController, error); } catch { /* already closed or errored */ }
    settleInput(error);
  };
  // Makes output while the queue has room; returns when zlib needs input or is done.
  const produce = () => {
    while (!ended && readableDesiredSize(readableController) > 0) {
      let out;
      try {
        out = host.zlibRead(id);
      } catch (error) {
        failBoth(error);
        return;
      }
      if (out === FINISHED) {
        end();
        call(readableClose, readableController);
        settleInput();
        return;
      }
      if (out === NEEDS_INPUT) {
        settleInput();
        return;
      }
      call(readableEnqueue, readableController, out);
    }
  };
  // Hands zlib the next input and returns a promise settled once it is consumed.
  const feed = (bytes, finish) => new SafePromise((resolve, reject) => {
    if (ended) {
      reject(new TypeErrorCtor(`${label}: the stream is closed.`));
      return;
    }
    host.zlibFeed(id, bytes, finish);
    inputConsumed = resolve;
    inputFailed = reject;
    if (wakeReader !== null) {
      const wake = wakeReader;
      wakeReader = null;
      wake();
    }
    produce();
  });

  const readable = new ReadableStream({
    __proto__: null,
    start(controller) { readableController = controller; },
    pull() {
      produce();
      if (ended || inputConsumed !== null || readableDesiredSize(readableController) <= 0) {
        return undefined;
      }
      // zlib waits for input: this pull ends when the next write arrives.
      return new SafePromise((resolve) => { wakeReader = resolve; });
    },
    cancel(reason) {
      end();
      try { call(writableError, writableController, reason); } catch { /* already closed or errored */ }
      settleInput(reason);
    },
  }, { __proto__: null, highWaterMark: QUEUED_AHEAD, size: TypedArrayPrototypeGetByteLength });

  const writable = new WritableStream({
    __proto__: null,
    start(controller) { writableController = controller; },
    write(chunk) {
      const bytes = bufferSourceView(chunk);
      if (bytes === null) {
        const error = new TypeErrorCtor(`${label}: chunks must be ArrayBuffer or ArrayBufferView.`);
        failBoth(error);
        throw error;
      }
      return feed(bytes, false);
    },
    close() {
      return feed(null, true);
    },
    abort(reason) {
      end();
      try { call(readableError, readableController, reason); } catch { /* already closed or errored */ }
    },
  });

  dropped ??= new FinalizationRegistryCtor((streamId) => host.zlibEnd(streamId));
  FinalizationRegistryPrototypeRegister(dropped, readable, id, token);
  return { readable, writable };
}

function checkFormat(format, label) {
  const name = `${format}`;
  for (let i = 0; i < FORMATS.length; i++) {
    if (FORMATS[i] === name) return name;
  }
  throw new TypeErrorCtor(`Failed to construct '${label}': Unsupported compression format: '${name}'.`);
}

class CompressionStream {
  #pair;

  constructor(format) {
    requireArgs(arguments.length, 1, "Failed to construct 'CompressionStream'");
    this.#pair = zlibPair(checkFormat(format, 'CompressionStream'), false, 'CompressionStream');
  }

  static {
    installGenericTransformStream(this, (o) => (#pair in o ? o.#pair : undefined));
  }
}

class DecompressionStream {
  #pair;

  constructor(format) {
    requireArgs(arguments.length, 1, "Failed to construct 'DecompressionStream'");
    this.#pair = zlibPair(checkFormat(format, 'DecompressionStream'), true, 'DecompressionStream');
  }

  static {
    installGenericTransformStream(this, (o) => (#pair in o ? o.#pair : undefined));
  }
}

exposeInterface(CompressionStream, 'CompressionStream');
exposeInterface(DecompressionStream, 'DecompressionStream');

export { CompressionStream, DecompressionStream };

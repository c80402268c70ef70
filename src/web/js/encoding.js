// TextEncoder / TextDecoder (WHATWG Encoding), UTF-8 only, over the host's native UTF-8 codec.
// Hand-written: the libraries that exist (e.g. @exodus/bytes) carry every legacy encoding and
// decode in JS; here the natives do the byte work and this file does the spec's API semantics
// (labels, BOM, fatal, streaming).
//
// This module installs its globals as soon as it is evaluated: whatwg-url does
// `new TextEncoder()` at its top level, so url.js imports this module first.
import { host } from './host.js';
import { registerInspector, shownAs } from './inspect.js';
import {
  bufferSourceView, exposeInterface, isUint8Array, requireArgs, toDictionary,
  EMPTY_BYTES,
} from './util.js';

// The labels of the UTF-8 encoding (Encoding standard, "Encodings" table).
const UTF8_LABELS = new Set([
  'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8',
]);
const ASCII_WS_EDGES = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;

class TextEncoder {
  #brand = true;

  get encoding() {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    return 'utf-8';
  }

  // input is a USVString: the native turns lone surrogates into U+FFFD.
  encode(input = '') {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    return host.utf8Encode(typeof input === 'string' ? input : `${input}`);
  }

  encodeInto(source, destination) {
    if (!(#brand in this)) throw new TypeError('Illegal invocation');
    requireArgs(arguments.length, 2, "Failed to execute 'encodeInto' on 'TextEncoder'");
    const s = typeof source === 'string' ? source : `${source}`;
    if (!isUint8Array(destination)) {
      throw new TypeError("Failed to execute 'encodeInto' on 'TextEncoder': parameter 2 is not of type 'Uint8Array'.");
    }
    const [read, written] = host.utf8EncodeInto(s, destination);
    return { read, written };
  }
}

class TextDecoder {
  #fatal;
  #ignoreBOM;
  #bomSeen = false;
  #pending = null; // bytes of an unfinished sequence held back by a {stream: true} decode

  constructor(label = 'utf-8', options = undefined) {
    const name = `${label}`.replace(ASCII_WS_EDGES, '').toLowerCase();
    if (!UTF8_LABELS.has(name)) {
      throw new RangeError(`Failed to construct 'TextDecoder': The encoding label provided ('${label}') is invalid or not supported (only UTF-8 is available).`);
    }
    const opts = toDictionary(options, "Failed to construct 'TextDecoder'");
    this.#fatal = opts !== undefined && !!opts.fatal;
    this.#ignoreBOM = opts !== undefined && !!opts.ignoreBOM;
  }

  get encoding() {
    if (!(#fatal in this)) throw new TypeError('Illegal invocation');
    return 'utf-8';
  }

  get fatal() {
    if (!(#fatal in this)) throw new TypeError('Illegal invocation');
    return this.#fatal;
  }

  get ignoreBOM() {
    if (!(#fatal in this)) throw new TypeError('Illegal invocation');
    return this.#ignoreBOM;
  }

  decode(input = undefined, options = undefined) {
    if (!(#fatal in this)) throw new TypeError('Illegal invocation');
    let bytes = EMPTY_BYTES;
    if (input !== undefined) {
      bytes = bufferSourceView(input, true);
      if (bytes === null) {
        throw new TypeError("Failed to execute 'decode' on 'TextDecoder': The provided value is not of type '(ArrayBuffer or ArrayBufferView)'.");
      }
    }
    const opts = toDictionary(options, "Failed to execute 'decode' on 'TextDecoder'");
    const stream = opts !== undefined && !!opts.stream;

    if (this.#pending !== null) {
      const joined = new Uint8Array(this.#pending.length + bytes.length);
      joined.set(this.#pending, 0);
      joined.set(bytes, this.#pending.length);
      bytes = joined;
      this.#pending = null;
    }
    if (stream) {
      // Hold back a valid-but-unfinished sequence at the end; the next call completes it.
      const tail = host.utf8IncompleteTail(bytes);
      if (tail > 0) {
        this.#pending = bytes.slice(bytes.length - tail);
        bytes = bytes.subarray(0, bytes.length - tail);
      }
    }

    let out;
    try {
      out = host.utf8Decode(bytes, this.#fatal);
    } catch (e) {
      this.#pending = null;
      this.#bomSeen = false;
      throw e;
    }
    // The BOM is only looked at in front of the first code point of the stream.
    if (!this.#bomSeen && out.length > 0) {
      this.#bomSeen = true;
      if (!this.#ignoreBOM && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
    }
    if (!stream) {
      this.#bomSeen = false;
      this.#pending = null;
    }
    return out;
  }
}

exposeInterface(TextEncoder, 'TextEncoder');
exposeInterface(TextDecoder, 'TextDecoder');

// Brand checks through the prototype getters: the stand-in objects have own `encoding` values.
const encoderEncoding = Object.getOwnPropertyDescriptor(TextEncoder.prototype, 'encoding').get;
const decoderFatal = Object.getOwnPropertyDescriptor(TextDecoder.prototype, 'fatal').get;
registerInspector(TextEncoder.prototype, (e) => {
  try { encoderEncoding.call(e); } catch { return undefined; }
  return shownAs(TextEncoder.prototype, { encoding: 'utf-8' });
});
registerInspector(TextDecoder.prototype, (d) => {
  try { decoderFatal.call(d); } catch { return undefined; }
  return shownAs(TextDecoder.prototype, { encoding: 'utf-8', fatal: d.fatal, ignoreBOM: d.ignoreBOM });
});

// "UTF-8 decode" as the Fetch body methods use it: a leading BOM is dropped, errors replaced.
export function utf8DecodeStripBOM(u8) {
  if (u8.length >= 3 && u8[0] === 0xef && u8[1] === 0xbb && u8[2] === 0xbf) u8 = u8.subarray(3);
  return host.utf8Decode(u8, false);
}

export { TextEncoder, TextDecoder };

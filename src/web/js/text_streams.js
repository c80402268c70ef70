// TextEncoderStream and TextDecoderStream (WHATWG Encoding §7), UTF-8 only: TransformStreams
// over TextEncoder/TextDecoder. Hand-written glue of the standard's algorithms.
import { TextDecoder, TextEncoder } from './encoding.js';
import {
  TransformStream, TransformStreamDefaultController, installGenericTransformStream, transformPair,
} from './streams.js';
import { exposeInterface, isArrayBuffer, isSharedArrayBuffer } from './util.js';
import {
  ArrayBufferIsView, ReflectApply, StringPrototypeCharCodeAt, StringPrototypeSlice, TypeErrorCtor,
  Uint8ArrayCtor, uncurryGetter,
} from './primordials.js';

const encodeText = TextEncoder.prototype.encode;
const transformEnqueue = TransformStreamDefaultController.prototype.enqueue;
const enqueue = (controller, chunk) => ReflectApply(transformEnqueue, controller, [chunk]);
const decodeText = TextDecoder.prototype.decode;
const decoderFatal = uncurryGetter(TextDecoder.prototype, 'fatal');
const decoderIgnoreBOM = uncurryGetter(TextDecoder.prototype, 'ignoreBOM');

class TextEncoderStream {
  #transform;

  constructor() {
    const encoder = new TextEncoder();
    let pendingHigh = ''; // a high surrogate that ended the last chunk, waiting for its pair
    this.#transform = transformPair(new TransformStream({
      transform(chunk, controller) {
        let text = pendingHigh + `${chunk}`;
        pendingHigh = '';
        const last = StringPrototypeCharCodeAt(text, text.length - 1);
        if (last >= 0xd800 && last <= 0xdbff) {
          pendingHigh = StringPrototypeSlice(text, text.length - 1);
          text = StringPrototypeSlice(text, 0, text.length - 1);
        }
        if (text.length > 0) enqueue(controller, ReflectApply(encodeText, encoder, [text]));
      },
      flush(controller) {
        if (pendingHigh !== '') enqueue(controller, new Uint8ArrayCtor([0xef, 0xbf, 0xbd]));
      },
    }));
  }

  get encoding() {
    if (!(#transform in this)) throw new TypeErrorCtor('Illegal invocation');
    return 'utf-8';
  }

  static {
    installGenericTransformStream(this, (o) => (#transform in o ? o.#transform : undefined));
  }
}

class TextDecoderStream {
  #transform;
  #decoder;

  constructor(label = 'utf-8', options = undefined) {
    const decoder = new TextDecoder(label, options); // RangeError for labels other than UTF-8's
    this.#decoder = decoder;
    this.#transform = transformPair(new TransformStream({
      transform(chunk, controller) {
        if (!ArrayBufferIsView(chunk) && !isArrayBuffer(chunk) && !isSharedArrayBuffer(chunk)) {
          throw new TypeErrorCtor("Failed to execute 'transform' on 'TextDecoderStream': chunks must be ArrayBuffer or ArrayBufferView.");
        }
        const text = ReflectApply(decodeText, decoder, [chunk, { stream: true }]);
        if (text !== '') enqueue(controller, text);
      },
      flush(controller) {
        const text = ReflectApply(decodeText, decoder, []);
        if (text !== '') enqueue(controller, text);
      },
    }));
  }

  get encoding() {
    if (!(#transform in this)) throw new TypeErrorCtor('Illegal invocation');
    return 'utf-8';
  }

  get fatal() {
    if (!(#transform in this)) throw new TypeErrorCtor('Illegal invocation');
    return decoderFatal(this.#decoder);
  }

  get ignoreBOM() {
    if (!(#transform in this)) throw new TypeErrorCtor('Illegal invocation');
    return decoderIgnoreBOM(this.#decoder);
  }

  static {
    installGenericTransformStream(this, (o) => (#transform in o ? o.#transform : undefined));
  }
}

exposeInterface(TextEncoderStream, 'TextEncoderStream');
exposeInterface(TextDecoderStream, 'TextDecoderStream');

export { TextEncoderStream, TextDecoderStream };

// structuredClone() (HTML), over V8's serializer via host.structuredClone.
import './streams.js'; // must be evaluated before structuredClone exists: see streams.js
import { host } from './host.js';
import { DOMException } from './domexception.js';
import { exposeFunction, isArrayBuffer, requireArgs, toDictionary } from './util.js';
import { ArrayBufferPrototypeGetDetached, ArrayBufferPrototypeTransfer } from './primordials.js';

function structuredClone(value, options = undefined) {
  requireArgs(arguments.length, 1, "Failed to execute 'structuredClone'");
  const opts = toDictionary(options, "Failed to execute 'structuredClone'");
  const seen = new Set();
  if (opts !== undefined && opts.transfer !== undefined) {
    // The transfer list is checked as the spec says. The clone gets a copy of each buffer and the
    // original is then detached (ArrayBuffer.prototype.transfer), which is what a transfer looks
    // like from JavaScript.
    const transfer = opts.transfer;
    if (transfer === null || typeof transfer !== 'object' || typeof transfer[Symbol.iterator] !== 'function') {
      throw new TypeError("Failed to execute 'structuredClone': transfer: The provided value cannot be converted to a sequence.");
    }
    for (const item of transfer) {
      if (item === null || (typeof item !== 'object' && typeof item !== 'function')) {
        throw new TypeError("Failed to execute 'structuredClone': transfer: Value is not an object.");
      }
      if (!isArrayBuffer(item)) {
        throw new DOMException('Value not transferable', 'DataCloneError');
      }
      if (seen.has(item)) throw new DOMException('ArrayBuffer is duplicated in the transfer list', 'DataCloneError');
      if (ArrayBufferPrototypeGetDetached(item)) {
        throw new DOMException('An ArrayBuffer is detached and could not be cloned.', 'DataCloneError');
      }
      seen.add(item);
    }
  }
  const result = host.structuredClone(value);
  if ('error' in result) throw new DOMException(`${result.error}`, 'DataCloneError');
  for (const buffer of seen) ArrayBufferPrototypeTransfer(buffer);
  return result.value;
}

exposeFunction(structuredClone, 'structuredClone');

export { structuredClone };

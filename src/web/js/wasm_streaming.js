// WebAssembly.compileStreaming and instantiateStreaming (WebAssembly Web API §3) over a Response:
// the body is read whole (bounded by the body limits) and compiled asynchronously. V8 provides
// these only to an embedder that streams bytes into its compiler; this does the standard's
// checks and hands the bytes to WebAssembly.compile. Hand-written glue.
//
// Installed per context (host.perContext, called by C++ as each context is made), not when the
// bundle runs: V8 keeps WebAssembly out of a snapshot's contexts and adds a fresh one to each
// context made from it.
import { headersGet } from './headers.js';
import { Response, isResponse } from './response.js';
import { trimHttpWhitespace } from './util.js';
import {
  PromisePrototypeThen, PromiseResolve, ReflectApply, StringPrototypeToLowerCase, TypeErrorCtor,
  uncurryGetter,
} from './primordials.js';

const responseBytes = Response.prototype.arrayBuffer;
const responseOk = uncurryGetter(Response.prototype, 'ok');
const responseHeaders = uncurryGetter(Response.prototype, 'headers');

async function bytesOf(source, method) {
  const response = await source;
  if (!isResponse(response)) {
    throw new TypeErrorCtor(`WebAssembly.${method}(): Argument 0 must be a Response or a promise of one.`);
  }
  const type = headersGet(responseHeaders(response), 'content-type');
  // The header's value itself (no parameters), as the WebAssembly Web API says.
  if (type === null || StringPrototypeToLowerCase(trimHttpWhitespace(type)) !== 'application/wasm') {
    throw new TypeErrorCtor(`WebAssembly.${method}(): The response's Content-Type is not application/wasm.`);
  }
  if (!responseOk(response)) {
    throw new TypeErrorCtor(`WebAssembly.${method}(): The response's status is not ok.`);
  }
  return ReflectApply(responseBytes, response, []);
}

export function installWasmStreaming() {
  if (typeof WebAssembly !== 'object') return; // the snapshot's maker: no WebAssembly yet
  const wasm = WebAssembly;
  const wasmCompile = wasm.compile;
  const wasmInstantiate = wasm.instantiate;
  function compileStreaming(source) {
    return PromisePrototypeThen(PromiseResolve(bytesOf(source, 'compileStreaming')),
      (bytes) => ReflectApply(wasmCompile, wasm, [bytes]));
  }
  function instantiateStreaming(source, importObject = undefined) {
    return PromisePrototypeThen(PromiseResolve(bytesOf(source, 'instantiateStreaming')),
      (bytes) => ReflectApply(wasmInstantiate, wasm, [bytes, importObject]));
  }
  const fns = { compileStreaming, instantiateStreaming };
  for (const name of Object.keys(fns)) {
    Object.defineProperty(fns[name], 'name', { value: name });
    Object.defineProperty(wasm, name, { value: fns[name], writable: true, enumerable: true, configurable: true });
  }
}

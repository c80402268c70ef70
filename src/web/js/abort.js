// AbortController and AbortSignal (DOM standard §3.1-3.2). Hand-written: event-target-shim gives
// the EventTarget, but nothing small provides the signal semantics (reasons, abort algorithms,
// timeout(), any() with dependent signals).
import { host } from './host.js';
import { DOMException } from './domexception.js';
import { Event, EventTarget, getEventAttributeValue, setEventAttributeValue } from './events.js';
import { reportException } from './console.js';
import { registerInspector, shownAs } from './inspect.js';
import { exposeInterface, requireArgs } from './util.js';
import {
  ArrayPrototypePush, MathTrunc, NumberCtor, NumberIsFinite, ReflectApply, SafeSet, TypeErrorCtor,
} from './primordials.js';

// dispatchEvent is EventTarget's (event-target-shim's), taken before an app can replace it.
const dispatchEvent = EventTarget.prototype.dispatchEvent;

const INTERNAL = Symbol('internal');

export let createAbortSignal;     // () -> a new, not aborted AbortSignal
export let signalAbort;           // (signal, reason) -> void
export let addAbortAlgorithm;     // (signal, fn) -> void: fn() runs when it aborts
export let removeAbortAlgorithm;  // (signal, fn) -> void
export let createDependentSignal; // (signals) -> AbortSignal following all of them
export let isAbortSignal;
let abortImpl;     // set by a static block below: the private static methods, for module code
let dependentImpl;

class AbortSignal extends EventTarget {
  #aborted = false;
  #reason = undefined;
  #algorithms = null;  // Set of functions
  #dependents = null;  // Set of dependent AbortSignals
  #sources = null;     // Set of source AbortSignals (only for signals made by any())

  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
    super();
  }

  static abort(reason = undefined) {
    const signal = new AbortSignal(INTERNAL);
    signal.#aborted = true;
    signal.#reason = reason === undefined ? defaultReason() : reason;
    return signal;
  }

  static timeout(milliseconds) {
    requireArgs(arguments.length, 1, "Failed to execute 'timeout' on 'AbortSignal'");
    // WebIDL [EnforceRange] unsigned long long.
    const ms = MathTrunc(NumberCtor(milliseconds));
    if (!NumberIsFinite(ms) || ms < 0 || ms > 9007199254740991) {
      throw new TypeErrorCtor(`Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.`);
    }
    const signal = new AbortSignal(INTERNAL);
    host.setTimer(() => {
      abort(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, ms, false);
    return signal;
  }

  static any(signals) {
    requireArgs(arguments.length, 1, "Failed to execute 'any' on 'AbortSignal'");
    if (signals === null || typeof signals !== 'object' || typeof signals[Symbol.iterator] !== 'function') {
      throw new TypeErrorCtor("Failed to execute 'any' on 'AbortSignal': The provided value cannot be converted to a sequence.");
    }
    // WebIDL sequence<AbortSignal>: through the argument's own iterator, as the spec says.
    const list = [];
    for (const s of signals) {
      if (typeof s !== 'object' || s === null || !(#aborted in s)) {
        throw new TypeErrorCtor("Failed to execute 'any' on 'AbortSignal': Failed to convert value to 'AbortSignal'.");
      }
      ArrayPrototypePush(list, s);
    }
    return dependent(list);
  }

  get aborted() {
    if (!(#aborted in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#aborted;
  }

  get reason() {
    if (!(#aborted in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#reason;
  }

  throwIfAborted() {
    if (!(#aborted in this)) throw new TypeErrorCtor('Illegal invocation');
    if (this.#aborted) throw this.#reason;
  }

  get onabort() {
    if (!(#aborted in this)) throw new TypeErrorCtor('Illegal invocation');
    return getEventAttributeValue(this, 'abort');
  }

  set onabort(value) {
    if (!(#aborted in this)) throw new TypeErrorCtor('Illegal invocation');
    setEventAttributeValue(this, 'abort', typeof value === 'object' || typeof value === 'function' ? value : null);
  }

  static {
    createAbortSignal = () => new AbortSignal(INTERNAL);
    signalAbort = (signal, reason) => abort(signal, reason);
    isAbortSignal = (value) => typeof value === 'object' && value !== null && #aborted in value;
    addAbortAlgorithm = (signal, fn) => {
      (signal.#algorithms ??= new SafeSet()).add(fn);
    };
    removeAbortAlgorithm = (signal, fn) => {
      signal.#algorithms?.delete(fn);
    };
    createDependentSignal = (signals) => dependent(signals);
    abortImpl = (s, r) => AbortSignal.#abort(s, r);
    dependentImpl = (list) => AbortSignal.#dependent(list);
  }

  // "create a dependent abort signal": follows the sources directly (never another dependent).
  static #dependent(signals) {
    const result = new AbortSignal(INTERNAL);
    for (let i = 0; i < signals.length; i++) {
      const s = signals[i];
      if (s.#aborted) {
        result.#aborted = true;
        result.#reason = s.#reason;
        return result;
      }
    }
    const resultSources = new SafeSet();
    result.#sources = resultSources;
    const follow = (source) => {
      resultSources.add(source);
      // Strong references: a dependent stays reachable while a source is alive, so its listeners
      // always fire. (The spec allows collecting it once nothing can observe it; that needs
      // engine support to do exactly, and signals here are short-lived per request.)
      (source.#dependents ??= new SafeSet()).add(result);
    };
    for (let i = 0; i < signals.length; i++) {
      const s = signals[i];
      if (s.#sources === null) follow(s);
      else s.#sources.forEach(follow);
    }
    return result;
  }

  // "signal abort": set the reason on this and its dependents, then run abort steps for each.
  static #abort(signal, reason) {
    if (signal.#aborted) return;
    signal.#aborted = true;
    signal.#reason = reason === undefined ? defaultReason() : reason;
    const toAbort = [];
    if (signal.#dependents !== null) {
      signal.#dependents.forEach((d) => {
        if (d.#aborted) return;
        d.#aborted = true;
        d.#reason = signal.#reason;
        ArrayPrototypePush(toAbort, d);
      });
      signal.#dependents = null;
    }
    AbortSignal.#abortSteps(signal);
    for (let i = 0; i < toAbort.length; i++) AbortSignal.#abortSteps(toAbort[i]);
  }

  static #abortSteps(signal) {
    const algorithms = signal.#algorithms;
    signal.#algorithms = null;
    if (algorithms !== null) {
      algorithms.forEach((fn) => {
        try { fn(); } catch (e) { reportException(e); }
      });
    }
    ReflectApply(dispatchEvent, signal, [new Event('abort')]);
    if (signal.#sources !== null) {
      signal.#sources.forEach((source) => { source.#dependents?.delete(signal); });
      signal.#sources = null;
    }
  }
}

function abort(signal, reason) { abortImpl(signal, reason); }
function dependent(signals) { return dependentImpl(signals); }

function defaultReason() {
  return new DOMException('This operation was aborted', 'AbortError');
}

class AbortController {
  #signal = createAbortSignal();

  get signal() {
    if (!(#signal in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#signal;
  }

  abort(reason = undefined) {
    if (!(#signal in this)) throw new TypeErrorCtor('Illegal invocation');
    abort(this.#signal, reason);
  }
}

exposeInterface(AbortSignal, 'AbortSignal');
exposeInterface(AbortController, 'AbortController');

registerInspector(AbortSignal.prototype, (signal) => {
  if (!isAbortSignal(signal)) return undefined;
  return shownAs(AbortSignal.prototype, signal.aborted
    ? { aborted: true, reason: signal.reason } : { aborted: false });
});
const controllerSignal = Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal').get;
registerInspector(AbortController.prototype, (controller) => {
  let signal;
  try { signal = controllerSignal.call(controller); } catch { return undefined; }
  return shownAs(AbortController.prototype, { signal });
});

export { AbortSignal, AbortController };

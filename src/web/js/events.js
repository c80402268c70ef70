// Event and EventTarget: event-target-shim (a spec-following EventTarget for non-DOM hosts),
// with the few things it leaves out added here: a TypeError when `new Event()` gets no type or
// dispatchEvent() gets a non-Event, interface names and Symbol.toStringTag, no console warnings
// (the shim warns about things the DOM spec silently allows), and exceptions thrown by listeners
// reported to the log as uncaught errors.
import './domexception.js'; // the shim throws globalThis.DOMException (InvalidStateError)
import {
  Event as ShimEvent,
  EventTarget as ShimEventTarget,
  getEventAttributeValue,
  setEventAttributeValue,
  setErrorHandler,
  setWarningHandler,
} from 'event-target-shim';
import { host } from './host.js';
import { reportException } from './console.js';
import { exposeInterface, requireArgs, toDictionary } from './util.js';
import { ReflectApply, TypeErrorCtor } from './primordials.js';

setWarningHandler(() => {});
setErrorHandler((error) => reportException(error));

class Event extends ShimEvent {
  #timeStamp = host.now();

  constructor(type, eventInitDict = undefined) {
    requireArgs(arguments.length, 1, "Failed to construct 'Event'");
    super(`${type}`, toDictionary(eventInitDict, "Failed to construct 'Event'"));
  }

  // DOM: milliseconds relative to the time origin, like performance.now() (the shim uses
  // Date.now()).
  get timeStamp() {
    if (!(#timeStamp in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#timeStamp;
  }
}

// EventTarget is the shim's class itself (patched, not subclassed), so that everything the shim
// accepts as an EventTarget is ours too.
const EventTarget = ShimEventTarget;
const shimDispatch = EventTarget.prototype.dispatchEvent;
Object.defineProperty(EventTarget.prototype, 'dispatchEvent', {
  value: function dispatchEvent(event) {
    requireArgs(arguments.length, 1, "Failed to execute 'dispatchEvent' on 'EventTarget'");
    if (!(event instanceof ShimEvent)) {
      throw new TypeErrorCtor("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
    }
    return ReflectApply(shimDispatch, this, [event]);
  },
  writable: true, enumerable: true, configurable: true,
});

// CustomEvent (DOM §2.4), ErrorEvent (HTML §8.1.4.6) and PromiseRejectionEvent (HTML §8.1.4.7):
// events carrying a value, as apps construct and dispatch them on their own EventTargets.
class CustomEvent extends Event {
  #detail;

  constructor(type, eventInitDict = undefined) {
    requireArgs(arguments.length, 1, "Failed to construct 'CustomEvent'");
    const init = toDictionary(eventInitDict, "Failed to construct 'CustomEvent'");
    super(type, init);
    this.#detail = init === undefined || init.detail === undefined ? null : init.detail;
  }

  get detail() {
    if (!(#detail in this)) throw new TypeErrorCtor('Illegal invocation');
    return this.#detail;
  }
}

class ErrorEvent extends Event {
  #message;
  #filename;
  #lineno;
  #colno;
  #error;

  constructor(type, eventInitDict = undefined) {
    requireArgs(arguments.length, 1, "Failed to construct 'ErrorEvent'");
    const init = toDictionary(eventInitDict, "Failed to construct 'ErrorEvent'");
    super(type, init);
    const member = (key) => (init === undefined ? undefined : init[key]);
    const message = member('message');
    const filename = member('filename');
    const lineno = member('lineno');
    const colno = member('colno');
    this.#message = message === undefined ? '' : `${message}`;
    this.#filename = filename === undefined ? '' : `${filename}`;
    this.#lineno = lineno === undefined ? 0 : Number(lineno) >>> 0;
    this.#colno = colno === undefined ? 0 : Number(colno) >>> 0;
    this.#error = member('error');
  }

  get message() { if (!(#message in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#message; }
  get filename() { if (!(#message in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#filename; }
  get lineno() { if (!(#message in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#lineno; }
  get colno() { if (!(#message in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#colno; }
  get error() { if (!(#message in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#error; }
}

class PromiseRejectionEvent extends Event {
  #promise;
  #reason;

  constructor(type, eventInitDict = undefined) {
    requireArgs(arguments.length, 2, "Failed to construct 'PromiseRejectionEvent'");
    const init = toDictionary(eventInitDict, "Failed to construct 'PromiseRejectionEvent'");
    const promise = init === undefined ? undefined : init.promise;
    if (promise === undefined) {
      throw new TypeErrorCtor("Failed to construct 'PromiseRejectionEvent': required member promise is undefined.");
    }
    if (promise === null || (typeof promise !== 'object' && typeof promise !== 'function')) {
      throw new TypeErrorCtor("Failed to construct 'PromiseRejectionEvent': member promise is not an object.");
    }
    super(type, init);
    this.#promise = promise;
    this.#reason = init.reason;
  }

  get promise() { if (!(#promise in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#promise; }
  get reason() { if (!(#promise in this)) throw new TypeErrorCtor('Illegal invocation'); return this.#reason; }
}

exposeInterface(Event, 'Event');
exposeInterface(EventTarget, 'EventTarget');
exposeInterface(CustomEvent, 'CustomEvent');
exposeInterface(ErrorEvent, 'ErrorEvent');
exposeInterface(PromiseRejectionEvent, 'PromiseRejectionEvent');

export { Event, EventTarget, getEventAttributeValue, setEventAttributeValue };

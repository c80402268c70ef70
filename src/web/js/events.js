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

exposeInterface(Event, 'Event');
exposeInterface(EventTarget, 'EventTarget');

export { Event, EventTarget, getEventAttributeValue, setEventAttributeValue };

// setTimeout/setInterval/clearTimeout/clearInterval and queueMicrotask (HTML "timers" and
// "microtask queuing"), over the host's timer and microtask natives. Hand-written glue.
// Strings are not evaluated as code (no eval here): a non-function callback is a TypeError.
import { host } from './host.js';
import { reportException } from './console.js';
import { exposeFunction, requireArgs } from './util.js';
import { ReflectApply, TypeErrorCtor } from './primordials.js';

const GLOBAL = globalThis;

// WebIDL `long` then HTML's "if timeout < 0, set it to 0" (so 2**31 wraps to 0, as browsers do).
function toDelay(timeout) {
  const ms = timeout | 0;
  return ms < 0 ? 0 : ms;
}

function schedule(callback, timeout, args, repeat, name) {
  if (typeof callback !== 'function') {
    throw new TypeErrorCtor(`Failed to execute '${name}': parameter 1 must be a function (strings are not evaluated).`);
  }
  // Callbacks run with `this` = globalThis and the extra arguments, and an exception is reported
  // as uncaught instead of escaping into the host.
  const run = () => {
    try {
      ReflectApply(callback, GLOBAL, args);
    } catch (e) {
      reportException(e);
    }
  };
  return host.setTimer(run, toDelay(timeout), repeat);
}

function setTimeout(callback, timeout = 0, ...args) {
  requireArgs(arguments.length, 1, "Failed to execute 'setTimeout'");
  return schedule(callback, timeout, args, false, 'setTimeout');
}

function setInterval(callback, timeout = 0, ...args) {
  requireArgs(arguments.length, 1, "Failed to execute 'setInterval'");
  return schedule(callback, timeout, args, true, 'setInterval');
}

// Timeouts and intervals share one id space, so either function clears either kind.
function clearTimeout(id = 0) {
  const n = id | 0;
  if (n > 0) host.clearTimer(n);
}

function clearInterval(id = 0) {
  const n = id | 0;
  if (n > 0) host.clearTimer(n);
}

function queueMicrotask(callback) {
  requireArgs(arguments.length, 1, "Failed to execute 'queueMicrotask'");
  if (typeof callback !== 'function') {
    throw new TypeErrorCtor("Failed to execute 'queueMicrotask': parameter 1 is not of type 'Function'.");
  }
  host.enqueueMicrotask(() => {
    try {
      ReflectApply(callback, undefined, []);
    } catch (e) {
      reportException(e);
    }
  });
}

exposeFunction(setTimeout, 'setTimeout');
exposeFunction(setInterval, 'setInterval');
exposeFunction(clearTimeout, 'clearTimeout');
exposeFunction(clearInterval, 'clearInterval');
exposeFunction(queueMicrotask, 'queueMicrotask');

export { setTimeout, clearTimeout };

// The console namespace (WHATWG Console), writing through host.log(level, text). Formatting is
// Node's (see inspect.js) so that server logs read like Node's. Hand-written: it is glue between
// the formatter and the native log function.
import { host } from './host.js';
import { format, inspect } from './inspect.js';
import { defineGlobal, setName } from './util.js';

let groupIndent = '';
const counts = new Map();
const timers = new Map();

function emit(level, text) {
  if (groupIndent !== '') {
    text = groupIndent + (text.includes('\n') ? text.replace(/\n/g, `\n${groupIndent}`) : text);
  }
  host.log(level, text);
}

// Reports an exception nobody caught (a timer callback, an event listener, a waitUntil promise)
// to the log at error level, with its stack, the way Node prints uncaught errors.
export function reportException(error, prefix = 'Uncaught') {
  let text;
  try { text = inspect(error); } catch { text = '[unprintable value]'; }
  host.log('error', `${prefix} ${text}`);
}

function formatTime(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(3)}s` : `${ms.toFixed(3)}ms`;
}

// Console methods do not use `this`, so `const { log } = console; log('x')` works, as in Node.
const console = {
  log(...args) { emit('log', format(args)); },
  info(...args) { emit('info', format(args)); },
  debug(...args) { emit('debug', format(args)); },
  warn(...args) { emit('warn', format(args)); },
  error(...args) { emit('error', format(args)); },
  dirxml(...args) { emit('log', format(args)); },
  // A table renderer is not provided; the data is logged as it is.
  table(...args) { emit('log', format(args)); },

  trace(...args) {
    const err = { name: 'Trace', message: format(args) };
    Error.captureStackTrace(err, console.trace);
    emit('log', err.stack);
  },

  // WHATWG Console "assert": prefix the message, or log "Assertion failed" before the data.
  assert(condition = false, ...args) {
    if (condition) return;
    if (args.length === 0) args.push('Assertion failed');
    else if (typeof args[0] === 'string') args[0] = `Assertion failed: ${args[0]}`;
    else args.unshift('Assertion failed:');
    emit('error', format(args));
  },

  dir(item = undefined, options = undefined) {
    emit('log', inspect(item, { customInspect: false, ...(options ?? {}) }));
  },

  count(label = 'default') {
    label = `${label}`;
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    emit('info', `${label}: ${n}`);
  },

  countReset(label = 'default') {
    label = `${label}`;
    if (!counts.has(label)) { emit('warn', `Count for '${label}' does not exist`); return; }
    counts.set(label, 0);
  },

  group(...args) {
    if (args.length > 0) emit('log', format(args));
    groupIndent += '  ';
  },

  groupCollapsed(...args) {
    if (args.length > 0) emit('log', format(args));
    groupIndent += '  ';
  },

  groupEnd() {
    groupIndent = groupIndent.slice(0, -2);
  },

  time(label = 'default') {
    label = `${label}`;
    if (timers.has(label)) { emit('warn', `Timer '${label}' already exists`); return; }
    timers.set(label, host.now());
  },

  timeLog(label = 'default', ...args) {
    label = `${label}`;
    const start = timers.get(label);
    if (start === undefined) { emit('warn', `Timer '${label}' does not exist`); return; }
    const text = `${label}: ${formatTime(host.now() - start)}`;
    emit('info', args.length > 0 ? `${text} ${format(args)}` : text);
  },

  timeEnd(label = 'default') {
    label = `${label}`;
    const start = timers.get(label);
    if (start === undefined) { emit('warn', `Timer '${label}' does not exist`); return; }
    timers.delete(label);
    emit('info', `${label}: ${formatTime(host.now() - start)}`);
  },
};

for (const key of Object.keys(console)) setName(console[key], key);
Object.defineProperty(console, Symbol.toStringTag, { value: 'console', configurable: true });

// Replaces V8's built-in (no-op without an inspector) console.
defineGlobal('console', console);

// reportError (HTML §8.1.4.6): reports an exception as uncaught, without throwing it: to the log,
// tagged with the request, as an uncaught exception in a callback is.
function reportError(e) {
  if (arguments.length < 1) {
    throw new TypeError("Failed to execute 'reportError': 1 argument required, but only 0 present.");
  }
  reportException(e);
}
Object.defineProperty(reportError, 'name', { value: 'reportError' });
defineGlobal('reportError', reportError, true);

export { console, inspect };

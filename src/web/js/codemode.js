// Code mode: host.installCodeMode prepares an execution's context before its code runs (the
// `tools` global, and fetch() refused unless outbound is native); host.runExecution calls the
// guest's function and answers through the natives C++ passed (settleExecution, failExecution),
// never by a promise the guest could reach. Hand-written glue between C++ and the guest.
//
// The guest may rewrite every prototype and global before and while it runs: everything here
// uses the runtime's own builtins (primordials.js), and C++ checks every value it receives.
import {
  ErrorCtor, JSONParse, JSONStringify, ObjectDefineProperty, ObjectFreeze, PromiseCtor,
  ProxyCtor, ReflectApply, SafeMap, StringCtor, StringPrototypeSlice, TypeErrorCtor,
} from './primordials.js';
import { defineGlobal } from './util.js';

function codedError(code, message) {
  const error = new ErrorCtor(message);
  ObjectDefineProperty(error, 'code', { value: code, writable: true, configurable: true });
  return error;
}

// tools.<provider>.<tool>(args): a promise of the caller's answer (parsed JSON). Any name gives a
// function; C++ refuses the ones the execution was not given, and the promise rejects.
function makeTool(callTool, provider, name) {
  const tool = function (args) {
    return new PromiseCtor((resolve, reject) => {
      let json;
      try {
        json = args === undefined ? 'null' : JSONStringify(args);
      } catch (error) {
        reject(error);
        return;
      }
      if (typeof json !== 'string') json = 'null';  // a function or a symbol
      const refused = callTool(provider, name, json, {
        __proto__: null,
        resolve(text) {
          let value;
          try { value = JSONParse(text); } catch (error) { reject(error); return; }
          resolve(value);
        },
        reject(code, message) { reject(codedError(code, message)); },
      });
      if (refused !== undefined) reject(codedError(refused[0], refused[1]));
    });
  };
  ObjectDefineProperty(tool, 'name', { value: name });
  return tool;
}

// An object whose every string key is a function (not `then`: awaiting a provider is not a call).
function namespaceOf(make) {
  const made = new SafeMap();
  return new ProxyCtor(ObjectFreeze({ __proto__: null }), {
    get(target, key) {
      if (typeof key !== 'string' || key === 'then') return undefined;
      let value = made.get(key);
      if (value === undefined) {
        value = make(key);
        made.set(key, value);
      }
      return value;
    },
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
  });
}

export function installCodeMode(natives, nativeOutbound) {
  const callTool = natives.callTool;
  const tools = namespaceOf((provider) => namespaceOf((name) => makeTool(callTool, provider, name)));
  defineGlobal('tools', tools);
  // WebAssembly memory lives outside the heap the execution's memory_mb bounds: no WebAssembly.
  delete globalThis.WebAssembly;
  if (!nativeOutbound) {
    defineGlobal('fetch', function fetch() {
      return new PromiseCtor((resolve, reject) => {
        reject(new TypeErrorCtor('fetch() is disabled for this execution (outbound: "disabled")'));
      });
    });
  }
}

const kMaxErrorText = 16384;  // characters of a failure's message and of its stack

function cut(text) {
  return text.length > kMaxErrorText ? StringPrototypeSlice(text, 0, kMaxErrorText) : text;
}

function describeFailure(error) {
  let message;
  let stack = '';
  try {
    if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
      const name = error.name;
      const text = error.message;
      message = text === undefined ? StringCtor(error) : `${name === undefined ? 'Error' : StringCtor(name)}: ${StringCtor(text)}`;
      const s = error.stack;
      if (typeof s === 'string') stack = s;
    } else {
      message = `Uncaught ${typeof error === 'string' ? error : StringCtor(error)}`;
    }
  } catch {
    message = 'the guest threw a value that cannot be described';
  }
  if (typeof message !== 'string') message = 'the guest failed';
  return [cut(message), cut(stack)];
}

// `await` takes no species or `then` from the guest's promise of our own: a guest that replaced
// Promise[Symbol.species] or Promise.prototype.then gets its own failure, typed, not ours.
async function run(id, fn, natives) {
  const settle = natives.settleExecution;
  const fail = natives.failExecution;
  let value;
  try {
    value = await ReflectApply(fn, undefined, []);
  } catch (error) {
    const [message, stack] = describeFailure(error);
    fail(id, message, stack);
    return;
  }
  let text;
  try {
    text = JSONStringify(value);
  } catch (error) {
    const [message, stack] = describeFailure(error);
    fail(id, message, stack);
    return;
  }
  settle(id, typeof text === 'string' ? text : 'null');
}

export function runExecution(id, fn, natives) {
  // Its promise never rejects (run catches everything the guest can throw into it).
  run(id, fn, natives);
}

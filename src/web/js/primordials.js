// The runtime's own copies of the builtins it calls, taken when the bundle starts: before any app
// code runs. Apps may rewrite every prototype and global (`Promise.prototype.then`,
// `Array.prototype.push`, `RegExp.prototype.exec`, `Object.prototype` getters and setters, ...);
// code of the runtime that calls these copies instead of `x.method()` keeps working the way the
// standards say whatever the app did. This is not what protects the server: C++ checks every
// value it receives from here (worker/app_response.h, ipc/response_check.h), and an app that
// defeats these copies (an index setter on Array.prototype, say) can only break its own responses
// into 500s. The idea is Node's "primordials"; this is our own, smaller set. Hand-written: no
// library provides it for a non-Node engine embedding.
//
// Rules for runtime code on the paths apps can reach (dispatch, Request, Response, Headers, body):
// - call prototype methods through these uncurried copies: `ArrayPrototypePush(list, x)`, not
//   `list.push(x)`; `RegExpTest(re, s)`, not `re.test(s)`;
// - no `for...of`, spread or array destructuring over arrays or collections (they go through
//   %ArrayIteratorPrototype%.next, which apps can replace): index loops and SafeMap#forEach; and
//   no derived class without an explicit constructor (the implicit one spreads its arguments);
// - objects the runtime keeps are made with their properties declared (object literals, class
//   fields), never by assigning to a missing property (a setter on Object.prototype would take it);
// - promises of the runtime are chained with PromisePrototypeThen, and their reactions return
//   nothing an app should see.

const { bind, call } = Function.prototype;
// uncurryThis(f)(self, ...args) === f.call(self, ...args), with the original `call` bound in.
const uncurryThis = bind.bind(call);

export const ReflectApply = Reflect.apply;
const ReflectOwnKeys = Reflect.ownKeys;
export const ReflectDefineProperty = Reflect.defineProperty;

export const ObjectCreate = Object.create;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectFreeze = Object.freeze;
export const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const ObjectGetOwnPropertySymbols = Object.getOwnPropertySymbols;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectHasOwn = Object.hasOwn;
export const ObjectKeys = Object.keys;
export const ObjectPrototype = Object.prototype;
export const ObjectSetPrototypeOf = Object.setPrototypeOf;
export const ObjectPrototypePropertyIsEnumerable = uncurryThis(Object.prototype.propertyIsEnumerable);

export const ArrayIsArray = Array.isArray;
export const ArrayPrototypeIncludes = uncurryThis(Array.prototype.includes);
export const ArrayBufferPrototypeTransfer = uncurryThis(ArrayBuffer.prototype.transfer);
export const ArrayPrototypeJoin = uncurryThis(Array.prototype.join);
export const ArrayPrototypePush = uncurryThis(Array.prototype.push);
// A copy of an array made by index, without Array.prototype.slice's species lookup.
export function copyArray(list) {
  const out = [];
  for (let i = 0; i < list.length; i++) out[i] = list[i];
  return out;
}
export const ArrayPrototypeSort = uncurryThis(Array.prototype.sort);

export const JSONStringify = JSON.stringify;
export const JSONParse = JSON.parse;
export const PromiseCtor = Promise;
export const ErrorCtor = Error;
export const ProxyCtor = Proxy;

export const MathTrunc = Math.trunc;
export const MathMax = Math.max;
export const MathMin = Math.min;
export const DateNow = Date.now;
export const NumberIsFinite = Number.isFinite;
export const NumberCtor = Number;
export const StringCtor = String;

export const StringPrototypeCharCodeAt = uncurryThis(String.prototype.charCodeAt);
export const StringPrototypeSlice = uncurryThis(String.prototype.slice);
export const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
export const StringFromCharCode = String.fromCharCode;
export const StringPrototypeToLowerCase = uncurryThis(String.prototype.toLowerCase);
export const StringPrototypeToUpperCase = uncurryThis(String.prototype.toUpperCase);
export const StringPrototypeToWellFormed = uncurryThis(String.prototype.toWellFormed);

// RegExp: `exec` is the one method that does not look anything up on the regular expression
// (`test`, `replace`, `match` call `this.exec`, which an app can replace). A regular expression
// used with RegExpTest must not be global or sticky (exec would then read and write lastIndex).
export const RegExpPrototypeExec = uncurryThis(RegExp.prototype.exec);
export function RegExpTest(re, s) {
  return RegExpPrototypeExec(re, s) !== null;
}

export const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
// A getter of the prototype, uncurried: getter(self) === self[key] as the engine defines it.
export const uncurryGetter = (proto, key) =>
  uncurryThis(Object.getOwnPropertyDescriptor(proto, key).get);
export const TypedArrayPrototypeGetSymbolToStringTag =
  uncurryGetter(TypedArrayPrototype, Symbol.toStringTag);
export const TypedArrayPrototypeGetByteLength = uncurryGetter(TypedArrayPrototype, 'byteLength');
export const ArrayBufferPrototypeGetDetached = uncurryGetter(ArrayBuffer.prototype, 'detached');
export const TypedArrayPrototypeGetByteOffset = uncurryGetter(TypedArrayPrototype, 'byteOffset');
export const TypedArrayPrototypeGetBuffer = uncurryGetter(TypedArrayPrototype, 'buffer');
export const TypedArrayPrototypeSet = uncurryThis(TypedArrayPrototype.set);
export const TypedArrayPrototypeSlice = uncurryThis(TypedArrayPrototype.slice);
export const Uint8ArrayCtor = Uint8Array;
export const ArrayBufferIsView = ArrayBuffer.isView;

export const SymbolIterator = Symbol.iterator;


export const PromisePrototypeThen = uncurryThis(Promise.prototype.then);
export const FinalizationRegistryCtor = FinalizationRegistry;
export const FinalizationRegistryPrototypeRegister = uncurryThis(FinalizationRegistry.prototype.register);
export const FinalizationRegistryPrototypeUnregister = uncurryThis(FinalizationRegistry.prototype.unregister);
const PromiseStaticResolve = Promise.resolve;
export const PromiseResolve = (value) => ReflectApply(PromiseStaticResolve, PromiseCtor, [value]);
const PromiseStaticReject = Promise.reject;
export const PromiseReject = (reason) => ReflectApply(PromiseStaticReject, PromiseCtor, [reason]);

export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;

// Collections whose prototypes hold their own frozen copies of every method, so that
// `map.get(k)` on a SafeMap never reaches Map.prototype, which an app may have changed. Iterate
// with forEach (the iterators they return still use %MapIteratorPrototype%.next).
function makeSafe(Unsafe, Safe) {
  const proto = Unsafe.prototype;
  for (const key of ReflectOwnKeys(proto)) {
    if (key === 'constructor') continue;
    ReflectDefineProperty(Safe.prototype, key, ObjectGetOwnPropertyDescriptor(proto, key));
  }
  // Derived objects (a promise's then(), ...) are made by Safe itself, whatever an app does to
  // the unsafe constructor's Symbol.species.
  ReflectDefineProperty(Safe, Symbol.species, { get() { return Safe; } });
  ObjectFreeze(Safe.prototype);
  ObjectFreeze(Safe);
  return Safe;
}

// Explicit constructors: a derived class's implicit one is `constructor(...args) { super(...args) }`,
// and that spread goes through %ArrayIteratorPrototype%.next.
export const SafeMap = makeSafe(Map, class SafeMap extends Map { constructor(i) { super(i); } });
export const SafeSet = makeSafe(Set, class SafeSet extends Set { constructor(i) { super(i); } });
// A promise whose then() never consults anything an app can reach: its `constructor` and
// Symbol.species are its own, frozen. Hand one to C++ or chain on it when an app must not see or
// steer what flows through.
export const SafePromise = makeSafe(Promise, class SafePromise extends Promise {
  constructor(executor) { super(executor); }
});

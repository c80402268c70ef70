// A compact re-implementation of Node's util.inspect() and util.format(), for console output.
// Hand-written: Node's own lives in its internals (lib/internal/util/inspect.js) and depends on
// native type checks; this follows its algorithm (the same line-breaking, grouping of array
// elements, circular markers, depth limit, quoting) so that logs look like Node's, using only what
// plain JavaScript can see. Known differences: a Promise's state and a Proxy cannot be seen from
// JavaScript (shown as `Promise {}` and as the target), no colors, no `getters`/`sorted` options.
import { isArrayBuffer, isSharedArrayBuffer, typedArrayName } from './util.js';

const kObjectType = 0;
const kArrayType = 1;        // array elements: shown without their index
const kArrayExtrasType = 2;  // arrays' other keys: shown as `key: value`
const NODE_CUSTOM = Symbol.for('nodejs.util.inspect.custom');

const defaultOptions = {
  showHidden: false,
  depth: 2,
  customInspect: true,
  maxArrayLength: 100,
  maxStringLength: 10000,
  breakLength: 80,
  compact: 3,
};

// Runtime classes whose state lives in private fields (Headers, Request, URL, ...) register a
// function here: fn(value, formatChild) returns an object to show in place of the instance (made
// with Object.create(TheClass.prototype), so it prints as `TheClass { ... }`), or the finished
// text, or undefined when the value is not really one of theirs. Keyed by prototype, looked up
// along the chain.
const inspectors = new Map();
export function registerInspector(proto, fn) {
  inspectors.set(proto, fn);
}

// The stand-in object an inspector returns: own data properties (defined, not assigned, so the
// class's setters are not called) on an object inheriting the class's prototype.
export function shownAs(proto, props) {
  const shown = Object.create(proto);
  for (const key of Object.keys(props)) {
    Object.defineProperty(shown, key, { value: props[key], writable: true, enumerable: true, configurable: true });
  }
  return shown;
}

export function inspect(value, options = undefined) {
  const ctx = {
    ...defaultOptions,
    seen: [],
    circular: undefined,
    indentationLvl: 0,
    currentDepth: 0,
  };
  if (options !== undefined && options !== null) {
    for (const key of Object.keys(defaultOptions)) {
      if (options[key] !== undefined) ctx[key] = options[key];
    }
    if (options.depth === null) ctx.depth = Infinity;
  }
  if (ctx.maxArrayLength === null) ctx.maxArrayLength = Infinity;
  if (ctx.maxStringLength === null) ctx.maxStringLength = Infinity;
  return formatValue(ctx, value, 0);
}
inspect.custom = NODE_CUSTOM;

// ---------------------------------------------------------------------------------------------
// Brand checks that do not trust Symbol.toStringTag or prototypes.

function tryCall(fn, value) {
  try { fn.call(value); return true; } catch { return false; }
}
const dateGetTime = Date.prototype.getTime;
const regexpSource = Object.getOwnPropertyDescriptor(RegExp.prototype, 'source').get;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size').get;
const weakMapHas = WeakMap.prototype.has;
const weakSetHas = WeakSet.prototype.has;
const dataViewByteLength = Object.getOwnPropertyDescriptor(DataView.prototype, 'byteLength').get;
const isDate = (v) => tryCall(dateGetTime, v);
const isRegExp = (v) => v !== RegExp.prototype && tryCall(regexpSource, v);
const isMap = (v) => tryCall(mapSize, v);
const isSet = (v) => tryCall(setSize, v);
const isWeakMap = (v) => { try { weakMapHas.call(v, {}); return true; } catch { return false; } };
const isWeakSet = (v) => { try { weakSetHas.call(v, {}); return true; } catch { return false; } };
const isDataView = (v) => tryCall(dataViewByteLength, v);
const isError = (v) => v instanceof Error || Object.prototype.toString.call(v) === '[object Error]';
const isArguments = (v) => Object.prototype.toString.call(v) === '[object Arguments]';
const AsyncFunctionProto = Object.getPrototypeOf(async function () {});
const GeneratorFunctionProto = Object.getPrototypeOf(function* () {});
const AsyncGeneratorFunctionProto = Object.getPrototypeOf(async function* () {});
const boxed = [
  ['Number', Number.prototype.valueOf],
  ['String', String.prototype.valueOf],
  ['Boolean', Boolean.prototype.valueOf],
  ['BigInt', BigInt.prototype.valueOf],
  ['Symbol', Symbol.prototype.valueOf],
];

// ---------------------------------------------------------------------------------------------
// Primitives

const meta = [];
for (let i = 0; i < 0xa0; i++) {
  if (i < 0x20 || (i >= 0x7f)) meta[i] = `\\x${i.toString(16).toUpperCase().padStart(2, '0')}`;
}
meta[8] = '\\b'; meta[9] = '\\t'; meta[10] = '\\n'; meta[12] = '\\f'; meta[13] = '\\r';
meta[39] = "\\'"; meta[92] = '\\\\';

// Quote with single quotes, or with double quotes/backticks when that avoids escaping, as Node.
export function strEscape(str) {
  let quote = 39;
  if (str.includes("'")) {
    if (!str.includes('"')) quote = 34;
    else if (!str.includes('`') && !str.includes('${')) quote = 96;
  }
  let result = '';
  let last = 0;
  for (let i = 0; i < str.length; i++) {
    const point = str.charCodeAt(i);
    if (point === quote || point === 92 || point < 32 || (point > 126 && point < 160)) {
      result += str.slice(last, i) + (point === quote && quote !== 39 ? `\\${str[i]}` : meta[point]);
      last = i + 1;
    } else if (point >= 0xd800 && point <= 0xdfff) {
      if (point <= 0xdbff && i + 1 < str.length) {
        const next = str.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
      }
      result += `${str.slice(last, i)}\\u${point.toString(16).toUpperCase()}`;
      last = i + 1;
    }
  }
  if (last !== str.length) result += str.slice(last);
  const q = String.fromCharCode(quote);
  return q + result + q;
}

function formatNumber(n) {
  return Object.is(n, -0) ? '-0' : `${n}`;
}

function formatPrimitive(ctx, value) {
  switch (typeof value) {
    case 'string': {
      let trailer = '';
      if (value.length > ctx.maxStringLength) {
        const remaining = value.length - ctx.maxStringLength;
        value = value.slice(0, ctx.maxStringLength);
        trailer = `... ${remaining} more character${remaining > 1 ? 's' : ''}`;
      }
      // Long multi-line strings are split at newlines into 'a\n' + 'b', as Node does.
      if (value.length > 16 && value.length > ctx.breakLength - ctx.indentationLvl - 4) {
        const lines = value.split(/(?<=\n)/);
        if (lines.length > 1) {
          return lines.map(strEscape).join(` +\n${' '.repeat(ctx.indentationLvl + 2)}`) + trailer;
        }
      }
      return strEscape(value) + trailer;
    }
    case 'number': return formatNumber(value);
    case 'bigint': return `${value}n`;
    case 'boolean': return `${value}`;
    case 'undefined': return 'undefined';
    default: return value.toString(); // symbol
  }
}

// ---------------------------------------------------------------------------------------------
// Objects

function formatValue(ctx, value, recurseTimes, typedArray) {
  if (typeof value !== 'object' && typeof value !== 'function') return formatPrimitive(ctx, value);
  if (value === null) return 'null';

  if (ctx.customInspect) {
    let custom;
    try { custom = value[NODE_CUSTOM]; } catch { custom = undefined; }
    if (typeof custom === 'function' && custom !== inspect) {
      const depth = ctx.depth === Infinity ? null : ctx.depth - recurseTimes;
      const opts = {
        ...defaultOptions,
        showHidden: ctx.showHidden, depth, breakLength: ctx.breakLength, compact: ctx.compact,
        maxArrayLength: ctx.maxArrayLength, maxStringLength: ctx.maxStringLength,
        stylize: (s) => s,
      };
      const ret = custom.call(value, depth, opts, inspect);
      if (ret !== value) {
        if (typeof ret !== 'string') return formatValue(ctx, ret, recurseTimes);
        return ret.replace(/\n/g, `\n${' '.repeat(ctx.indentationLvl)}`);
      }
    }
    for (let p = Object.getPrototypeOf(value); p !== null; p = Object.getPrototypeOf(p)) {
      const fn = inspectors.get(p);
      if (fn !== undefined) {
        const shown = fn(value, (child) => formatValue(ctx, child, recurseTimes + 1));
        if (typeof shown === 'string') return shown;
        if (shown !== undefined) {
          if (ctx.seen.includes(value)) return circularRef(ctx, value);
          ctx.seen.push(value);
          try { return formatValue(ctx, shown, recurseTimes, typedArray); } finally { ctx.seen.pop(); }
        }
        break;
      }
    }
  }

  if (ctx.seen.includes(value)) return circularRef(ctx, value);
  return formatRaw(ctx, value, recurseTimes, typedArray);
}

function circularRef(ctx, value) {
  if (ctx.circular === undefined) ctx.circular = new Map();
  let index = ctx.circular.get(value);
  if (index === undefined) {
    index = ctx.circular.size + 1;
    ctx.circular.set(value, index);
  }
  return `[Circular *${index}]`;
}

function getConstructorName(obj) {
  let first = true;
  let firstProto;
  for (let p = obj; p !== null; p = Object.getPrototypeOf(p)) {
    const desc = Object.getOwnPropertyDescriptor(p, 'constructor');
    if (desc !== undefined && typeof desc.value === 'function' && desc.value.name !== '') {
      let isInstance = false;
      try { isInstance = obj instanceof desc.value; } catch { /* not callable as a constructor */ }
      if (isInstance) return String(desc.value.name);
    }
    if (first) { firstProto = Object.getPrototypeOf(p); first = false; }
  }
  return firstProto === null ? null : 'Object';
}

function getPrefix(constructor, tag, fallback, size = '') {
  if (constructor === null) {
    if (tag !== '' && fallback !== tag) return `[${fallback}${size}: null prototype] [${tag}] `;
    return `[${fallback}${size}: null prototype] `;
  }
  if (tag !== '' && constructor !== tag) return `${constructor}${size} [${tag}] `;
  return `${constructor}${size} `;
}

function getKeys(value, showHidden) {
  const symbols = Object.getOwnPropertySymbols(value);
  let keys;
  if (showHidden) {
    keys = Object.getOwnPropertyNames(value);
    if (symbols.length !== 0) keys.push(...symbols);
  } else {
    keys = Object.keys(value);
    for (const s of symbols) if (Object.prototype.propertyIsEnumerable.call(value, s)) keys.push(s);
  }
  return keys;
}

const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;
function getNonIndexKeys(value, showHidden) {
  return getKeys(value, showHidden).filter((k) => typeof k === 'symbol' || !INDEX_KEY.test(k) || +k >= 2 ** 32 - 1);
}

function formatRaw(ctx, value, recurseTimes, typedArray) {
  let keys;
  const constructor = getConstructorName(value);
  let tag = value[Symbol.toStringTag];
  // A tag that is an own (enumerable) property is printed as a key anyway.
  if (typeof tag !== 'string' || (tag !== '' && (ctx.showHidden
    ? Object.prototype.hasOwnProperty : Object.prototype.propertyIsEnumerable).call(value, Symbol.toStringTag))) {
    tag = '';
  }
  let base = '';
  let formatter = () => [];
  let braces;
  let extrasType = kObjectType;
  const taName = typedArrayName(value);

  if (Array.isArray(value)) {
    const prefix = (constructor !== 'Array' || tag !== '') ? getPrefix(constructor, tag, 'Array', `(${value.length})`) : '';
    keys = getNonIndexKeys(value, ctx.showHidden);
    braces = [`${prefix}[`, ']'];
    if (value.length === 0 && keys.length === 0) return `${braces[0]}]`;
    extrasType = kArrayExtrasType;
    formatter = formatArray;
  } else if (isSet(value)) {
    const size = setSize.call(value);
    const prefix = getPrefix(constructor, tag, 'Set', `(${size})`);
    keys = getKeys(value, ctx.showHidden);
    formatter = formatSet;
    if (size === 0 && keys.length === 0) return `${prefix}{}`;
    braces = [`${prefix}{`, '}'];
  } else if (isMap(value)) {
    const size = mapSize.call(value);
    const prefix = getPrefix(constructor, tag, 'Map', `(${size})`);
    keys = getKeys(value, ctx.showHidden);
    formatter = formatMap;
    if (size === 0 && keys.length === 0) return `${prefix}{}`;
    braces = [`${prefix}{`, '}'];
  } else if (taName !== undefined) {
    keys = getNonIndexKeys(value, ctx.showHidden);
    const prefix = getPrefix(constructor, tag, taName, `(${value.length})`);
    braces = [`${prefix}[`, ']'];
    if (value.length === 0 && keys.length === 0 && !ctx.showHidden) return `${braces[0]}]`;
    formatter = formatTypedArray;
    extrasType = kArrayExtrasType;
  } else {
    keys = getKeys(value, ctx.showHidden);
    braces = ['{', '}'];
    if (constructor === 'Object' && !isError(value) && !isDate(value) && !isRegExp(value)) {
      if (isArguments(value)) braces[0] = '[Arguments] [';
      else if (tag !== '') braces[0] = `${getPrefix(constructor, tag, 'Object')}{`;
      if (keys.length === 0) return `${braces[0]}}`;
      if (isArguments(value)) { braces[1] = ']'; extrasType = kArrayExtrasType; keys = []; formatter = formatArray; }
    } else if (typeof value === 'function') {
      base = getFunctionBase(value, constructor, tag);
      if (keys.length === 0) return base;
    } else if (isRegExp(value)) {
      base = RegExp.prototype.toString.call(value);
      const prefix = getPrefix(constructor, tag, 'RegExp');
      if (prefix !== 'RegExp ') base = `${prefix}${base}`;
      if (keys.length === 0 || recurseTimes > ctx.depth) return base;
    } else if (isDate(value)) {
      base = Number.isNaN(dateGetTime.call(value))
        ? Date.prototype.toString.call(value) : Date.prototype.toISOString.call(value);
      const prefix = getPrefix(constructor, tag, 'Date');
      if (prefix !== 'Date ') base = `${prefix}${base}`;
      if (keys.length === 0) return base;
    } else if (isError(value)) {
      base = formatError(value, constructor, ctx, keys);
      if (keys.length === 0) return base;
    } else if (isArrayBuffer(value) || isSharedArrayBuffer(value)) {
      const prefix = getPrefix(constructor, tag, isArrayBuffer(value) ? 'ArrayBuffer' : 'SharedArrayBuffer');
      if (typedArray === undefined) {
        formatter = formatArrayBuffer;
      } else if (keys.length === 0) {
        return `${prefix}{ byteLength: ${formatNumber(value.byteLength)} }`;
      }
      braces[0] = `${prefix}{`;
      keys.unshift('byteLength');
    } else if (isDataView(value)) {
      braces[0] = `${getPrefix(constructor, tag, 'DataView')}{`;
      keys.unshift('byteLength', 'byteOffset', 'buffer');
    } else if (value instanceof Promise) {
      braces[0] = `${getPrefix(constructor, tag, 'Promise')}{`;
    } else if (isWeakSet(value) || isWeakMap(value)) {
      braces[0] = `${getPrefix(constructor, tag, isWeakSet(value) ? 'WeakSet' : 'WeakMap')}{`;
      formatter = () => ['<items unknown>'];
    } else {
      const box = boxed.find(([, valueOf]) => tryCall(valueOf, value));
      if (box !== undefined) {
        const [type, valueOf] = box;
        if (type === 'String') keys = keys.filter((k) => typeof k === 'symbol' || !INDEX_KEY.test(k) || +k >= value.length);
        base = `[${type}`;
        if (type !== constructor) base += constructor === null ? ' (null prototype)' : ` (${constructor})`;
        base += `: ${formatPrimitive({ ...defaultOptions, indentationLvl: 0, breakLength: Infinity }, valueOf.call(value))}]`;
        if (tag !== '' && tag !== constructor) base += ` [${tag}]`;
        if (keys.length === 0) return base;
      } else {
        braces[0] = `${getPrefix(constructor, tag, 'Object')}{`;
        if (keys.length === 0) return `${braces[0]}}`;
      }
    }
  }

  if (recurseTimes > ctx.depth) {
    let name = getPrefix(constructor, tag, 'Object').slice(0, -1);
    if (constructor !== null) name = `[${name}]`;
    return name;
  }
  recurseTimes += 1;
  ctx.seen.push(value);
  ctx.currentDepth = recurseTimes;
  let output;
  try {
    output = formatter(ctx, value, recurseTimes);
    for (let i = 0; i < keys.length; i++) {
      output.push(formatProperty(ctx, value, recurseTimes, keys[i], extrasType));
    }
  } finally {
    ctx.seen.pop();
  }
  if (ctx.circular !== undefined) {
    const index = ctx.circular.get(value);
    if (index !== undefined) {
      const reference = `<ref *${index}>`;
      base = base === '' ? reference : `${reference} ${base}`;
    }
  }
  return reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value);
}

function getFunctionBase(value, constructor, tag) {
  let source = '';
  try { source = Function.prototype.toString.call(value); } catch { /* revoked proxy */ }
  if (source.startsWith('class') && source.endsWith('}')) {
    const name = (Object.hasOwn(value, 'name') && value.name) || '(anonymous)';
    let base = `class ${name}`;
    if (constructor !== 'Function' && constructor !== null) base += ` [${constructor}]`;
    if (tag !== '' && constructor !== tag) base += ` [${tag}]`;
    if (constructor !== null) {
      const superName = Object.getPrototypeOf(value).name;
      if (superName) base += ` extends ${superName}`;
    } else {
      base += ' extends [null prototype]';
    }
    return `[${base}]`;
  }
  let type = 'Function';
  const proto = Object.getPrototypeOf(value);
  if (proto === GeneratorFunctionProto) type = 'GeneratorFunction';
  else if (proto === AsyncFunctionProto) type = 'AsyncFunction';
  else if (proto === AsyncGeneratorFunctionProto) type = 'AsyncGeneratorFunction';
  let base = `[${type}`;
  if (constructor === null) base += ' (null prototype)';
  base += value.name === '' || typeof value.name !== 'string' ? ' (anonymous)' : `: ${value.name}`;
  base += ']';
  if (constructor !== type && constructor !== null) base += ` ${constructor}`;
  if (tag !== '' && constructor !== tag) base += ` [${tag}]`;
  return base;
}

function formatError(err, constructor, ctx, keys) {
  let stack;
  try { stack = err.stack; } catch { stack = undefined; }
  if (typeof stack !== 'string' || stack === '') {
    try { stack = Error.prototype.toString.call(err); } catch { stack = '[object Error]'; }
  }
  // name/message/stack shown by the stack itself are not repeated as keys.
  for (const name of ['name', 'message', 'stack']) {
    const i = keys.indexOf(name);
    if (i !== -1 && (typeof err[name] !== 'string' || stack.includes(err[name]))) keys.splice(i, 1);
  }
  if (Object.hasOwn(err, 'cause') && !keys.includes('cause')) keys.push('cause');
  if (Object.hasOwn(err, 'errors') && Array.isArray(err.errors) && !keys.includes('errors')) keys.push('errors');
  if (constructor === null) stack = `[${stack.split('\n')[0]}: null prototype]${stack.slice(stack.split('\n')[0].length)}`;
  // No stack frames: show it in brackets, as Node.
  if (!stack.includes('\n    at')) stack = `[${stack}]`;
  if (ctx.indentationLvl !== 0) stack = stack.replace(/\n/g, `\n${' '.repeat(ctx.indentationLvl)}`);
  return stack;
}

function remainingText(n) {
  return `... ${n} more item${n > 1 ? 's' : ''}`;
}

function formatArray(ctx, value, recurseTimes) {
  const len = value.length;
  const max = Math.min(Math.max(0, ctx.maxArrayLength), len);
  const output = [];
  let i = 0;
  for (; i < len && output.length < max; i++) {
    if (!Object.hasOwn(value, i)) {
      // A run of holes: find the next own index without walking a huge sparse array.
      let next = len;
      for (const k of Object.keys(value)) {
        if (!INDEX_KEY.test(k)) continue;
        const n = +k;
        if (n > i) { next = n; break; }
      }
      const holes = next - i;
      output.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
      i = next - 1;
      continue;
    }
    output.push(formatProperty(ctx, value, recurseTimes, i, kArrayType));
  }
  if (i < len) output.push(remainingText(len - i));
  return output;
}

function formatTypedArray(ctx, value, recurseTimes) {
  const len = value.length;
  const max = Math.min(Math.max(0, ctx.maxArrayLength), len);
  const output = [];
  for (let i = 0; i < max; i++) {
    output.push(typeof value[i] === 'bigint' ? `${value[i]}n` : formatNumber(value[i]));
  }
  if (len > max) output.push(remainingText(len - max));
  if (ctx.showHidden) {
    ctx.indentationLvl += 2;
    for (const key of ['BYTES_PER_ELEMENT', 'length', 'byteLength', 'byteOffset', 'buffer']) {
      output.push(`[${key}]: ${formatValue(ctx, value[key], recurseTimes, true)}`);
    }
    ctx.indentationLvl -= 2;
  }
  return output;
}

function formatArrayBuffer(ctx, value) {
  const bytes = new Uint8Array(value);
  const n = Math.min(ctx.maxArrayLength, bytes.length);
  let hex = '';
  for (let i = 0; i < n; i++) hex += (i === 0 ? '' : ' ') + bytes[i].toString(16).padStart(2, '0');
  const remaining = bytes.length - n;
  if (remaining > 0) hex += ` ... ${remaining} more byte${remaining > 1 ? 's' : ''}`;
  return [`[Uint8Contents]: <${hex}>`];
}

function formatSet(ctx, value, recurseTimes) {
  const output = [];
  ctx.indentationLvl += 2;
  for (const v of Set.prototype.values.call(value)) {
    if (output.length >= ctx.maxArrayLength) { output.push(remainingText(setSize.call(value) - output.length)); break; }
    output.push(formatValue(ctx, v, recurseTimes));
  }
  ctx.indentationLvl -= 2;
  return output;
}

function formatMap(ctx, value, recurseTimes) {
  const output = [];
  ctx.indentationLvl += 2;
  for (const [k, v] of Map.prototype.entries.call(value)) {
    if (output.length >= ctx.maxArrayLength) { output.push(remainingText(mapSize.call(value) - output.length)); break; }
    output.push(`${formatValue(ctx, k, recurseTimes)} => ${formatValue(ctx, v, recurseTimes)}`);
  }
  ctx.indentationLvl -= 2;
  return output;
}

const KEY_IDENT = /^[a-zA-Z_][a-zA-Z_0-9]*$/;

function formatProperty(ctx, value, recurseTimes, key, type) {
  let str;
  const desc = Object.getOwnPropertyDescriptor(value, key) || { value: value[key], enumerable: true };
  if (desc.value !== undefined) {
    ctx.indentationLvl += 2;
    str = formatValue(ctx, desc.value, recurseTimes);
    ctx.indentationLvl -= 2;
  } else if (desc.get !== undefined) {
    str = desc.set !== undefined ? '[Getter/Setter]' : '[Getter]';
  } else if (desc.set !== undefined) {
    str = '[Setter]';
  } else {
    str = 'undefined';
  }
  if (type === kArrayType) return str;
  let name;
  if (typeof key === 'symbol') name = `[${key.toString()}]`;
  else if (key === '__proto__') name = "['__proto__']";
  else if (desc.enumerable === false) name = `[${key}]`;
  else if (KEY_IDENT.test(key)) name = key;
  else name = strEscape(key);
  return `${name}: ${str}`;
}

// ---------------------------------------------------------------------------------------------
// Line breaking, as Node's reduceToSingleString / groupArrayElements.

function isBelowBreakLength(ctx, output, start, base) {
  let totalLength = output.length + start;
  if (totalLength + output.length > ctx.breakLength) return false;
  for (let i = 0; i < output.length; i++) {
    totalLength += output[i].length;
    if (totalLength > ctx.breakLength) return false;
  }
  return base === '' || !base.includes('\n');
}

function groupArrayElements(ctx, output, value) {
  let totalLength = 0;
  let maxLength = 0;
  let outputLength = output.length;
  if (ctx.maxArrayLength < output.length) outputLength--; // leave "... more items" alone
  const separatorSpace = 2;
  const dataLen = new Array(outputLength);
  for (let i = 0; i < outputLength; i++) {
    const len = output[i].length;
    dataLen[i] = len;
    totalLength += len + separatorSpace;
    if (maxLength < len) maxLength = len;
  }
  const actualMax = maxLength + separatorSpace;
  if (actualMax * 3 + ctx.indentationLvl < ctx.breakLength &&
      (totalLength / actualMax > 5 || maxLength <= 6)) {
    const averageBias = Math.sqrt(actualMax - totalLength / output.length);
    const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
    const columns = Math.min(
      Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
      Math.floor((ctx.breakLength - ctx.indentationLvl) / actualMax),
      ctx.compact * 4,
      15,
    );
    if (columns <= 1) return output;
    const tmp = [];
    const maxLineLength = [];
    for (let i = 0; i < columns; i++) {
      let lineLength = 0;
      for (let j = i; j < output.length; j += columns) {
        if (dataLen[j] > lineLength) lineLength = dataLen[j];
      }
      maxLineLength.push(lineLength + separatorSpace);
    }
    let padStart = true;
    if (value !== undefined) {
      for (let i = 0; i < output.length; i++) {
        if (typeof value[i] !== 'number' && typeof value[i] !== 'bigint') { padStart = false; break; }
      }
    }
    for (let i = 0; i < outputLength; i += columns) {
      const max = Math.min(i + columns, outputLength);
      let str = '';
      let j = i;
      for (; j < max - 1; j++) {
        const cell = `${output[j]}, `;
        str += padStart ? cell.padStart(maxLineLength[j - i], ' ') : cell.padEnd(maxLineLength[j - i], ' ');
      }
      str += padStart ? output[j].padStart(maxLineLength[j - i] - separatorSpace, ' ') : output[j];
      tmp.push(str);
    }
    if (ctx.maxArrayLength < output.length) tmp.push(output[outputLength]);
    output = tmp;
  }
  return output;
}

function reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value) {
  const entries = output.length;
  if (extrasType === kArrayExtrasType && entries > 6) output = groupArrayElements(ctx, output, value);
  // ctx.currentDepth is the depth of the innermost object formatted so far; entries of up to
  // `compact` inner levels are combined on one line when they fit.
  if (ctx.currentDepth - recurseTimes < ctx.compact && entries === output.length) {
    const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
    if (isBelowBreakLength(ctx, output, start, base)) {
      const joined = output.join(', ');
      if (!joined.includes('\n')) {
        return `${base ? `${base} ` : ''}${braces[0]} ${joined} ${braces[1]}`;
      }
    }
  }
  const indentation = `\n${' '.repeat(ctx.indentationLvl)}`;
  return `${base ? `${base} ` : ''}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
}

// ---------------------------------------------------------------------------------------------
// util.format

let builtInNames;
function hasBuiltInToString(value) {
  if (typeof value.toString !== 'function') return true;
  if (Object.hasOwn(value, 'toString')) return false;
  let pointer = value;
  do {
    pointer = Object.getPrototypeOf(pointer);
  } while (pointer !== null && !Object.hasOwn(pointer, 'toString'));
  if (pointer === null) return true;
  const desc = Object.getOwnPropertyDescriptor(pointer, 'constructor');
  if (builtInNames === undefined) {
    builtInNames = new Set(Object.getOwnPropertyNames(globalThis).filter((n) => /^[A-Z][a-zA-Z0-9]+$/.test(n)));
  }
  return desc !== undefined && typeof desc.value === 'function' && builtInNames.has(desc.value.name);
}

function tryStringify(value) {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (err instanceof TypeError && /circular/i.test(err.message)) return '[Circular]';
    throw err;
  }
}

// Node's util.format(): printf-like specifiers in a leading string, the rest joined by spaces.
export function format(args) {
  const first = args[0];
  let a = 0;
  let str = '';
  let join = '';
  if (typeof first === 'string') {
    if (args.length === 1) return first;
    let tempStr;
    let lastPos = 0;
    for (let i = 0; i < first.length - 1; i++) {
      if (first.charCodeAt(i) !== 37) continue; // '%'
      const nextChar = first.charCodeAt(++i);
      if (a + 1 !== args.length) {
        switch (nextChar) {
          case 115: { // 's'
            const arg = args[++a];
            if (typeof arg === 'number') tempStr = formatNumber(arg);
            else if (typeof arg === 'bigint') tempStr = `${arg}n`;
            else if (typeof arg !== 'object' || arg === null || !hasBuiltInToString(arg)) tempStr = String(arg);
            else tempStr = inspect(arg, { depth: 0, compact: 3 });
            break;
          }
          case 106: tempStr = tryStringify(args[++a]); break; // 'j'
          case 100: { // 'd'
            const n = args[++a];
            if (typeof n === 'bigint') tempStr = `${n}n`;
            else if (typeof n === 'symbol') tempStr = 'NaN';
            else tempStr = formatNumber(Number(n));
            break;
          }
          case 79: tempStr = inspect(args[++a]); break; // 'O'
          case 111: tempStr = inspect(args[++a], { showHidden: true, depth: 4 }); break; // 'o'
          case 105: { // 'i'
            const n = args[++a];
            if (typeof n === 'bigint') tempStr = `${n}n`;
            else if (typeof n === 'symbol') tempStr = 'NaN';
            else tempStr = formatNumber(Number.parseInt(n));
            break;
          }
          case 102: { // 'f'
            const n = args[++a];
            tempStr = typeof n === 'symbol' ? 'NaN' : formatNumber(Number.parseFloat(n));
            break;
          }
          case 99: a += 1; tempStr = ''; break; // 'c': CSS, consumed and dropped
          case 37: str += first.slice(lastPos, i); lastPos = i + 1; continue; // '%%'
          default: continue; // not a specifier
        }
        if (lastPos !== i - 1) str += first.slice(lastPos, i - 1);
        str += tempStr;
        lastPos = i + 1;
      } else if (nextChar === 37) {
        str += first.slice(lastPos, i);
        lastPos = i + 1;
      }
    }
    if (lastPos !== 0) {
      a++;
      join = ' ';
      if (lastPos < first.length) str += first.slice(lastPos);
    }
  }
  while (a < args.length) {
    const value = args[a];
    str += join;
    str += typeof value !== 'string' ? inspect(value) : value;
    join = ' ';
    a++;
  }
  return str;
}

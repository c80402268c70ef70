// bench/run codemode, the WebSocket side: executions through `isolane executor`'s /v1/session,
// as a platform's client would send them (one socket, tool calls answered by the client).
//
//   node ws_bench.mjs URL [--scenario one|tools10|all] [--n 500] [--seconds 3] [--concurrency C]
//
// Prints one JSON object per line, like codemode_bench and ivm_baseline.mjs.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

const args = process.argv.slice(2);
const url = args[0];
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const scenarioArg = option('scenario', 'all');
const n = Number(option('n', 500));
const seconds = Number(option('seconds', 3));
const concurrency = Number(option('concurrency', 2 * os.availableParallelism()));

const CODE = {
  one: 'async () => 1',
  tools10: 'async () => { let s = 0; for (let i = 0; i < 10; i++) s += await tools.math.add({ a: i, b: 1 }); return s }',
};
const EXPECTED = { one: 1, tools10: 55 };

const ws = new WebSocket(url);
await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });

let nextId = 1;
const waiting = new Map();  // id -> { resolve, scenario }
ws.on('message', (data) => {
  const m = JSON.parse(data);
  if (m.type === 'tool_call') {
    ws.send(JSON.stringify({ type: 'tool_result', id: m.id, call: m.call, result: m.args.a + m.args.b }));
    return;
  }
  const w = waiting.get(m.id);
  waiting.delete(m.id);
  if (m.type !== 'result' || m.result !== EXPECTED[w.scenario]) {
    console.error(`ws_bench: ${w.scenario} gave ${JSON.stringify(m)}`);
    process.exit(1);
  }
  w.resolve();
});

function execute(scenario) {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, { resolve, scenario });
    const message = { type: 'execute', id, code: CODE[scenario] };
    if (scenario === 'tools10') message.tools = { math: ['add'] };
    ws.send(JSON.stringify(message));
  });
}

const percentile = (v, p) => v.sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(p * v.length))];

for (const scenario of ['one', 'tools10']) {
  if (scenarioArg !== 'all' && scenarioArg !== scenario) continue;
  const ms = [];
  for (let i = 0; i < n + 50; i++) {
    const start = performance.now();
    await execute(scenario);
    if (i >= 50) ms.push(performance.now() - start);
  }
  console.log(JSON.stringify({ engine: 'isolane', via: 'websocket', scenario, p50_ms: +percentile(ms, 0.5).toFixed(3), p99_ms: +percentile(ms, 0.99).toFixed(3), n }));
  let done = 0;
  let stop = false;
  const start = performance.now();
  const loop = async () => { while (!stop) { await execute(scenario); done++; } };
  const loops = Array.from({ length: concurrency }, loop);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const counted = done;
  const elapsed = (performance.now() - start) / 1000;
  stop = true;
  await Promise.all(loops);
  console.log(JSON.stringify({ engine: 'isolane', via: 'websocket', scenario, execs_per_s: +(counted / elapsed).toFixed(1), concurrency, seconds }));
}
ws.close();

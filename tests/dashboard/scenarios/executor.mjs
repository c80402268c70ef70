// The dashboard of `isolane executor` (code mode), on its own port. In the real mode two workers
// run executions from three WebSocket sessions, each calling a tool (answered by the test) and
// every fifth one throwing, so that outcomes are more than "ok". The page must show executions and
// tool calls growing and agreeing with /metrics (in total and by outcome), the GUEST_ERROR outcome,
// the rates, latencies and queue depth as numbers, 1..2 worker rows in a known state, and recent
// events; then say "disconnected, retrying" as the executor stops. With --fake the same checks run
// against tools/dev/dashboard-fake.mjs, plus malformed snapshots.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { compareCounter, gauge, labelValues, metricSum, rateBetween, scrape }
  from '../lib/metrics.mjs';
import { checkDisconnect, checkGarbage, checkPageHygiene, openPage, readPage, waitUpdates }
  from '../lib/page.mjs';
import { cleanEnv, sleep, start, stop, waitReady } from '../lib/processes.mjs';
import { check, current, setPart } from '../lib/report.mjs';

const EXEC_WORKERS = 2;
const EXECUTOR_STATES = ['starting', 'idle', 'busy', 'draining'];

// ---- load: concurrent executions, each with a tool call
function executorLoad(port) {
  let running = true;
  let done = 0;
  const t0 = Date.now();
  const session = async (n) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/session`);
    await new Promise((ok, ko) => {
      ws.onopen = ok;
      ws.onerror = () => ko(new Error('ws error'));
    });
    let id = 0;
    while (running) {
      id += 1;
      // Every fifth one throws, so that the outcomes are more than "ok".
      const code = id % 5 === 0 ? 'async () => { throw new Error("on purpose") }'
                                : 'async () => (await tools.math.add({ a: 2, b: 3 })) * 2';
      await new Promise((settled) => {
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          if (m.type === 'tool_call') {
            setTimeout(() => ws.send(JSON.stringify(
                { type: 'tool_result', id: m.id, call: m.call, result: m.args.a + m.args.b })), 10);
          } else {
            done += 1;
            settled();
          }
        };
        ws.send(JSON.stringify(
            { type: 'execute', id: `${n}-${id}`, code, tools: { math: ['add'] } }));
      });
      await sleep(30);
    }
    ws.close();
  };
  const sessions = [0, 1, 2].map((n) => session(n).catch((e) => { if (running) throw e; }));
  return {
    rate: () => done / ((Date.now() - t0) / 1000),
    stop: async () => { running = false; await Promise.all(sessions); },
  };
}

export async function testExecutor(browser, { fake, build, fakeScript, tmp }) {
  setPart(fake ? 'fake executor' : 'executor');
  console.log(`# ${current}`);
  let proc, load = null;
  if (fake) {
    proc = await start(process.execPath, [fakeScript, '--kind', 'executor'],
                       { env: process.env, listening: 'executor listening' });
  } else {
    const config = join(tmp, 'executor.toml');
    writeFileSync(config, `[executor]\nworkers = ${EXEC_WORKERS}\nshutdown_drain_ms = 2000\n`);
    proc = await start(join(build, 'isolane'),
                       ['executor', '--listen', '127.0.0.1:0', '--config', config],
                       { env: cleanEnv(), listening: 'executor listening' });
  }
  const port = proc.line.port;
  const base = `http://127.0.0.1:${port}`;
  if (!fake) {
    await waitReady(base);
    load = executorLoad(port);
    await sleep(1000);
  }

  const pageInfo = await openPage(browser, base);
  const { page } = pageInfo;
  await waitUpdates(page, 2);
  const a = await readPage(page);
  await waitUpdates(page, a.updates + 2);
  const b = await readPage(page);
  const metrics = await scrape(base);
  const interval = b.interval || 1;

  check(b.kind === 'executor', `the page shows an executor (kind ${b.kind})`);
  check(b.connection === 'open', `the connection is open (${b.connection})`);
  check(b.time > a.time, `the snapshot time moved (${a.time} -> ${b.time})`);
  check(b.values.status === 'ready', `the header says ready (${b.values.status})`);
  for (const key of ['executions.total', 'tool_calls.total']) {
    check(b.values[key] > a.values[key], `${key} grows (${a.values[key]} -> ${b.values[key]})`);
  }
  const execRate = Math.max(rateBetween(a, b, 'executions.total'), load ? load.rate() : 0);
  compareCounter('executions.total', b.values['executions.total'],
                 metricSum(metrics, 'isolane_executions_total'), execRate, interval);
  for (const outcome of labelValues(metrics, 'isolane_executions_total', 'outcome')) {
    const key = `executions.outcome.${outcome}.total`;
    compareCounter(key, b.values[key], metricSum(metrics, 'isolane_executions_total', { outcome }),
                   execRate, interval, { absent: 0 });
  }
  if (!fake) {
    check((b.values['executions.outcome.GUEST_ERROR.total'] ?? 0) > 0,
          'the GUEST_ERROR outcome is shown');
  }
  compareCounter('tool_calls.total', b.values['tool_calls.total'],
                 metricSum(metrics, 'isolane_exec_tool_call_seconds_count'),
                 Math.max(rateBetween(a, b, 'tool_calls.total'), load ? load.rate() : 0), interval);
  for (const k of ['executions.per_s', 'tool_calls.per_s', 'exec.queue.depth']) {
    gauge(k, b.values[k]);
  }
  gauge('isolane_exec_queue_depth', metricSum(metrics, 'isolane_exec_queue_depth'));
  for (const k of ['executions.p50_s', 'executions.p99_s', 'tool_calls.p50_s',
                   'tool_calls.p99_s']) {
    check(b.values[k] === null || b.values[k] >= 0, `${k} is empty or ≥ 0 (${b.values[k]})`);
  }
  const max = fake ? 2 : EXEC_WORKERS;
  check(b.workers >= 1 && b.workers <= max, `1..${max} worker rows (${b.workers})`);
  for (const [k, v] of Object.entries(b.values)) {
    if (/^worker\.[^.]+\.state$/.test(k)) {
      check(EXECUTOR_STATES.includes(v), `${k} is a known state (${v})`);
    }
  }
  check(b.events > 0, `recent events are listed (${b.events})`);

  mkdirSync(join(build, 'dashboard'), { recursive: true });
  const shot = join(build, 'dashboard', fake ? 'fake-executor.png' : 'executor.png');
  await page.screenshot({ path: shot });
  console.log(`  screenshot ${shot}`);
  console.log(`  page: ${b.updates} updates; ${b.values['executions.total']} executions, ` +
              `${b.values['tool_calls.total']} tool calls`);

  if (load) await load.stop();
  if (fake) await checkGarbage(page, base, 'executor');
  checkPageHygiene(pageInfo, [a, b]);
  await checkDisconnect(page, () => stop(proc.child));
  await page.close();
}

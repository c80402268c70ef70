// The live dashboard in a real browser: headless Chromium (Debian's `chromium`, driven by
// puppeteer-core over the DevTools protocol) opens /dashboard of a real server under load and of
// a real `isolane executor` running executions with tool calls, and checks that the figures on the
// page change between two updates and agree with /metrics fetched right after reading the page.
//
//   node tests/dashboard/dashboard_browser_test.mjs BUILD_DIR [--fake] [--only server|executor]
//
// The real mode runs BUILD_DIR/isolane. --fake runs tools/dev/dashboard-fake.mjs instead (the
// page with simulated snapshots and a /metrics that follows them), to try the page without the
// server. Screenshots: BUILD_DIR/dashboard/server.png and executor.png (fake-server.png and
// fake-executor.png with --fake). Exit status 0 when every check holds, 1 with the reasons.
//
// What is compared with /metrics, read after the page: a counter on the page (requests per app,
// sheds by reason, executions by outcome, tool calls) is at most what /metrics says, and behind
// it by no more than what one update interval of the measured rate adds (rate × (interval +
// 0.5 s) + 5); gauges are present on both and ≥ 0. Their exact values cannot be compared: they
// move between the snapshot and the scrape.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import puppeteer from 'puppeteer-core';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { fake: { type: 'boolean', default: false }, only: { type: 'string' } },
});
if (positionals.length !== 1) {
  console.error('usage: dashboard_browser_test.mjs BUILD_DIR [--fake] [--only server|executor]');
  process.exit(2);
}
const BUILD = resolve(positionals[0]);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const FAKE = join(ROOT, 'tools/dev/dashboard-fake.mjs');
const POOL_SIZE = 2;
const EXEC_WORKERS = 2;
const HOSTILE_APP = '<img src=x onerror=window.__pwned=1>';
const SERVER_STATES = ['starting', 'serving', 'wedged', 'draining', 'quarantined', 'cooling-down',
                       'empty'];
const EXECUTOR_STATES = ['starting', 'idle', 'busy', 'draining'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const failures = [];
let current = '';
function check(ok, what) {
  if (ok) return true;
  failures.push(`${current}: ${what}`);
  console.error(`  FAIL ${what}`);
  return false;
}
class Fatal extends Error {}
const fatal = (what) => { throw new Fatal(`${current}: ${what}`); };

// ---- processes: the server, the executor or the fake, each learnt from its "listening" line
const children = [];
function start(cmd, args, { env, listening }) {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  const log = [];
  let buffered = '';
  return new Promise((resolveStart, rejectStart) => {
    const timer = setTimeout(() => rejectStart(new Fatal(`${cmd} printed no "listening" line in ` +
        `30 s; its stderr:\n${log.slice(-20).join('\n')}`)), 30000);
    child.stderr.on('data', (chunk) => {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        log.push(line);
        if (log.length > 200) log.shift();
        let j;
        try { j = JSON.parse(line); } catch { continue; }
        if (j.msg === listening) {
          clearTimeout(timer);
          resolveStart({ child, log, line: j });
        }
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      rejectStart(new Fatal(`${cmd} exited (${code ?? signal}) before listening; its stderr:\n` +
                            log.slice(-20).join('\n')));
    });
  });
}
function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10000);
    child.once('exit', () => { clearTimeout(kill); r(); });
    child.kill('SIGTERM');
  });
}
// Stopped from outside (ctest's timeout, ^C): the server or executor stops with it (puppeteer
// closes Chromium on these signals itself).
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of children) c.kill('SIGTERM');
    process.exit(1);
  });
}
function cleanEnv() {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('ISOLANE_')) delete env[k];
  return env;
}
async function waitReady(base) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    try { if ((await fetch(`${base}/readyz`)).status === 200) return; } catch {}
    await sleep(100);
  }
  fatal(`${base}/readyz did not answer 200 within 30 s`);
}

// ---- /metrics: the Prometheus text format, label values with their escapes
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{)?/.exec(line);
    if (!m) continue;
    const labels = {};
    let i = m[0].length;
    if (m[2]) {
      while (line[i] !== '}') {
        const eq = line.indexOf('=', i);
        const name = line.slice(i, eq).trim();
        i = eq + 2;  // past ="
        let v = '';
        while (line[i] !== '"') {
          if (line[i] === '\\') { i++; v += line[i] === 'n' ? '\n' : line[i]; } else v += line[i];
          i++;
        }
        labels[name] = v;
        i++;
        if (line[i] === ',') i++;
      }
      i++;
    }
    samples.push({ name: m[1], labels, value: Number(line.slice(i).trim().split(/\s+/)[0]) });
  }
  return samples;
}
function metricSum(samples, name, where = {}) {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).some(([k, v]) => s.labels[k] !== v)) continue;
    found = true;
    sum += s.value;
  }
  return found ? sum : null;
}
const labelValues = (samples, name, label) =>
  [...new Set(samples.filter((s) => s.name === name).map((s) => s.labels[label]))];
async function scrape(base) {
  const r = await fetch(`${base}/metrics`);
  if (r.status !== 200) fatal(`/metrics answered ${r.status}`);
  return parseMetrics(await r.text());
}

// ---- load: concurrent loops of fetches (server) or of executions with a tool call (executor)
function serverLoad(url) {
  const counts = new Map();
  let running = true;
  const t0 = Date.now();
  const loop = async (app, path, pauseMs) => {
    while (running) {
      try {
        const r = await fetch(url + path);
        await r.arrayBuffer();
        counts.set(app, (counts.get(app) ?? 0) + 1);
        // A shed answer comes at once: pause so that a full pool is not a busy loop.
        await sleep(r.status === 503 ? 100 : pauseMs);
      } catch {
        await sleep(100);
      }
    }
  };
  const loops = [];
  for (let i = 0; i < 4; i++) loops.push(loop('hello', '/hello/x', 20));
  // More slow requests than max_inflight (24) can hold: in flight stays up, and some are shed.
  for (let i = 0; i < 28; i++) loops.push(loop('slow', '/slow?ms=300', 0));
  loops.push(loop(HOSTILE_APP, '/counter', 200));
  return {
    rate: (app) => (counts.get(app) ?? 0) / ((Date.now() - t0) / 1000),
    stop: async () => { running = false; await Promise.all(loops); },
  };
}
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

// ---- the page
async function readPage(page) {
  return page.evaluate(() => {
    const values = {};
    const texts = {};
    for (const e of document.querySelectorAll('[data-k]')) {
      const v = e.dataset.v;
      values[e.dataset.k] = v === undefined || v === '' ? null
                          : e.dataset.t === 's' ? v : Number(v);
      texts[e.dataset.k] = e.textContent;
    }
    const rows = (kind) =>
        document.querySelectorAll(`main:not([hidden]) tr[data-row="${kind}"]`).length;
    return {
      updates: Number(document.body.dataset.updates),
      rejected: Number(document.body.dataset.rejected),
      time: Number(document.body.dataset.snapshotTime),
      interval: Number(document.body.dataset.interval),
      kind: document.body.dataset.kind,
      connection: document.body.dataset.connection,
      values, texts,
      workers: rows('worker'), apps: rows('app'), events: rows('event'),
      images: document.images.length, pwned: window.__pwned !== undefined,
    };
  });
}
const waitUpdates = (page, n, ms = 15000) =>
  page.waitForFunction((k) => Number(document.body.dataset.updates) >= k, { timeout: ms }, n)
      .catch(() => fatal(`the page did not reach ${n} updates within ${ms / 1000} s`));

// A counter on the page against the same counter in /metrics read just after. A label value
// that first counted after the snapshot (a new shed reason, a new outcome) is absent from the
// page: `absent: 0` takes it as 0 there.
function compareCounter(what, onPage, inMetrics, rate, interval, { absent } = {}) {
  const allowed = rate * (interval + 0.5) + 5;
  if (onPage === undefined && absent !== undefined) onPage = absent;
  if (!check(typeof onPage === 'number', `${what} shown on the page (got ${onPage})`)) return;
  if (!check(inMetrics !== null, `${what} present in /metrics`)) return;
  check(onPage <= inMetrics && inMetrics - onPage <= allowed,
        `${what}: page ${onPage}, /metrics ${inMetrics}; /metrics must be ahead by 0..` +
        `${allowed.toFixed(1)} (rate ${rate.toFixed(1)}/s)`);
}
const gauge = (what, v) =>
    check(typeof v === 'number' && v >= 0, `${what} is a number ≥ 0 (got ${v})`);
const rateBetween = (a, b, key) =>
  Math.max(0, ((b.values[key] ?? 0) - (a.values[key] ?? 0)) / Math.max(0.5, b.time - a.time));

async function openPage(browser, base) {
  const page = await browser.newPage();
  const origin = new URL(base).origin;
  const offsite = [];
  const errors = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol === 'data:') return;
    if (u.origin !== origin || !['/dashboard', '/dashboard/events'].includes(u.pathname)) {
      offsite.push(r.url());
    }
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const r = await page.goto(`${base}/dashboard`, { waitUntil: 'domcontentloaded' });
  if (!r || r.status() !== 200) fatal(`GET /dashboard answered ${r?.status()}`);
  check((r.headers()['content-type'] ?? '').startsWith('text/html'), 'GET /dashboard is text/html');
  return { page, offsite, errors };
}
function checkPageHygiene({ offsite, errors }, reads) {
  check(offsite.length === 0,
        `the page requested nothing but /dashboard and /dashboard/events (${offsite.join(', ')})`);
  // A failed EventSource connection is logged as a console error once the server stops: only
  // errors before that are the page's.
  check(errors.length === 0, `no script error on the page (${errors.join(' | ')})`);
  for (const s of reads) {
    check(s.images === 0 && !s.pwned,
          'strings from the snapshot are shown as text, not parsed as HTML');
  }
}

// The fake sends snapshots of the wrong shape (not JSON, null, wrong types, objects whose
// String() throws): the page goes on without a script error and shows the next good one.
async function checkGarbage(page, base, kind) {
  const before = await readPage(page);
  await fetch(`${base}/fake/garbage`);
  const ok = await page.waitForFunction((t, k) =>
      Number(document.body.dataset.snapshotTime) > t && document.body.dataset.kind === k &&
      document.getElementById('conn').textContent === 'live',
      { timeout: 10000 }, before.time, kind).then(() => true, () => false);
  const after = await readPage(page);
  check(ok, `after malformed snapshots the page shows the next good one (kind ${after.kind}, ` +
            `connection ${after.connection})`);
  // Only the one that is not JSON is refused; the others show what they can.
  check(after.rejected - before.rejected === 1 && after.updates >= before.updates + 5,
        `malformed snapshots are shown as far as they go: ${after.rejected - before.rejected} ` +
        `refused (1 expected), ${after.updates - before.updates} applied (5 or more expected)`);
}

// After the process behind the page stops, the page must say that it is disconnected.
async function checkDisconnect(page, stopIt) {
  let drainingSeen = false;
  const watch = setInterval(async () => {
    try {
      const v = await page.evaluate(() =>
          document.querySelector('[data-k="status"]')?.dataset.v);
      if (v === 'draining') drainingSeen = true;
    } catch {}
  }, 100);
  await stopIt();
  const ok = await page.waitForFunction(() => document.body.dataset.connection === 'retrying',
                                        { timeout: 15000 }).then(() => true, () => false);
  clearInterval(watch);
  const text = await page.$eval('#conn', (e) => e.textContent);
  check(ok && text === 'disconnected, retrying',
        `once the server is gone the page says "disconnected, retrying" (says "${text}")`);
  return drainingSeen;
}

// ---- kind "server"
async function testServer(browser, tmp) {
  current = opts.fake ? 'fake server' : 'server';
  console.log(`# ${current}`);
  let proc, url, admin, load = null;
  if (opts.fake) {
    proc = await start(process.execPath, [FAKE, '--kind', 'server'],
                       { env: process.env, listening: 'listening' });
    admin = proc.line.admin;
  } else {
    const fixtures = join(ROOT, 'tests/fixtures/apps');
    const config = join(tmp, 'isolane.toml');
    writeFileSync(config, [
      '[server]', 'listen = "127.0.0.1:0"', 'admin_listen = "127.0.0.1:0"',
      'code_cache_dir = "off"', 'shutdown_drain_ms = 2000', '',
      '[pool]', `size = ${POOL_SIZE}`, 'max_inflight = 24', 'max_queue = 0', '',
      ...[['hello', 'hello.js', '/hello'], ['slow', 'slow.js', '/slow'],
          [HOSTILE_APP, 'counter.js', '/counter']]
          .flatMap(([name, file, route]) => ['[[app]]', `name = ${JSON.stringify(name)}`,
                   `module = ${JSON.stringify(join(fixtures, file))}`, `route = "${route}"`, '']),
    ].join('\n'));
    proc = await start(join(BUILD, 'isolane'), ['serve', '--config', config],
                       { env: cleanEnv(), listening: 'listening' });
    url = proc.line.url;
    admin = proc.line.admin;
    if (!admin || admin === 'off') fatal(`no admin listener in ${JSON.stringify(proc.line)}`);
    await waitReady(admin);
    load = serverLoad(url);
    await sleep(1000);  // the load reaches its pace before the page opens
  }

  const pageInfo = await openPage(browser, admin);
  const { page } = pageInfo;
  await waitUpdates(page, 2);
  const a = await readPage(page);
  await waitUpdates(page, a.updates + 2);
  const b = await readPage(page);
  const metrics = await scrape(admin);
  const interval = b.interval || 1;

  check(a.kind === 'server' && b.kind === 'server', `the page shows a server (kind ${b.kind})`);
  check(b.connection === 'open', `the connection is open (${b.connection})`);
  check(b.time > a.time, `the snapshot time moved (${a.time} -> ${b.time})`);
  check(b.values.status === 'ready', `the header says ready (${b.values.status})`);
  check(typeof b.values.version === 'string' && b.values.version !== '', 'the version is shown');
  check(b.values.uptime_s > a.values.uptime_s, 'the uptime moved');

  const apps = ['hello', 'slow', HOSTILE_APP];  // the fake's too
  check(b.apps === 3, `one row per configured app (${b.apps} rows)`);
  check(b.texts[`app.${HOSTILE_APP}.name`] === HOSTILE_APP,
        'an app name made of HTML shows as that text');
  for (const app of ['hello', 'slow']) {
    const key = `app.${app}.requests_total`;
    check(b.values[key] > a.values[key],
          `${key} grows under load (${a.values[key]} -> ${b.values[key]})`);
  }
  for (const app of apps) {
    const key = `app.${app}.requests_total`;
    const rate = Math.max(rateBetween(a, b, key), load ? load.rate(app) : 0);
    compareCounter(key, b.values[key], metricSum(metrics, 'isolane_requests_total', { app }), rate,
                   interval);
    const rps = b.values[`app.${app}.rps`];  // null: no request in the last interval
    check(rps === null || rps >= 0, `app.${app}.rps is empty or ≥ 0 (${rps})`);
    gauge(`app.${app}.errors_total`, b.values[`app.${app}.errors_total`]);
  }
  for (const app of ['hello', 'slow']) {
    check(b.values[`app.${app}.rps`] > 0, `app.${app}.rps > 0 under load`);
  }
  for (const reason of labelValues(metrics, 'isolane_admission_rejected_total', 'reason')) {
    const key = `shed.${reason}.total`;
    const inMetrics = metricSum(metrics, 'isolane_admission_rejected_total', { reason });
    compareCounter(key, b.values[key], inMetrics, rateBetween(a, b, key), interval, { absent: 0 });
  }
  const shed = Object.entries(b.values).filter(([k]) => /^shed\..*\.total$/.test(k))
      .reduce((sum, [, v]) => sum + (v ?? 0), 0);
  check(shed > 0, `past max_inflight some requests are shed, and the page shows it (${shed})`);
  for (const k of ['pool.inflight', 'pool.queue', 'pool.streams']) gauge(k, b.values[k]);
  gauge('isolane_pool_inflight', metricSum(metrics, 'isolane_pool_inflight'));
  gauge('isolane_queue_depth', metricSum(metrics, 'isolane_queue_depth'));
  check(Math.max(a.values['pool.inflight'], b.values['pool.inflight']) > 0,
        `requests are in flight under load (${a.values['pool.inflight']}, ` +
        `${b.values['pool.inflight']})`);

  const size = opts.fake ? 3 : POOL_SIZE;
  check(b.workers === size, `one row per worker slot: ${b.workers} rows, pool size ${size}`);
  const states = [];
  for (let slot = 0; slot < size; slot++) {
    const k = `worker.${slot}.`;
    states.push(b.values[k + 'state']);
    check(SERVER_STATES.includes(b.values[k + 'state']),
          `${k}state is a known state (${b.values[k + 'state']})`);
    for (const f of ['inflight', 'pending', 'streams', 'wedged_threads']) {
      gauge(k + f, b.values[k + f]);
    }
    gauge(`isolane_worker_inflight{slot="${slot}"}`,
          metricSum(metrics, 'isolane_worker_inflight', { slot: String(slot) }));
  }
  check(states.includes('serving'), `a worker is serving (${states.join(', ')})`);
  check(b.events > 0, `recent events are listed (${b.events})`);

  mkdirSync(join(BUILD, 'dashboard'), { recursive: true });
  const shot = join(BUILD, 'dashboard', opts.fake ? 'fake-server.png' : 'server.png');
  await page.screenshot({ path: shot });
  console.log(`  screenshot ${shot}`);
  console.log(`  page: ${b.updates} updates; hello ${b.values['app.hello.requests_total']} ` +
              `requests, in flight ${b.values['pool.inflight']}, ${shed} shed`);

  if (load) await load.stop();
  if (opts.fake) await checkGarbage(page, admin, 'server');
  checkPageHygiene(pageInfo, [a, b]);
  if (opts.fake) {
    // The fake cuts the stream and refuses it for a while (longer than the browser's own retry,
    // so EventSource gives up): the page says so, then comes back by itself.
    await fetch(`${admin}/fake/pause?ms=3000`);
    const before = (await readPage(page)).updates;
    const retrying = await page.waitForFunction(
        () => document.body.dataset.connection === 'retrying', { timeout: 5000 })
        .then(() => true, () => false);
    check(retrying, 'a refused stream shows "disconnected, retrying"');
    await waitUpdates(page, before + 1, 15000);
    const c = await readPage(page);
    check(c.connection === 'open', `the page reconnected by itself (${c.connection})`);
  }
  const draining = await checkDisconnect(page, () => stop(proc.child));
  if (!opts.fake) console.log(`  during the stop the header said draining: ${draining}`);
  await page.close();
}

// ---- kind "executor"
async function testExecutor(browser, tmp) {
  current = opts.fake ? 'fake executor' : 'executor';
  console.log(`# ${current}`);
  let proc, load = null;
  if (opts.fake) {
    proc = await start(process.execPath, [FAKE, '--kind', 'executor'],
                       { env: process.env, listening: 'executor listening' });
  } else {
    const config = join(tmp, 'executor.toml');
    writeFileSync(config, `[executor]\nworkers = ${EXEC_WORKERS}\nshutdown_drain_ms = 2000\n`);
    proc = await start(join(BUILD, 'isolane'),
                       ['executor', '--listen', '127.0.0.1:0', '--config', config],
                       { env: cleanEnv(), listening: 'executor listening' });
  }
  const port = proc.line.port;
  const base = `http://127.0.0.1:${port}`;
  if (!opts.fake) {
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
  if (!opts.fake) {
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
  const max = opts.fake ? 2 : EXEC_WORKERS;
  check(b.workers >= 1 && b.workers <= max, `1..${max} worker rows (${b.workers})`);
  for (const [k, v] of Object.entries(b.values)) {
    if (/^worker\.[^.]+\.state$/.test(k)) {
      check(EXECUTOR_STATES.includes(v), `${k} is a known state (${v})`);
    }
  }
  check(b.events > 0, `recent events are listed (${b.events})`);

  mkdirSync(join(BUILD, 'dashboard'), { recursive: true });
  const shot = join(BUILD, 'dashboard', opts.fake ? 'fake-executor.png' : 'executor.png');
  await page.screenshot({ path: shot });
  console.log(`  screenshot ${shot}`);
  console.log(`  page: ${b.updates} updates; ${b.values['executions.total']} executions, ` +
              `${b.values['tool_calls.total']} tool calls`);

  if (load) await load.stop();
  if (opts.fake) await checkGarbage(page, base, 'executor');
  checkPageHygiene(pageInfo, [a, b]);
  await checkDisconnect(page, () => stop(proc.child));
  await page.close();
}

async function main() {
  if (!existsSync(CHROMIUM)) {
    fatal(`${CHROMIUM} not found: the test needs Debian's chromium (scripts/setup.sh installs it)`);
  }
  if (!opts.fake && !existsSync(join(BUILD, 'isolane'))) {
    fatal(`${join(BUILD, 'isolane')} not found: build first`);
  }
  const tmp = mkdtempSync(join(tmpdir(), 'isolane-dashboard-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,  // the new headless mode (--headless=new)
    defaultViewport: { width: 1280, height: 800 },
    userDataDir: join(tmp, 'chromium'),
    args: [
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),  // Chromium refuses root otherwise
      '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
      '--disable-extensions', '--disable-background-networking', '--disable-component-update',
    ],
  });
  try {
    // Each part on its own: a server part that fails still lets the executor's run.
    for (const [name, part] of [['server', testServer], ['executor', testExecutor]]) {
      if (opts.only && opts.only !== name) continue;
      try {
        await part(browser, tmp);
      } catch (e) {
        failures.push(e instanceof Fatal ? e.message : e.stack ?? String(e));
        console.error(`  FAIL ${failures.at(-1)}`);
      }
      await Promise.all(children.splice(0).map(stop));
    }
  } finally {
    await browser.close().catch(() => {});
    await Promise.all(children.map(stop));
    rmSync(tmp, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (e) {
  failures.push(e instanceof Fatal ? e.message : e.stack ?? String(e));
  await Promise.all(children.map(stop));
}
if (failures.length) {
  console.error(
      `dashboard_browser_test: ${failures.length} failure(s):\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('dashboard_browser_test: ok');

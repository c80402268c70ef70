// A stand-in for isolane's admin listener, for developing the dashboard page without the server:
// serves src/obs/dashboard/dashboard.html at /dashboard (read again on every request, so a reload
// shows an edit), a changing snapshot stream at /dashboard/events and the matching /metrics.
// Development only; the real page is served by the server and by `isolane executor`.
//
//   node tools/dev/dashboard-fake.mjs [--kind server|executor] [--port 0] [--interval-ms 1000]
//
// Like the real binaries it writes one JSON line to stderr once it listens: for --kind server
// {"msg":"listening","url":…,"admin":…}, for --kind executor {"msg":"executor listening",
// "host":…,"port":…}. The state is simulated: counters grow a little every 100 ms, so /metrics,
// read between two snapshots, is ahead of the last snapshot by at most one interval of growth.
// One app's name is HTML, to show that the page treats names as text. GET /fake/pause?ms=N ends
// the open streams and answers /dashboard/events with 503 for N ms (the page must say it is
// disconnected and come back by itself). GET /fake/garbage sends snapshots of the wrong shape.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    kind: { type: 'string', default: 'server' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'interval-ms': { type: 'string', default: '1000' },
    html: {
      type: 'string',
      default: join(dirname(fileURLToPath(import.meta.url)), '../../src/obs/dashboard',
                    'dashboard.html'),
    },
  },
});
if (opts.kind !== 'server' && opts.kind !== 'executor') {
  console.error('--kind is server or executor');
  process.exit(2);
}
const intervalMs = Number(opts['interval-ms']);
const started = Date.now();
const now = () => Date.now() / 1000;
const rand = (a, b) => a + Math.random() * (b - a);
const pick = (xs) => xs[Math.floor(Math.random() * xs.length)];
let pid = 40000;

// ---- simulated state
const events = [];
function event(kind, slot, p, detail) {
  events.push({ time: now(), kind, slot, pid: p, detail });
  if (events.length > 100) events.shift();
}

const apps = [
  { app: 'hello', rate: 180, errRate: 0.2, lat: 0.0012 },
  { app: 'slow', rate: 25, errRate: 0, lat: 0.3 },
  { app: '<img src=x onerror=window.__pwned=1>', rate: 6, errRate: 0.5, lat: 0.004 },
].map((a) => ({ ...a, requests: 0, errors: 0, window: 0, lastWindow: 0 }));
const sheds = new Map([['queue-full', 0], ['overloaded', 0], ['queue-timeout', 0]]);
const shedWindow = new Map();
const workers = [0, 1, 2].map((slot) => ({
  slot, pid: ++pid, lane: slot < 2 ? 'short' : 'streaming', state: 'starting', inflight: 0,
  pending: 0, streams: 0, wedged_threads: 0, longest_turn_s: 0, rss_bytes: 60e6,
  heap_used_bytes: 8e6, isolates: 0,
}));
if (opts.kind === 'server') {
  for (const w of workers) event('spawn', w.slot, w.pid, 'worker started');
}
let queue = 0;

const exec = {
  outcomes: new Map([['ok', 0], ['GUEST_ERROR', 0], ['TIMEOUT', 0]]),
  window: 0, toolCalls: 0, toolWindow: 0, queue: 0,
  workers: [0, 1].map((id) =>
    ({ id, pid: ++pid, state: 'starting', executions: 0, rss_bytes: 50e6 })),
};
if (opts.kind === 'executor') {
  for (const w of exec.workers) event('spawn', null, w.pid, 'worker started');
}

function tick() {
  const dt = 0.1;
  const t = (Date.now() - started) / 1000;
  if (opts.kind === 'server') {
    for (const a of apps) {
      const n = Math.round(a.rate * dt * rand(0.5, 1.5) * (1 + 0.5 * Math.sin(t / 7)));
      a.requests += n;
      a.window += n;
      if (Math.random() < a.errRate * dt) a.errors += 1, a.requests += 1, a.window += 1;
    }
    if (Math.random() < 0.3) {
      const r = pick([...sheds.keys()]);
      sheds.set(r, sheds.get(r) + 1);
      shedWindow.set(r, (shedWindow.get(r) ?? 0) + 1);
    }
    queue = Math.max(0, Math.round(queue + rand(-2, 2)));
    for (const w of workers) {
      if (w.state === 'starting' && t > 1.5 && !(w.slot === 1 && t > 3)) {  // slot 1: below
        w.state = 'serving';
        event('ready', w.slot, w.pid, 'worker ready');
      }
      const serving = w.state === 'serving' || w.state === 'wedged';
      w.inflight = serving ? Math.max(0, Math.round(w.inflight + rand(-3, 3.2))) : 0;
      w.pending = serving ? Math.min(w.inflight, Math.round(rand(0, 3))) : 0;
      w.streams = serving && w.lane === 'streaming' ? Math.round(rand(0, 4)) : 0;
      w.rss_bytes = Math.round(Math.max(40e6, w.rss_bytes + rand(-1e6, 1.1e6)));
      w.heap_used_bytes = Math.round(rand(6e6, 12e6));
      w.isolates = serving ? 3 : 0;
      w.longest_turn_s = serving ? rand(0, 0.02) : 0;
      w.wedged_threads = w.state === 'wedged' ? 1 : 0;
    }
    // Every ~15 s slot 1 goes through trouble, so that every badge shows up now and then.
    const w = workers[1];
    const phase = Math.floor(t) % 15;
    const next = phase < 9 ? 'serving' : phase < 10 ? 'wedged' : phase < 11 ? 'draining'
               : phase < 12 ? 'quarantined' : phase < 13 ? 'cooling-down' : phase < 14 ? 'empty'
               : 'starting';
    if (t > 3 && next !== w.state) {
      if (next === 'draining') event('drain', w.slot, w.pid, 'worker drains: wedged for 1 s');
      if (next === 'quarantined') event('crash', w.slot, w.pid, 'worker exited: signal 9');
      if (next === 'quarantined') event('quarantine', w.slot, w.pid, 'slot quarantined for 5 s');
      if (next === 'cooling-down') event('cooldown', w.slot, w.pid, 'crash budget spent');
      if (next === 'starting') w.pid = ++pid, event('respawn', w.slot, w.pid, 'worker replaced');
      if (next === 'serving' && w.state === 'starting') {
        event('ready', w.slot, w.pid, 'worker ready');
      }
      w.state = next;
    }
  } else {
    const n = Math.round(rand(0, 4));
    for (let i = 0; i < n; i++) {
      const o = Math.random() < 0.9 ? 'ok' : pick(['GUEST_ERROR', 'TIMEOUT']);
      exec.outcomes.set(o, exec.outcomes.get(o) + 1);
      exec.window += 1;
      const w = pick(exec.workers);
      w.executions += 1;
      const calls = Math.round(rand(0, 3));
      exec.toolCalls += calls;
      exec.toolWindow += calls;
    }
    exec.queue = Math.max(0, Math.round(exec.queue + rand(-1.5, 1.5)));
    for (const w of exec.workers) {
      if (w.state === 'starting' && t > 1) {
        w.state = 'idle';
        event('ready', null, w.pid, 'worker ready');
      } else if (w.state !== 'starting') {
        w.state = Math.random() < 0.6 ? 'busy' : 'idle';
      }
      w.rss_bytes = Math.round(Math.max(40e6, w.rss_bytes + rand(-1e6, 1.2e6)));
    }
  }
}
setInterval(tick, 100);

const interval = intervalMs / 1000;
function snapshot() {
  const base = {
    kind: opts.kind, version: '0.0.0-fake', time: now(), interval_s: interval,
    uptime_s: (Date.now() - started) / 1000, ready: true, draining: false,
  };
  if (opts.kind === 'server') {
    const inflight = workers.reduce((s, w) => s + w.inflight, 0);
    const snap = {
      ...base,
      pool: { inflight, queue, streams: workers.reduce((s, w) => s + w.streams, 0) },
      lanes: ['short', 'streaming'].map((name) => {
        const ws = workers.filter((w) => w.lane === name);
        return { name, workers: ws.length, inflight: ws.reduce((s, w) => s + w.inflight, 0),
                 streams: ws.reduce((s, w) => s + w.streams, 0) };
      }),
      workers: workers.map((w) => ({ ...w })),
      apps: apps.map((a) => ({
        app: a.app, requests_total: a.requests, errors_total: a.errors, rps: a.window / interval,
        p50_s: a.window ? a.lat * rand(0.8, 1.2) : null,
        p99_s: a.window ? a.lat * rand(3, 6) : null,
      })),
      sheds: [...sheds].map(([reason, total]) =>
        ({ reason, total, per_s: (shedWindow.get(reason) ?? 0) / interval })),
      events,
    };
    for (const a of apps) a.window = 0;
    shedWindow.clear();
    return snap;
  }
  const total = [...exec.outcomes.values()].reduce((s, n) => s + n, 0);
  const snap = {
    ...base,
    executions: {
      total, per_s: exec.window / interval, p50_s: rand(0.002, 0.004), p99_s: rand(0.02, 0.05),
      by_outcome: [...exec.outcomes].map(([outcome, n]) => ({ outcome, total: n })),
    },
    queue: { depth: exec.queue, wait_p50_s: rand(0, 0.001), wait_p99_s: rand(0.001, 0.01) },
    tool_calls: { total: exec.toolCalls, per_s: exec.toolWindow / interval, p50_s: rand(0.01, 0.02),
                  p99_s: rand(0.05, 0.1) },
    workers: exec.workers.map((w) => ({ ...w })),
    events,
  };
  exec.window = 0;
  exec.toolWindow = 0;
  return snap;
}

// ---- /metrics, in the Prometheus text format, from the same state (the names of the real ones)
const label = (v) => String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
function metrics() {
  const out = [];
  const line = (name, labels, v) => {
    const l = Object.entries(labels).map(([k, x]) => `${k}="${label(x)}"`).join(',');
    out.push(`${name}${l ? `{${l}}` : ''} ${v}`);
  };
  if (opts.kind === 'server') {
    out.push('# TYPE isolane_requests_total counter');
    for (const a of apps) {
      line('isolane_requests_total', { app: a.app, status: '200' }, a.requests - a.errors);
      if (a.errors) line('isolane_requests_total', { app: a.app, status: '500' }, a.errors);
    }
    out.push('# TYPE isolane_admission_rejected_total counter');
    for (const [reason, n] of sheds) line('isolane_admission_rejected_total', { reason }, n);
    out.push('# TYPE isolane_pool_inflight gauge');
    line('isolane_pool_inflight', {}, workers.reduce((s, w) => s + w.inflight, 0));
    out.push('# TYPE isolane_queue_depth gauge');
    line('isolane_queue_depth', {}, queue);
    for (const [m, f] of [['inflight', 'inflight'], ['pending', 'pending'], ['streams', 'streams'],
                          ['wedged_threads', 'wedged_threads'], ['rss_bytes', 'rss_bytes']]) {
      out.push(`# TYPE isolane_worker_${m} gauge`);
      for (const w of workers) line(`isolane_worker_${m}`, { slot: w.slot }, w[f]);
    }
  } else {
    out.push('# TYPE isolane_executions_total counter');
    for (const [outcome, n] of exec.outcomes) line('isolane_executions_total', { outcome }, n);
    out.push('# TYPE isolane_exec_queue_depth gauge');
    line('isolane_exec_queue_depth', {}, exec.queue);
    out.push('# TYPE isolane_exec_tool_call_seconds histogram');
    line('isolane_exec_tool_call_seconds_count', {}, exec.toolCalls);
    line('isolane_exec_tool_call_seconds_sum', {}, exec.toolCalls * 0.015);
  }
  return out.join('\n') + '\n';
}

// Snapshots of the wrong shape, for /fake/garbage: the page must show what it can and go on.
const evil = '{"toString":1}';  // String() of this object throws
const garbage = [
  'not json', 'null', '[]', '{"kind":"server","pool":5,"lanes":{"a":1},"sheds":[{"reason":null}]}',
  opts.kind === 'server'
    ? `{"kind":"server","time":"x","pool":"x","workers":[null,5,{"slot":${evil},"state":{"x":1},` +
      `"inflight":"12"}],"apps":[{"app":${evil},"rps":"12","requests_total":[1]}],` +
      `"events":[null,5,{"time":"x","kind":"<b>x</b>","detail":${evil}}]}`
    : `{"kind":"executor","executions":{"total":"5","by_outcome":[{"outcome":${evil},` +
      `"total":null}]},"queue":null,"tool_calls":[],"workers":[{"id":${evil},"state":7}],` +
      `"events":"x"}`,
];

// ---- HTTP: one snapshot per interval, sent to every open stream; a new stream gets the last one.
const streams = new Set();
let pausedUntil = 0;
const message = (snap) => `event: snapshot\ndata: ${JSON.stringify(snap)}\n\n`;
let latest = snapshot();
setInterval(() => {
  latest = snapshot();
  for (const s of streams) s.write(message(latest));
}, intervalMs);
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/dashboard') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(readFileSync(opts.html));
  } else if (url.pathname === '/dashboard/events') {
    if (Date.now() < pausedUntil) {
      res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' });
      res.end('paused\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    // A short reconnection delay: after /fake/pause the browser's own retry meets the 503, so
    // the page's reconnection after a refused stream is what brings it back.
    res.write(`retry: 500\n${message(latest)}`);
    streams.add(res);
    res.on('close', () => streams.delete(res));
  } else if (url.pathname === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(metrics());
  } else if (url.pathname === '/healthz') {
    res.end('ok\n');
  } else if (url.pathname === '/fake/garbage') {
    for (const s of streams) for (const g of garbage) s.write(`event: snapshot\ndata: ${g}\n\n`);
    res.end('sent\n');
  } else if (url.pathname === '/fake/pause') {
    pausedUntil = Date.now() + Number(url.searchParams.get('ms') ?? 3000);
    for (const s of streams) s.destroy();
    res.end('paused\n');
  } else {
    res.writeHead(404).end('not found\n');
  }
});
server.listen(Number(opts.port), opts.host, () => {
  const { address, port } = server.address();
  const base = `http://${address}:${port}`;
  const line = opts.kind === 'server'
    ? { msg: 'listening', url: base, admin: base, backend: 'fake' }
    : { msg: 'executor listening', host: address, port };
  const ts = new Date().toISOString();
  process.stderr.write(JSON.stringify({ ts, level: 'info', ...line }) + '\n');
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));

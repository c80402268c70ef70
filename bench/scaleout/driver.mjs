// bench scenario "scaleout" (bench/scaleout/run.sh): the load sent through nginx to three isolane
// replicas, and the checks on what the clients saw. Node's own http client: one keep-alive socket
// per client (nginx keeps its own connections to the replicas).
//
//   node driver.mjs --mode spread --port P --replicas r1=PORT:ADMIN,... --requests N --clients C
//   node driver.mjs --mode mixed  --port P --replicas ... --access-log FILE --events FILE
//                   --stop-file FILE --expect kill|rolling [--hello C --slow C --post C --sse C]
//   node driver.mjs --mode shed   --port P --replicas ... --access-log FILE --fill N
//                   --fill-ms MS --probes K
//
// Prints one markdown table row on stdout (| scenario | requests | succeeded | failed by kind |
// per replica | p50 / p99 ms | checks | verdict |), the whole result as JSON with --json FILE, and
// exits 0 when every check passed, 3 when one failed.
//
// spread: N GET /hello from C clients; requests per replica = the change of each replica's
//   isolane_requests_total (summed) in its /metrics. Pass: each within +-20 % of the mean.
// mixed: until --stop-file exists, loops of GET /hello (--hello clients), GET /slow?ms=200
//   (--slow), POST /slow?ms=100 with a body (--post), and --sse clients holding GET /sse (a
//   stream that ends, cleanly or not, is counted and opened again). Every request carries
//   x-test-id; nginx's access log (run.sh's format: JSON lines with the id, the times and the
//   upstream addresses) tells which replica answered it. --events is run.sh's log of what it did
//   to the replicas (kill, term, exited, ready, orphans), one "KIND NAME MS [VALUE]" a line.
//   expect kill: the only failures allowed are a POST answered 502 and an SSE stream cut, each on
//     the killed replica and in flight there at the kill (access log: its last upstream is the
//     killed replica, it started before the kill and ended after it); their count is bounded by
//     the requests of any kind in flight on that replica at the kill (same rule: the access log's
//     entries whose upstream list holds the killed replica). No orphan worker.
//   expect rolling: no failure at all; SSE streams may end, but only cleanly (the chunked
//     response complete); every replica exited after its SIGTERM and was ready again.
// shed: --fill requests of GET /slow?ms=MS fill every replica (run.sh starts them with a tiny
//   max_inflight), then --probes sequential GET /hello. Pass: every probe is answered 503 with
//   Retry-After, each within SHED_BOUND_MS (not a hang).
import http from 'node:http';
import fs from 'node:fs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const port = Number(args.port);
const mode = args.mode;
const CLIENT_TIMEOUT_MS = 30000;  // a request unanswered this long is a hang
const SHED_BOUND_MS = 1000;       // shed: the longest a 503 may take

// r1=8081:9464,r2=... -> [{name, port, admin}]
const replicas = (args.replicas ?? '').split(',').filter(Boolean).map((s) => {
  const [name, ports] = s.split('=');
  const [p, a] = ports.split(':').map(Number);
  return { name, port: p, admin: a };
});
const replicaOfAddr = (addr) => replicas.find((r) => addr === `127.0.0.1:${r.port}`)?.name ?? addr;
const log = (...a) => console.error('--', ...a);
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

// ---- one request --------------------------------------------------------------------------------

let nextId = 0;
const records = [];  // every request and stream: {id, kind, start, end, status, outcome, ...}

// request(kind, method, path, agent, body) -> record. outcome: ok (200, whole body), status (an
// answer other than 200), error (no answer: connection failed or reset), cut (the body did not
// complete), timeout (no end within CLIENT_TIMEOUT_MS).
function request(kind, method, path, agent, body) {
  const rec = { id: `${kind}-${nextId++}`, kind, method, path, start: Date.now() };
  records.push(rec);
  return new Promise((resolve) => {
    const done = (outcome, extra = {}) => {
      if (rec.outcome) return;
      Object.assign(rec, { outcome, end: Date.now() }, extra);
      clearTimeout(timer);
      resolve(rec);
    };
    const headers = { 'x-test-id': rec.id };
    if (body) {
      headers['content-type'] = 'text/plain';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      rec.status = res.statusCode;
      rec.retryAfter = res.headers['retry-after'];
      rec.shed = res.headers['x-isolane-shed'];
      rec.firstByte = Date.now();
      res.resume();
      res.on('error', () => {});
      res.on('close', () => {
        if (!res.complete) done('cut');
        else done(res.statusCode === 200 ? 'ok' : 'status');
      });
    });
    const timer = setTimeout(() => {
      done('timeout');
      req.destroy();
    }, CLIENT_TIMEOUT_MS);
    req.on('error', (e) => done('error', { error: e.code ?? e.message }));
    req.end(body);
  });
}

// One SSE stream: opened, read, closed by us at the stop (outcome "held") or ended by the server:
// cleanly ("ended": the chunked response completed) or not ("cut").
function sseStream(stopped) {
  const rec = { id: `sse-${nextId++}`, kind: 'sse', method: 'GET', path: '/sse', start: Date.now(), events: 0 };
  records.push(rec);
  return new Promise((resolve) => {
    let closing = false;
    const done = (outcome, extra = {}) => {
      if (rec.outcome) return;
      Object.assign(rec, { outcome, end: Date.now() }, extra);
      clearTimeout(timer);
      resolve(rec);
    };
    const timer = setTimeout(() => {  // no head within CLIENT_TIMEOUT_MS: a hang
      done('timeout');
      req.destroy();
    }, CLIENT_TIMEOUT_MS);
    const req = http.get(
      { host: '127.0.0.1', port, path: '/sse', agent: false, headers: { 'x-test-id': rec.id, accept: 'text/event-stream' } },
      (res) => {
        rec.status = res.statusCode;
        if (res.statusCode !== 200) {
          res.resume();
          res.on('close', () => done('status'));
          return;
        }
        rec.firstByte = Date.now();
        clearTimeout(timer);
        res.on('data', (chunk) => { rec.events += chunk.toString().split('\n\n').length - 1; });
        res.on('error', () => {});
        res.on('close', () => {
          if (closing) done('held');
          else if (res.complete) done('ended');
          else done('cut');
        });
        stopped.then(() => {
          closing = true;
          req.destroy();
        });
      },
    );
    req.on('error', (e) => done(closing ? 'held' : 'error', { error: e.code ?? e.message }));
  });
}

// ---- figures ------------------------------------------------------------------------------------

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
}
function latency(recs) {
  const ms = recs.filter((r) => r.outcome === 'ok').map((r) => r.end - r.start).sort((a, b) => a - b);
  return { p50: percentile(ms, 0.5), p99: percentile(ms, 0.99), max: ms.length ? ms[ms.length - 1] : 0 };
}
function countBy(list, key) {
  const out = {};
  for (const x of list) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
}
// "get 0, post 502: 1, sse cut: 2" from the failed records.
function failureKinds(recs) {
  const failed = recs.filter((r) => !['ok', 'held', 'ended'].includes(r.outcome));
  const kinds = countBy(failed, (r) => `${r.kind} ${r.outcome === 'status' ? r.status : r.outcome === 'error' ? `error ${r.error}` : r.outcome}`);
  return { failed, kinds };
}
const fmtCounts = (o) => Object.entries(o).map(([k, v]) => `${k}: ${v}`).join(', ') || '0';

async function metricsTotal(admin) {
  const text = await fetch(`http://127.0.0.1:${admin}/metrics`).then((r) => r.text());
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('isolane_requests_total{') || line.startsWith('isolane_requests_total ')) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return sum;
}

// nginx's access log (run.sh's log_format: one JSON object a line) by x-test-id.
function readAccessLog(file) {
  const byId = new Map();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    let e;
    try { e = JSON.parse(line); } catch { continue; }
    if (!e.id) continue;
    // upstream_addr: "A, B" (tried A then B), "A : B" (an internal redirect).
    // The upstream group's name instead of an address: nginx found no replica to try.
    e.upstreams = String(e.ua ?? '').split(/\s*[,]\s*|\s+:\s+/).filter((a) => a && a !== '-' && a.includes(':')).map(replicaOfAddr);
    e.last = e.upstreams[e.upstreams.length - 1] ?? 'none (nginx answered)';
    e.endMs = Math.round(Number(e.t) * 1000);
    e.startMs = e.endMs - Math.round(Number(e.rt) * 1000);
    byId.set(e.id, e);
  }
  return byId;
}

function readEvents(file) {
  if (!file || !fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => {
    const [kind, name, ms, value] = l.split(' ');
    return { kind, name, ms: Number(ms), value };
  });
}

function finish(result) {
  result.pass = result.checks.every((c) => c.pass);
  const checks = result.checks.map((c) => `${c.pass ? '' : 'FAILED: '}${c.text}`).join('; ');
  const row = `| ${result.scenario} | ${result.sent} | ${result.succeeded} | ${result.failedText} | ${result.perReplicaText} | ${result.latencyText} | ${checks} | ${result.pass ? 'pass' : 'FAIL'} |`;
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 1));
  console.log(row);
  process.exitCode = result.pass ? 0 : 3;
}

// ---- scenario 1: spread -------------------------------------------------------------------------

async function spread() {
  const total = Number(args.requests ?? 3000);
  const clients = Number(args.clients ?? 16);
  const before = await Promise.all(replicas.map((r) => metricsTotal(r.admin)));
  let left = total;
  await Promise.all(Array.from({ length: clients }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (left > 0) {
      left--;
      await request('hello', 'GET', '/hello', agent);
    }
    agent.destroy();
  }));
  const after = await Promise.all(replicas.map((r) => metricsTotal(r.admin)));
  const per = Object.fromEntries(replicas.map((r, i) => [r.name, after[i] - before[i]]));
  const counts = Object.values(per);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  const worst = Math.max(...counts.map((c) => Math.abs(c - mean) / mean));
  const { failed, kinds } = failureKinds(records);
  const lat = latency(records);
  finish({
    scenario: '1. spread',
    sent: records.length,
    succeeded: records.length - failed.length,
    failedText: fmtCounts(kinds),
    perReplica: per,
    perReplicaText: fmtCounts(per),
    latency: lat,
    latencyText: `${lat.p50} / ${lat.p99}`,
    checks: [
      { pass: failed.length === 0, text: `${failed.length} failed` },
      { pass: worst <= 0.2, text: `largest deviation from the mean ${(worst * 100).toFixed(1)} % (bound 20 %)` },
      { pass: counts.reduce((a, b) => a + b, 0) === total, text: `replicas counted ${counts.reduce((a, b) => a + b, 0)} of ${total}` },
    ],
  });
}

// ---- scenarios 2 and 3: mixed load while run.sh kills or restarts replicas -------------------

async function mixed() {
  let stop;
  const stopped = new Promise((ok) => { stop = ok; });
  let running = true;
  const poll = setInterval(() => {
    if (fs.existsSync(args['stop-file'])) {
      running = false;
      clearInterval(poll);
      stop();
    }
  }, 20);
  const loop = async (n, fn) => Promise.all(Array.from({ length: n }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (running) await fn(agent);
    agent.destroy();
  }));
  const body = 'x'.repeat(256);
  await Promise.all([
    loop(Number(args.hello ?? 2), (a) => request('hello', 'GET', '/hello', a)),
    loop(Number(args.slow ?? 4), (a) => request('slow', 'GET', '/slow?ms=200', a)),
    loop(Number(args.post ?? 4), (a) => request('post', 'POST', '/slow?ms=100', a, body)),
    Promise.all(Array.from({ length: Number(args.sse ?? 6) }, async () => {
      while (running) {
        const r = await sseStream(stopped);
        if (r.outcome !== 'held' && r.outcome !== 'ended') await sleep(100);
      }
    })),
  ]);
  await sleep(500);  // nginx logs a stream when it has seen it close
  const accessLog = readAccessLog(args['access-log']);
  const events = readEvents(args.events);
  for (const r of records) {
    const e = accessLog.get(r.id);
    r.replica = e?.last;
    r.upstreams = e?.upstreams;
    r.logStart = e?.startMs;
    r.logEnd = e?.endMs;
  }
  const { failed, kinds } = failureKinds(records);
  const answered = records.filter((r) => r.replica && r.status);
  const per = countBy(answered, (r) => r.replica);
  const byKind = {};
  for (const k of ['hello', 'slow', 'post']) byKind[k] = latency(records.filter((r) => r.kind === k));
  const sse = countBy(records.filter((r) => r.kind === 'sse'), (r) => r.outcome);
  const result = {
    scenario: args.expect === 'kill' ? '2. SIGKILL one replica' : '3. rolling restart',
    sent: records.length,
    succeeded: records.filter((r) => ['ok', 'held', 'ended'].includes(r.outcome)).length,
    failedText: fmtCounts(kinds),
    perReplica: per,
    perReplicaText: fmtCounts(Object.fromEntries(Object.entries(per).sort())),
    latency: byKind,
    latencyText: Object.entries(byKind).map(([k, l]) => `${k} ${l.p50} / ${l.p99}`).join(', '),
    sse,
    events,
    checks: [],
    failures: failed.slice(0, 50),
  };
  const checks = result.checks;
  const streamsText = `SSE streams: ${fmtCounts(sse)}`;
  if (args.expect === 'kill') {
    const kill = events.find((e) => e.kind === 'kill');
    const killed = events.find((e) => e.kind === 'killed') ?? kill;
    const victim = kill?.name;
    // In flight on the victim at the kill: nginx's entry names it among the upstreams tried, the
    // request started before the kill (+ SLACK: nginx may still send on a connection to the dead
    // replica before it sees it closed) and ended after it.
    const SLACK = 20;
    const onVictim = (r) => !!kill && r.upstreams?.includes(victim) && r.logStart <= killed.ms + SLACK && r.logEnd >= kill.ms;
    const inflight = records.filter(onVictim);
    const allowed = failed.filter((r) =>
      r.replica === victim && onVictim(r) &&
      ((r.kind === 'post' && r.outcome === 'status' && r.status === 502) || (r.kind === 'sse' && r.outcome === 'cut')));
    const other = failed.filter((r) => !allowed.includes(r));
    const orphans = Number(events.find((e) => e.kind === 'orphans')?.value ?? -1);
    result.inflightOnVictim = countBy(inflight, (r) => `${r.kind} ${r.outcome}`);
    result.unexpected = other;
    checks.push(
      { pass: !!kill, text: kill ? `${victim} SIGKILLed` : 'no kill happened' },
      { pass: other.length === 0, text: `${other.length} failures other than a POST 502 or a cut stream in flight on ${victim}` },
      { pass: allowed.length <= inflight.length, text: `${allowed.length} POST 502 / cut streams <= ${inflight.length} in flight on ${victim} at the kill (${fmtCounts(result.inflightOnVictim)})` },
      { pass: orphans === 0, text: `${orphans} orphan workers` },
      { pass: true, text: streamsText },
    );
  } else {
    const names = replicas.map((r) => r.name);
    const cycled = names.filter((n) => events.some((e) => e.kind === 'exited' && e.name === n) &&
      events.some((e) => e.kind === 'ready' && e.name === n));
    const slowExit = events.filter((e) => e.kind === 'exit-timeout').map((e) => e.name);
    const exits = events.filter((e) => e.kind === 'exited').map((e) => {
      const term = events.find((t) => t.kind === 'term' && t.name === e.name);
      return `${e.name} ${((e.ms - term.ms) / 1000).toFixed(1)} s${e.value === '0' ? '' : ` (exit status ${e.value})`}`;
    });
    const badExit = events.filter((e) => e.kind === 'exited' && e.value !== '0').map((e) => e.name);
    // run.sh takes the next replica down once nginx sends this one requests again ("serving").
    const back = names.map((n) => {
      const ready = events.find((e) => e.kind === 'ready' && e.name === n);
      const serving = events.find((e) => e.kind === 'serving' && e.name === n);
      return ready && serving ? `${n} ${((serving.ms - ready.ms) / 1000).toFixed(1)} s` : `${n} never`;
    });
    checks.push(
      { pass: failed.length === 0, text: `${failed.length} failed` },
      { pass: cycled.length === names.length && slowExit.length === 0 && badExit.length === 0, text: `restarted: ${cycled.join(' ') || 'none'} (SIGTERM to exit: ${exits.join(', ')}${slowExit.length ? `; did not exit in time: ${slowExit.join(' ')}` : ''})` },
      { pass: !back.some((b) => b.endsWith('never')), text: `from /readyz 200 to nginx sending it requests: ${back.join(', ')}` },
      { pass: !sse.cut, text: `${streamsText} (ended = a clean end)` },
    );
  }
  finish(result);
}

// ---- scenario 4: every replica sheds ------------------------------------------------------------

async function shed() {
  const fillMs = Number(args['fill-ms'] ?? 3000);
  const fills = Array.from({ length: Number(args.fill ?? 9) }, () =>
    request('fill', 'GET', `/slow?ms=${fillMs}`, new http.Agent({ keepAlive: false })));
  await sleep(300);
  const probes = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < Number(args.probes ?? 20) && Date.now() < records[0].start + fillMs - 300; i++) {
    probes.push(await request('probe', 'GET', '/hello', agent));
    await sleep(20);
  }
  agent.destroy();
  await Promise.all(fills);
  await sleep(200);
  const accessLog = readAccessLog(args['access-log']);
  for (const r of records) r.upstreams = accessLog.get(r.id)?.upstreams;
  const times = probes.map((r) => r.end - r.start).sort((a, b) => a - b);
  const good = probes.filter((r) => r.status === 503 && r.retryAfter !== undefined && r.outcome === 'status');
  const fillOutcome = countBy(records.filter((r) => r.kind === 'fill'), (r) => r.status ?? r.outcome);
  const probeOutcome = countBy(probes, (r) => `${r.status ?? r.outcome}${r.status === 503 ? (r.retryAfter !== undefined ? ' + Retry-After' : ' without Retry-After') : ''}${r.shed ? ` (${r.shed})` : ''}`);
  const tried = countBy(probes, (r) => `${r.upstreams?.length ?? '?'} tried`);  // 0: nginx answered itself
  for (const r of records) r.replica = accessLog.get(r.id)?.last;
  finish({
    scenario: '4. all replicas shed',
    sent: records.length,
    succeeded: good.length,
    failedText: `probes: ${fmtCounts(probeOutcome)}; fill: ${fmtCounts(fillOutcome)}`,
    perReplica: countBy(records.filter((r) => r.kind === 'fill' && r.status === 200), (r) => r.replica),
    perReplicaText: `fill admitted: ${fmtCounts(countBy(records.filter((r) => r.kind === 'fill' && r.status === 200), (r) => r.replica))}; replicas nginx tried per probe: ${fmtCounts(tried)}`,
    latency: { p50: percentile(times, 0.5), p99: percentile(times, 0.99), max: times[times.length - 1] ?? 0 },
    latencyText: `${percentile(times, 0.5)} / ${percentile(times, 0.99)} (max ${times[times.length - 1] ?? 0})`,
    checks: [
      { pass: probes.length > 0 && good.length === probes.length, text: `${good.length} of ${probes.length} probes answered 503 + Retry-After` },
      { pass: probes.length > 0 && times[times.length - 1] <= SHED_BOUND_MS, text: `slowest answer ${times[times.length - 1] ?? '-'} ms (bound ${SHED_BOUND_MS} ms)` },
    ],
    probes: probes.map(({ id, status, retryAfter, shed, start, end, upstreams }) => ({ id, status, retryAfter, shed, ms: end - start, upstreams })),
  });
}

if (mode === 'spread') await spread();
else if (mode === 'mixed') await mixed();
else if (mode === 'shed') await shed();
else {
  console.error(`driver.mjs: unknown --mode ${mode}`);
  process.exit(2);
}

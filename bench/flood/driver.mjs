// bench scenario "flood" (bench/flood/run.sh): one app's requests held in long synchronous turns
// by N looping clients, while one client sends sequential requests to each of the other apps.
// Node's own http client; prints one JSON object.
//
//   node driver.mjs --port P --apps a,b,... --requests N [--flood N] [--warm S] [--limit S]
//
// apps:     the well-behaved apps (mounted at /<name>/), each sent N sequential requests, timed,
//           for at most --limit S seconds (60; what is not sent by then is not answered);
// flood:    N clients loop on /wedge/?ms=3000 (3 s of CPU in one turn), from --warm S seconds
//           before the measured requests start until they end.
import http from 'node:http';
import { timedGet } from '../lib/timed_get.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const port = Number(args.port);
const apps = args.apps.split(',');
const requests = Number(args.requests ?? 100);
const floodClients = Number(args.flood ?? 0);
const warmMs = Number(args.warm ?? 0) * 1000;
const limitMs = Number(args.limit ?? 60) * 1000;

const get = (agent, path) => timedGet(port, agent, path);

const pct = (sorted, p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0;

let flooding = true;
const flood = { status: {}, shed: {}, lost: 0 };
async function floodClient() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (flooding) {
    const r = await get(agent, '/wedge/?ms=3000');
    if (r.status === 0) { flood.lost++; continue; }
    flood.status[r.status] = (flood.status[r.status] ?? 0) + 1;
    if (r.shed) flood.shed[r.shed] = (flood.shed[r.shed] ?? 0) + 1;
  }
  agent.destroy();
}

const floods = Array.from({ length: floodClients }, floodClient);
await new Promise((r) => setTimeout(r, warmMs));

const result = { apps: {}, flood };
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const lat = Object.fromEntries(apps.map((a) => [a, []]));
const out = Object.fromEntries(apps.map((a) => [a, { ok: 0, status: {}, lost: 0, shedWithoutRetryAfter: 0 }]));
const deadline = Date.now() + limitMs;
for (let i = 0; i < requests && Date.now() < deadline; i++) {
  for (const app of apps) {
    const r = await get(agent, `/${app}/x`);
    const o = out[app];
    if (r.status === 0) { o.lost++; continue; }
    o.status[r.status] = (o.status[r.status] ?? 0) + 1;
    if (r.status === 503 && r.retryAfter === undefined) o.shedWithoutRetryAfter++;
    if (r.status === 200) { o.ok++; lat[app].push(r.ms); }
  }
}
flooding = false;
await Promise.all(floods);
agent.destroy();
for (const app of apps) {
  const s = lat[app].sort((a, b) => a - b);
  result.apps[app] = { ...out[app], p50Ms: pct(s, 0.5), p99Ms: pct(s, 0.99), maxMs: s.at(-1) ?? 0 };
}
const all = apps.map((a) => result.apps[a]);
result.worst = {
  ok: Math.min(...all.map((a) => a.ok)),
  p50Ms: Math.max(...all.map((a) => a.p50Ms)),
  p99Ms: Math.max(...all.map((a) => a.p99Ms)),
  maxMs: Math.max(...all.map((a) => a.maxMs)),
  lost: all.reduce((n, a) => n + a.lost + a.shedWithoutRetryAfter, 0),
  shed: all.reduce((n, a) => n + (a.status[503] ?? 0), 0),
};
console.log(JSON.stringify(result));

// bench scenario "freeze" (bench/freeze/run.sh): the load of render-pool.md's post-mortem against
// one server, and what its healthy routes saw. Node's own http client, one keep-alive socket per
// client; prints one JSON object.
//
//   node driver.mjs --port P --seconds S [--healthy N] [--renders N] [--sse N] [--storm FILE]
//
// healthy: N clients loop on /hello and /json, each request timed (the figures reported);
// renders: N clients loop on /render (seconds of CPU per request: wedged renders);
// sse:     N clients hold /sse open and read its events;
// storm:   FILE is rewritten with a new version every 100 ms (a bundle rewritten under load).
import http from 'node:http';
import { timedGet } from '../lib/timed_get.mjs';
import fs from 'node:fs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
const port = Number(args.port);
const seconds = Number(args.seconds ?? 10);
const until = Date.now() + seconds * 1000;
const result = {
  healthy: { latenciesMs: [], status: {}, lost: 0, shedWithoutRetryAfter: 0 },
  renders: { status: {}, lost: 0 },
  sse: { opened: 0, events: 0, lost: 0 },
  storm: { rewrites: 0 },
};

const get = (agent, path) => timedGet(port, agent, path);

async function healthyClient(i) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let n = 0; Date.now() < until; n++) {
    const r = await get(agent, (n + i) % 2 ? '/hello' : '/json');
    const h = result.healthy;
    if (r.status === 0) {
      h.lost++;
      continue;
    }
    h.status[r.status] = (h.status[r.status] ?? 0) + 1;
    if (r.status === 503 && r.retryAfter === undefined) h.shedWithoutRetryAfter++;
    if (r.status === 200) h.latenciesMs.push(r.ms);
  }
  agent.destroy();
}

async function renderClient() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (Date.now() < until) {
    const r = await get(agent, '/render?ms=5000');
    if (r.status === 0) result.renders.lost++;
    else result.renders.status[r.status] = (result.renders.status[r.status] ?? 0) + 1;
    if (r.status === 503) await new Promise((ok) => setTimeout(ok, 100));
  }
  agent.destroy();
}

function sseClient() {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/sse' }, (res) => {
      if (res.statusCode !== 200) {
        result.sse.lost++;
        res.resume();
        return resolve();
      }
      result.sse.opened++;
      res.on('data', (chunk) => {
        result.sse.events += chunk.toString().split('\n\n').length - 1;
      });
      res.on('error', () => {});
      setTimeout(() => {
        req.destroy();
        resolve();
      }, until - Date.now());
    });
    req.on('error', () => {
      if (Date.now() < until - 50) result.sse.lost++;
      resolve();
    });
  });
}

async function storm(file) {
  const text = fs.readFileSync(file, 'utf8');
  while (Date.now() < until) {
    result.storm.rewrites++;
    fs.writeFileSync(`${file}.tmp`, text.replace(/const version = \d+;/, `const version = ${result.storm.rewrites};`));
    fs.renameSync(`${file}.tmp`, file);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

const tasks = [];
for (let i = 0; i < Number(args.sse ?? 0); i++) tasks.push(sseClient());
for (let i = 0; i < Number(args.renders ?? 0); i++) tasks.push(renderClient());
if (args.storm) tasks.push(storm(args.storm));
await new Promise((ok) => setTimeout(ok, 200));  // streams open and renders start first
for (let i = 0; i < Number(args.healthy ?? 4); i++) tasks.push(healthyClient(i));
await Promise.all(tasks);

const sorted = result.healthy.latenciesMs.sort((a, b) => a - b);
const pct = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
result.healthy.count = sorted.length;
result.healthy.p50Ms = pct(0.5);
result.healthy.p99Ms = pct(0.99);
result.healthy.maxMs = sorted.length ? sorted[sorted.length - 1] : 0;
delete result.healthy.latenciesMs;
console.log(JSON.stringify(result));

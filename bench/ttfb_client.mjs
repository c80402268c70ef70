// The client of bench/run's "ttfb" scenario: COUNT sequential GETs of URL, each on a new
// connection (no keep-alive, as curl would), after WARMUP unrecorded ones. Per request: time to
// the first byte of the body (TTFB; the page's shell) and to its last byte (total), from just
// before the request is made. Prints one JSON line: p50/p99 of both (ms), errors (non-200 or
// failed requests) and the body size of the last answer.
//
//   node ttfb_client.mjs URL COUNT [WARMUP]
import http from 'node:http';

const [url, countArg, warmupArg] = process.argv.slice(2);
const COUNT = Number(countArg);
const WARMUP = Number(warmupArg ?? 5);

function once() {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    let first = null;
    let bytes = 0;
    const req = http.get(url, { agent: false }, (res) => {
      res.on('data', (chunk) => {
        if (first === null) first = ms();
        bytes += chunk.length;
      });
      res.on('end', () => resolve({ ok: res.statusCode === 200, first, total: ms(), bytes }));
      res.on('error', () => resolve({ ok: false }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ ok: false }));
  });
}

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

for (let i = 0; i < WARMUP; i++) await once();
const firsts = [];
const totals = [];
let errors = 0;
let bytes = 0;
for (let i = 0; i < COUNT; i++) {
  const r = await once();
  if (!r.ok || r.first === null) { errors++; continue; }
  firsts.push(r.first);
  totals.push(r.total);
  bytes = r.bytes;
}
firsts.sort((a, b) => a - b);
totals.sort((a, b) => a - b);
console.log(JSON.stringify({
  count: firsts.length,
  errors,
  bytes,
  firstP50: percentile(firsts, 50),
  firstP99: percentile(firsts, 99),
  totalP50: percentile(totals, 50),
  totalP99: percentile(totals, 99),
}));

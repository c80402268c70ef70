// The client of bench/run's "sse" scenario: N concurrent server-sent-event streams from one
// process, each on its own connection (no keep-alive agent), opened in batches (a batch once the
// previous one has its response heads). Every event carries the server's clock in ms
// (`data: <Date.now()>`); server and client share the machine's clock, so now - that is the
// delivery lag.
//
//   node sse_client.mjs URL CLIENTS WINDOW_S STATE_DIR [BATCH]
//
// Once every stream is open (or failed) and 1.5 s have passed, it writes STATE_DIR/ready and counts
// events for WINDOW_S seconds; then it writes STATE_DIR/measured and keeps the streams open until
// SIGTERM (or SIGINT), when it closes them and writes STATE_DIR/result.json: events/s in the
// window, lag p50/p99/max (ms), events per second of the window (a stall shows as a low one),
// streams opened, failed (connect error, non-200, or closed by the server before the end,
// however late) and never answered.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const [url, clientsArg, windowArg, stateDir, batchArg] = process.argv.slice(2);
const CLIENTS = Number(clientsArg);
const WINDOW_S = Number(windowArg);
const BATCH = Number(batchArg || 250);
const BATCH_TIMEOUT_MS = 10_000;
const SETTLE_MS = 1500;  // from the last batch to the window: half a period off the first ones
if (!url || !(CLIENTS > 0) || !(WINDOW_S > 0) || !stateDir) {
  console.error('usage: node sse_client.mjs URL CLIENTS WINDOW_S STATE_DIR [BATCH]');
  process.exit(2);
}

let opened = 0;
let failed = 0;
const failures = {};  // reason -> count, for the log
let closing = false;
let windowStart = Infinity;
let windowEnd = Infinity;
const lags = [];
const perSecond = new Array(WINDOW_S).fill(0);
const requests = new Set();

// state.status: pending (no head yet), open, failed. A stream counts once, in opened or failed.
function fail(state, reason) {
  if (closing || state.status === 'failed') return;
  if (state.status === 'open') opened--;
  state.status = 'failed';
  failed++;
  failures[reason] = (failures[reason] || 0) + 1;
  state.resolve();
}

function onEvent(text) {
  const now = Date.now();
  if (now < windowStart || now >= windowEnd) return;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    lags.push(now - Number(line.slice(6)));
    perSecond[Math.floor((now - windowStart) / 1000)]++;
  }
}

function openOne() {
  return new Promise((resolve) => {
    const state = { status: 'pending', resolve };
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      res.on('error', () => {});
      if (res.statusCode !== 200) {
        fail(state, `status ${res.statusCode}`);
        res.resume();
        return;
      }
      state.status = 'open';
      opened++;
      resolve();
      res.setEncoding('utf8');
      let buffered = '';
      res.on('data', (chunk) => {
        buffered += chunk;
        let end;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          onEvent(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
        }
      });
      res.on('close', () => fail(state, 'closed by the server'));
    });
    req.on('error', (err) => fail(state, err.code || err.message));
    requests.add(req);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const t0 = Date.now();
for (let i = 0; i < CLIENTS; i += BATCH) {
  const batch = [];
  for (let j = i; j < Math.min(CLIENTS, i + BATCH); j++) batch.push(openOne());
  await Promise.race([Promise.all(batch), sleep(BATCH_TIMEOUT_MS)]);
}
const rampMs = Date.now() - t0;
await sleep(SETTLE_MS);
fs.writeFileSync(path.join(stateDir, 'ready'), `${opened}\n`);
windowStart = Date.now();
windowEnd = windowStart + WINDOW_S * 1000;
await sleep(windowEnd - Date.now() + 20);
const openAtWindowEnd = opened;
fs.writeFileSync(path.join(stateDir, 'measured'), `${opened}\n`);

function finish() {
  closing = true;
  for (const req of requests) req.destroy();
  lags.sort((a, b) => a - b);
  const result = {
    clients: CLIENTS,
    opened: openAtWindowEnd,
    openAtEnd: opened,
    failed,
    neverAnswered: CLIENTS - opened - failed,
    failures,
    rampMs,
    windowS: WINDOW_S,
    events: lags.length,
    eventsPerSec: lags.length / WINDOW_S,
    perSecond,
    lagP50: percentile(lags, 50),
    lagP99: percentile(lags, 99),
    lagMax: lags.length ? lags[lags.length - 1] : null,
  };
  fs.writeFileSync(path.join(stateDir, 'result.json'), JSON.stringify(result));
  process.exit(0);
}
process.on('SIGTERM', finish);
process.on('SIGINT', finish);
setInterval(() => {}, 1 << 30);  // stay alive until told to finish

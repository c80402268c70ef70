// The dashboard of `isolane serve`, on its admin listener. In the real mode the server runs three
// apps (hello, slow, and counter under a name made of HTML, to show that names are text) on a pool
// of two workers under load: more slow requests than max_inflight holds, so requests are in flight
// and some are shed. The page must show each app's requests growing and agreeing with /metrics,
// the sheds by reason, the pool's gauges, one row per worker slot in a known state, and recent
// events; then say "draining" and "disconnected, retrying" as the server stops. With --fake the
// same checks run against tools/dev/dashboard-fake.mjs, plus malformed snapshots and a refused
// stream that the page must recover from by itself.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { compareCounter, gauge, labelValues, metricSum, rateBetween, scrape }
  from '../lib/metrics.mjs';
import { checkDisconnect, checkGarbage, checkPageHygiene, openPage, readPage, waitUpdates }
  from '../lib/page.mjs';
import { cleanEnv, sleep, start, stop, waitReady } from '../lib/processes.mjs';
import { check, current, fatal, setPart } from '../lib/report.mjs';

const POOL_SIZE = 2;
const HOSTILE_APP = '<img src=x onerror=window.__pwned=1>';
const SERVER_STATES = ['starting', 'serving', 'wedged', 'draining', 'killing', 'quarantined', 'cooling-down',
                       'empty'];

// ---- load: concurrent loops of fetches
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

export async function testServer(browser, { fake, build, root, fakeScript, tmp }) {
  setPart(fake ? 'fake server' : 'server');
  console.log(`# ${current}`);
  let proc, url, admin, load = null;
  if (fake) {
    proc = await start(process.execPath, [fakeScript, '--kind', 'server'],
                       { env: process.env, listening: 'listening' });
    admin = proc.line.admin;
  } else {
    const fixtures = join(root, 'tests/fixtures/apps');
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
    proc = await start(join(build, 'isolane'), ['serve', '--config', config],
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

  const size = fake ? 3 : POOL_SIZE;
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

  mkdirSync(join(build, 'dashboard'), { recursive: true });
  const shot = join(build, 'dashboard', fake ? 'fake-server.png' : 'server.png');
  await page.screenshot({ path: shot });
  console.log(`  screenshot ${shot}`);
  console.log(`  page: ${b.updates} updates; hello ${b.values['app.hello.requests_total']} ` +
              `requests, in flight ${b.values['pool.inflight']}, ${shed} shed`);

  if (load) await load.stop();
  if (fake) await checkGarbage(page, admin, 'server');
  checkPageHygiene(pageInfo, [a, b]);
  if (fake) {
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
  if (!fake) console.log(`  during the stop the header said draining: ${draining}`);
  await page.close();
}

// The dashboard page in the browser, read as the tests see it: every figure the page shows
// carries data-k (its key) and data-v (its raw value), and <body> carries the update count, the
// snapshot time and the connection state, so the test reads values rather than formatted text.
// Also what holds for any page whatever it shows: it fetches nothing but /dashboard and its event
// stream, has no script error, shows snapshot strings as text (an app named like HTML must not
// run), survives malformed snapshots (from the fake) and says so when the server goes away.
import { check, fatal } from './report.mjs';

export async function readPage(page) {
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
export const waitUpdates = (page, n, ms = 15000) =>
  page.waitForFunction((k) => Number(document.body.dataset.updates) >= k, { timeout: ms }, n)
      .catch(() => fatal(`the page did not reach ${n} updates within ${ms / 1000} s`));

export async function openPage(browser, base) {
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
export function checkPageHygiene({ offsite, errors }, reads) {
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
export async function checkGarbage(page, base, kind) {
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
export async function checkDisconnect(page, stopIt) {
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

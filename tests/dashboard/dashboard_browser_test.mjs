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
//
// This file is the entry point: the command line, the browser, and the parts in turn. The parts
// are scenarios/server.mjs and scenarios/executor.mjs; lib/ holds what they share: the report
// (report.mjs), the processes (processes.mjs), /metrics and the comparison rule (metrics.mjs), and
// reading the page (page.mjs).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import puppeteer from 'puppeteer-core';

import { children, stop } from './lib/processes.mjs';
import { Fatal, failures, fatal } from './lib/report.mjs';
import { testExecutor } from './scenarios/executor.mjs';
import { testServer } from './scenarios/server.mjs';

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
        await part(browser, { fake: opts.fake, build: BUILD, root: ROOT, fakeScript: FAKE, tmp });
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

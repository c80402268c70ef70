// The processes behind the page: the real server, the real executor or the fake, each started
// with its stderr read for its JSON "listening" line (which carries its address and port), and
// stopped with SIGTERM (SIGKILL after 10 s). Every child is remembered so that the test, or a
// signal from outside (ctest's timeout, ^C), never leaves one running.
import { spawn } from 'node:child_process';

import { Fatal, fatal } from './report.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const children = [];
export function start(cmd, args, { env, listening }) {
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
export function stop(child) {
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
export function cleanEnv() {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('ISOLANE_')) delete env[k];
  return env;
}
export async function waitReady(base) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    try { if ((await fetch(`${base}/readyz`)).status === 200) return; } catch {}
    await sleep(100);
  }
  fatal(`${base}/readyz did not answer 200 within 30 s`);
}

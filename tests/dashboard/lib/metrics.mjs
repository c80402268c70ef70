// /metrics and how the page's figures are compared with it. The page is read first and /metrics
// right after, so a counter on the page is at most what /metrics says, and behind it by no more
// than one update interval of the measured rate adds (rate × (interval + 0.5 s) + 5); gauges are
// only checked present and ≥ 0 on both, since they move between the snapshot and the scrape.
import { check, fatal } from './report.mjs';

// ---- /metrics: the Prometheus text format, label values with their escapes
export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{)?/.exec(line);
    if (!m) continue;
    const labels = {};
    let i = m[0].length;
    if (m[2]) {
      while (line[i] !== '}') {
        const eq = line.indexOf('=', i);
        const name = line.slice(i, eq).trim();
        i = eq + 2;  // past ="
        let v = '';
        while (line[i] !== '"') {
          if (line[i] === '\\') { i++; v += line[i] === 'n' ? '\n' : line[i]; } else v += line[i];
          i++;
        }
        labels[name] = v;
        i++;
        if (line[i] === ',') i++;
      }
      i++;
    }
    samples.push({ name: m[1], labels, value: Number(line.slice(i).trim().split(/\s+/)[0]) });
  }
  return samples;
}
export function metricSum(samples, name, where = {}) {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).some(([k, v]) => s.labels[k] !== v)) continue;
    found = true;
    sum += s.value;
  }
  return found ? sum : null;
}
export const labelValues = (samples, name, label) =>
  [...new Set(samples.filter((s) => s.name === name).map((s) => s.labels[label]))];
export async function scrape(base) {
  const r = await fetch(`${base}/metrics`);
  if (r.status !== 200) fatal(`/metrics answered ${r.status}`);
  return parseMetrics(await r.text());
}

// A counter on the page against the same counter in /metrics read just after. A label value
// that first counted after the snapshot (a new shed reason, a new outcome) is absent from the
// page: `absent: 0` takes it as 0 there.
export function compareCounter(what, onPage, inMetrics, rate, interval, { absent } = {}) {
  const allowed = rate * (interval + 0.5) + 5;
  if (onPage === undefined && absent !== undefined) onPage = absent;
  if (!check(typeof onPage === 'number', `${what} shown on the page (got ${onPage})`)) return;
  if (!check(inMetrics !== null, `${what} present in /metrics`)) return;
  check(onPage <= inMetrics && inMetrics - onPage <= allowed,
        `${what}: page ${onPage}, /metrics ${inMetrics}; /metrics must be ahead by 0..` +
        `${allowed.toFixed(1)} (rate ${rate.toFixed(1)}/s)`);
}
export const gauge = (what, v) =>
    check(typeof v === 'number' && v >= 0, `${what} is a number ≥ 0 (got ${v})`);
export const rateBetween = (a, b, key) =>
  Math.max(0, ((b.values[key] ?? 0) - (a.values[key] ?? 0)) / Math.max(0.5, b.time - a.time));

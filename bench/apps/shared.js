// Code shared by the isolane bench apps and the Node baseline (bench/baselines/node_server.mjs),
// so that both produce byte-identical bodies from the same JavaScript. Plain ES module with no
// imports: isolane loads it as a relative import, Node through bench/package.json ("type":
// "module").

export const HELLO = 'Hello from isolane\n';

// "json": 200 small objects with a few fields, built fresh on every request.
export const JSON_ITEMS = 200;
export function makeItems(count = JSON_ITEMS) {
  const items = new Array(count);
  for (let i = 0; i < count; i++) {
    items[i] = {
      id: i + 1,
      name: `item-${i + 1}`,
      priceCents: 499 + ((i * 7919) % 49500),
      inStock: i % 7 !== 0,
      tags: i % 2 === 0 ? ['even', 'bench'] : ['odd'],
    };
  }
  return items;
}

// "stream": a 1 MiB body in 16 chunks of 64 KiB. Each chunk is a fresh allocation (as a
// producer reading from somewhere would make), filled with a letter that varies by chunk.
export const STREAM_CHUNK_BYTES = 64 * 1024;
export const STREAM_CHUNKS = 16;
export function streamChunk(index) {
  return new Uint8Array(STREAM_CHUNK_BYTES).fill(97 + (index % 26));
}

// "async": the timer every request awaits before answering.
export const ASYNC_DELAY_MS = 20;
export const ASYNC_BODY = 'async done\n';

// "jsloop": pure JavaScript, no I/O: the json scenario's work (build the items, serialize them)
// in a loop, timed inside the engine. Returns microseconds per iteration, the median of `rounds`
// timed rounds of `iterations` each, after one warm-up round.
export function jsloopMicros(iterations = 2000, rounds = 5) {
  let sink = 0;
  const times = [];
  for (let r = 0; r <= rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) sink += JSON.stringify(makeItems()).length;
    if (r > 0) times.push(((performance.now() - t0) * 1000) / iterations);
  }
  times.sort((a, b) => a - b);
  if (sink === 0) throw new Error('unreachable');
  return times[Math.floor(times.length / 2)];
}

// "sse": server-sent events, one a second per client, each carrying the server's clock
// (Date.now(), ms) so that the client (bench/sse_client.mjs, same machine and clock) can measure
// delivery lag. A comment goes out at once, so that the head reaches the client before the first
// event.
export const SSE_INTERVAL_MS = 1000;
export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-store' };
export const SSE_OPEN = ': ok\n\n';
export function sseEvent() {
  return `data: ${Date.now()}\n\n`;
}

// "ttfb": streamed server-side rendering. The shell of a page (~2 KiB of HTML) goes out at once,
// the rest (~20 KiB) after an awaited 50 ms timer (standing in for a slow data source).
export const TTFB_DELAY_MS = 50;
function padTo(html, bytes, line) {
  const parts = [html];
  let size = html.length;
  for (let i = 0; size < bytes; i++) {
    const piece = line(i);
    parts.push(piece);
    size += piece.length;
  }
  return parts.join('');
}
export const TTFB_SHELL = padTo(
  '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Streamed page</title>\n<style>\n',
  2048 - 60,
  (i) => `.c${i} { margin: ${i % 9}px; padding: ${i % 5}px; color: #${(0x102030 + i * 997).toString(16).slice(-6)}; }\n`,
) + '</style>\n</head>\n<body>\n<header>Shop</header>\n<main>\n';
export const TTFB_REST = padTo(
  '<ul class="products">\n',
  20 * 1024 - 40,
  (i) => `<li class="c${i % 40}"><a href="/p/${i + 1}">Product ${i + 1}</a> <b>${(499 + ((i * 7919) % 49500)) / 100}</b></li>\n`,
) + '</ul>\n</main>\n</body>\n</html>\n';

// "upload": POST bodies of this size; the answer is the byte count the server read.
export const UPLOAD_BYTES = 10 * 1024 * 1024;

// "fetchbig": the upstream body an app fetches and reads whole.
export const FETCHBIG_BYTES = 4 * 1024 * 1024;

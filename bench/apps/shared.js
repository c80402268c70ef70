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

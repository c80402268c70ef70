// The Node 20 baseline: a plain node:http server in one process (the strongest Node setup, not a
// Request/Response adapter) producing the same bodies as the bench apps, from the same shared code
// (bench/apps/shared.js, and for /ssr the bundled bench/apps/ssr/render.jsx).
//   node node_server.mjs PORT [UPSTREAM_URL] [SSR_RENDER_MODULE]
// Routes by path prefix: /json, /ssr?n=N, /async, /upstream, /fetchbig, /stream, /sse, /ttfb,
// /upload;
// anything else is hello.
// /upstream and /fetchbig need UPSTREAM_URL, /ssr needs SSR_RENDER_MODULE (build/bench/ssr-render.mjs); they
// are optional so that cold start measures a bare hello server.
import http from 'node:http';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import {
  ASYNC_BODY, ASYNC_DELAY_MS, HELLO, makeItems, SSE_HEADERS, SSE_INTERVAL_MS, SSE_OPEN, sseEvent,
  STREAM_CHUNKS, streamChunk, TTFB_DELAY_MS, TTFB_REST, TTFB_SHELL,
} from '../apps/shared.js';

const [port, upstream, ssrModule] = process.argv.slice(2);
const ssr = ssrModule ? await import(pathToFileURL(path.resolve(ssrModule)).href) : null;

async function handle(req, res) {
  const url = req.url;
  if (url.startsWith('/json')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(makeItems()));
  } else if (url.startsWith('/ssr')) {
    const n = ssr.parseCount(new URL(url, 'http://localhost').searchParams.get('n'));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(ssr.renderPage(n));
  } else if (url.startsWith('/async')) {
    await new Promise((resolve) => setTimeout(resolve, ASYNC_DELAY_MS));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(ASYNC_BODY);
  } else if (url.startsWith('/upstream')) {
    const r = await fetch(upstream);
    const text = await r.text();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(text);
  } else if (url.startsWith('/fetchbig')) {
    // A large upstream body read whole (undici's fetch, as Node 20's global fetch is).
    const r = await fetch(new URL('big', upstream));
    const bytes = await r.arrayBuffer();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`${bytes.byteLength}\n`);
  } else if (url.startsWith('/stream')) {
    // Chunk by chunk, honouring backpressure, as a streaming producer would.
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let i = 0; i < STREAM_CHUNKS; i++) {
      if (!res.write(streamChunk(i))) await once(res, 'drain');
    }
    res.end();
  } else if (url.startsWith('/sse')) {
    // One event a second until the client goes away.
    res.writeHead(200, SSE_HEADERS);
    res.write(SSE_OPEN);
    const timer = setInterval(() => res.write(sseEvent()), SSE_INTERVAL_MS);
    res.on('close', () => clearInterval(timer));
  } else if (url.startsWith('/ttfb')) {
    // The shell at once, the rest after the timer.
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.write(TTFB_SHELL);
    await new Promise((resolve) => setTimeout(resolve, TTFB_DELAY_MS));
    res.end(TTFB_REST);
  } else if (url.startsWith('/upload')) {
    // The whole body in one buffer, as request.arrayBuffer() gives it.
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`${body.length}\n`);
  } else {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(HELLO);
  }
}

http
  .createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  })
  .listen(Number(port), '127.0.0.1');

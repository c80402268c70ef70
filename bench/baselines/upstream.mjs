// The loopback upstream the "upstream" scenario fetches from: answers after 10 ms; and the one
// "fetchbig" fetches from: /big answers 4 MiB at once.
// `node upstream.mjs PORT`
import http from 'node:http';
import { FETCHBIG_BYTES } from '../apps/shared.js';

const big = Buffer.alloc(FETCHBIG_BYTES, 'b');

http
  .createServer((req, res) => {
    if (req.url.startsWith('/big')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': big.length });
      res.end(big);
      return;
    }
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('upstream body\n');
    }, 10);
  })
  .listen(Number(process.argv[2]), '127.0.0.1');

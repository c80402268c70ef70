// The loopback upstream the "upstream" scenario fetches from: answers after 10 ms.
// `node upstream.mjs PORT`
import http from 'node:http';

http
  .createServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('upstream body\n');
    }, 10);
  })
  .listen(Number(process.argv[2]), '127.0.0.1');

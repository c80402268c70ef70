// The Node 20 baseline: a plain node:http server (the strongest Node setup, not a Request/Response
// adapter) producing the same bodies as the bench apps. `node node_server.mjs PORT UPSTREAM_URL`
import http from 'node:http';

const [port, upstream] = process.argv.slice(2);
const hello = 'Hello from isolane\n';

http
  .createServer(async (req, res) => {
    if (req.url.startsWith('/async')) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('async done\n');
    } else if (req.url.startsWith('/upstream')) {
      const r = await fetch(upstream);
      const text = await r.text();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(text);
    } else {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(hello);
    }
  })
  .listen(Number(port), '127.0.0.1');

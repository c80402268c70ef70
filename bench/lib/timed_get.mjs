// bench/lib/timed_get.mjs: one timed GET to isolane on loopback with node's own http client, as
// the scenario drivers (bench/freeze, bench/flood) make them. Resolves to the status (0: no
// answer), the Retry-After and x-isolane-shed headers, and the time to the end of the body in ms.
import http from 'node:http';

export function timedGet(port, agent, path) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          shed: res.headers['x-isolane-shed'],
          retryAfter: res.headers['retry-after'],
          ms: Number(process.hrtime.bigint() - started) / 1e6,
        }),
      );
      res.on('error', () => resolve({ status: 0 }));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
}

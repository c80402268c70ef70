// A code-mode client, as a platform that runs AI-written code would write one: it connects to
// `isolane executor`, offers two tools it answers itself, runs a snippet a model "generated"
// that calls them, and prints what the snippet returned. Node 20+, the `ws` package.
//
//   isolane executor &                      # listens on 127.0.0.1:8090
//   node examples/codemode/agent.mjs        # or: node agent.mjs ws://HOST:PORT/v1/session
//
// Set ISOLANE_EXECUTOR_TOKEN when the executor requires a token.
import WebSocket from 'ws';

const url = process.argv[2] ?? 'ws://127.0.0.1:8090/v1/session';
const token = process.env.ISOLANE_EXECUTOR_TOKEN;

// The tools this platform offers: provider -> tool -> an async function of the guest's argument.
const tools = {
  weather: {
    async forecast({ city }) {
      const table = { Paris: 18, Oslo: 4, Lima: 22 };
      if (!(city in table)) throw new Error(`no forecast for ${city}`);
      return { city, celsius: table[city] };
    },
  },
  math: {
    async mean({ values }) {
      return values.reduce((a, b) => a + b, 0) / values.length;
    },
  },
};

// What a model wrote: it may only reach the world through `tools`.
const snippet = `async () => {
  const cities = ['Paris', 'Oslo', 'Lima'];
  const forecasts = await Promise.all(cities.map((city) => tools.weather.forecast({ city })));
  const mean = await tools.math.mean({ values: forecasts.map((f) => f.celsius) });
  let missing;
  try { await tools.weather.forecast({ city: 'Atlantis' }) } catch (e) { missing = e.message }
  console.log('checked', forecasts.length, 'cities');
  return { forecasts, mean, missing };
}`;

// Runs one execution on an open session; resolves with the result or rejects with the typed error.
function execute(ws, id, code, offered) {
  return new Promise((resolve, reject) => {
    const onMessage = async (data) => {
      const m = JSON.parse(data);
      if (m.id !== id) return;
      if (m.type === 'tool_call') {
        const fn = offered[m.provider]?.[m.tool];
        try {
          if (!fn) throw new Error(`no tool ${m.provider}.${m.tool}`);
          ws.send(JSON.stringify({ type: 'tool_result', id, call: m.call, result: await fn(m.args) }));
        } catch (error) {
          ws.send(JSON.stringify({ type: 'tool_error', id, call: m.call, message: error.message }));
        }
      } else if (m.type === 'result') {
        ws.off('message', onMessage);
        resolve(m);
      } else if (m.type === 'error') {
        ws.off('message', onMessage);
        reject(Object.assign(new Error(m.error.message), m.error));
      }
    };
    ws.on('message', onMessage);
    const names = Object.fromEntries(Object.entries(offered).map(([p, t]) => [p, Object.keys(t)]));
    ws.send(JSON.stringify({ type: 'execute', id, code, tools: names, timeout_ms: 5000 }));
  });
}

const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
ws.on('error', (error) => {
  console.error(`cannot reach the executor at ${url}: ${error.message}`);
  process.exit(2);
});
ws.on('open', async () => {
  try {
    const answer = await execute(ws, 'agent-1', snippet, tools);
    console.log(JSON.stringify({ result: answer.result, logs: answer.logs, tool_calls: answer.stats.tool_calls }));
    ws.close();
  } catch (error) {
    console.error(`${error.code}: ${error.message}${error.retryable ? ' (retryable)' : ''}`);
    process.exit(1);
  }
});

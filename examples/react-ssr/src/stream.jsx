// The streamed page of the React SSR example (GET /stream): renderToReadableStream sends the
// shell at once, with a <Suspense> fallback where the deals will go; the deals "load" for
// delay_ms (default 300, 0–10000) and then arrive in the same response, with React's inline script
// that swaps them in for the fallback.

import { Suspense } from "react";
import { renderToReadableStream } from "react-dom/server.browser";

const DEFAULT_DELAY_MS = 300;
const MAX_DELAY_MS = 10_000;

const CSS = `
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #f6f6f4; }
  header { padding: 1rem 2rem; background: #1f2933; color: #f5f7fa; }
  header a { color: #9fd3ff; }
  main { padding: 1rem 2rem; }
  .loading { color: #888; font-style: italic; }
  .deals li { margin: .3rem 0; }
`;

export function parseDelay(value) {
  const n = Number.parseInt(value ?? "", 10);
  if (!Number.isFinite(n)) return DEFAULT_DELAY_MS;
  return Math.min(MAX_DELAY_MS, Math.max(0, n));
}

// Data that is ready after `ms`, read the React 18 way: read() throws the promise (so the
// component suspends) until it has settled.
function slowData(ms, make) {
  let result;
  const promise = new Promise((resolve) => setTimeout(resolve, ms)).then(() => {
    result = make();
  });
  return {
    read() {
      if (result === undefined) throw promise;
      return result;
    },
  };
}

function Deals({ data }) {
  const { deals, ms } = data.read();
  return (
    <section>
      <ul className="deals">
        {deals.map((deal) => (
          <li key={deal.name}>
            {deal.name}: {deal.off}% off
          </li>
        ))}
      </ul>
      <p>Deals loaded after {ms} ms.</p>
    </section>
  );
}

function StreamPage({ delayMs, data }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>isolane shop: streamed</title>
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>
        <header>
          <h1>Today in the isolane shop</h1>
          <a href="/">← all examples</a>
        </header>
        <main>
          <p>
            This part is the shell: it was sent at once. The deals below take {delayMs} ms to load
            (change with <code>?delay_ms=</code>) and come later in the same response.
          </p>
          <Suspense fallback={<p className="loading">Loading deals…</p>}>
            <Deals data={data} />
          </Suspense>
        </main>
      </body>
    </html>
  );
}

// A ReadableStream of the page's HTML. Aborting `signal` (isolane does when the client goes
// away) stops the render.
export function renderStream(delayMs, signal) {
  const start = performance.now();
  const data = slowData(delayMs, () => ({
    ms: Math.round(performance.now() - start),
    deals: [
      { name: "Wireless Kettle", off: 20 },
      { name: "Rugged Backpack", off: 35 },
      { name: "Silent Keyboard", off: 15 },
    ],
  }));
  return renderToReadableStream(<StreamPage delayMs={delayMs} data={data} />, {
    signal,
    onError(error) {
      console.error("react-ssr stream:", error);
    },
  });
}

// Server-side rendering with React 18 in an isolane app: a product list rendered to an HTML
// string on every request (the page itself is in page.jsx), and a page streamed as it renders
// (stream.jsx).
//
// GET /?n=300 renders 300 products (n is clamped to 1–500; default 50).
// GET /stream?delay_ms=600 streams a page whose <Suspense> boundary resolves after 600 ms
// (default 300): the shell, with the boundary's fallback, reaches the client first.
//
// Bundled by tools/bundle-examples.mjs into ../dist/app.js with the automatic JSX runtime and
// process.env.NODE_ENV = "production" (which selects React's production build).

import { parseCount, renderPage } from "./page.jsx";
import { parseDelay, renderStream } from "./stream.jsx";

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/stream") {
      // Resolves once the shell is ready; the rest of the page follows on the stream.
      const stream = await renderStream(parseDelay(url.searchParams.get("delay_ms")), request.signal);
      return new Response(stream, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (url.pathname !== "/" && url.pathname !== "/index.html") {
      return new Response(`Not found: ${url.pathname}\n`, {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }

    const n = parseCount(url.searchParams.get("n"));
    const start = performance.now();
    const html = renderPage(n);
    const ms = performance.now() - start;

    return new Response(html, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "server-timing": `render;dur=${ms.toFixed(2)}`,
      },
    });
  },
};

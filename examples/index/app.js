// Landing page mounted at "/": links to the other examples in examples/isolane.toml.

const EXAMPLES = [
  { href: "/hello", title: "hello", about: "a plain-text response from the smallest possible app" },
  { href: "/api/items", title: "json-api", about: "a JSON API without libraries (GET /api/items, GET /api/items/:id, POST /api/items)" },
  { href: "/router/", title: "hono-router", about: "an app built on the Hono router, bundled with esbuild" },
  { href: "/router/hello/isolane", title: "hono-router: /hello/:name", about: "a route parameter plus the GREETING var from isolane.toml" },
  { href: "/ssr", title: "react-ssr", about: "a product list server-rendered with React 18 (try /ssr?n=300)" },
  { href: "/ssr/stream", title: "react-ssr: streamed", about: "a page streamed with renderToReadableStream: the shell at once, a <Suspense> boundary later" },
  { href: "/sse", title: "sse", about: "server-sent events: a clock streamed as text/event-stream, shown by an EventSource" },
  { href: "/jwt/selftest", title: "jwt", about: "JSON Web Tokens (HS256, ES256, RS256, EdDSA) with the npm package jose and Hono's jwt middleware, over crypto.subtle" },
];

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>isolane examples</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 42rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
  h1 { font-size: 1.6rem; margin-bottom: .25rem; }
  p.lead { color: #555; margin-top: 0; }
  ul { padding-left: 1.2rem; }
  li { margin: .5rem 0; }
  code { background: #f3f3f3; padding: 0 .25rem; border-radius: 3px; }
  span.about { color: #555; }
</style>
</head>
<body>
<h1>isolane examples</h1>
<p class="lead">Each example below is a separate app, running in its own V8 isolate context.</p>
<ul>
${EXAMPLES.map((e) => `  <li><a href="${escapeHtml(e.href)}"><code>${escapeHtml(e.href)}</code></a> — <strong>${escapeHtml(e.title)}</strong><br><span class="about">${escapeHtml(e.about)}</span></li>`).join("\n")}
</ul>
</body>
</html>
`;

export default {
  fetch(request) {
    const { pathname } = new URL(request.url);
    if (pathname !== "/" && pathname !== "/index.html") {
      return new Response(`Not found: ${pathname}\n`, {
        status: 404,
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("Method not allowed\n", {
        status: 405,
        headers: { "content-type": "text/plain; charset=utf-8", allow: "GET, HEAD" },
      });
    }
    return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
  },
};

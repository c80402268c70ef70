// Server-sent events: a response whose body is a ReadableStream stays open, and isolane sends
// each chunk as the app enqueues it. Here the chunks are the ticks of a clock.
//
//   GET /         an HTML page whose EventSource shows the events as they arrive
//   GET /events   text/event-stream: the comment ": ok" at once, then every second an event with
//                 the server time and an incrementing id. A reconnecting EventSource sends
//                 Last-Event-ID; counting goes on after it.
//                 ?interval_ms=50 sets the period (10–60000) and ?count=3 ends the stream after
//                 that many events (handy for tests); without count the clock runs until the
//                 client goes away.
//
// When the client goes away, isolane cancels the stream (cancel() clears the timer) and aborts
// request.signal (which stops the clock too, for a stream nobody cancelled).
//
// isolane.toml mounts the app at "/sse" with `streaming = true` (its requests are long-lived, so
// they count against the stream cap). isolane strips the prefix and names it in the
// x-forwarded-prefix header: the page uses that to point its EventSource at the right URL.

const encoder = new TextEncoder();

function intParam(value, fallback, min, max) {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : fallback;
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function events(request, url) {
  const intervalMs = intParam(url.searchParams.get("interval_ms"), 1000, 10, 60_000);
  const count = intParam(url.searchParams.get("count"), Infinity, 1, 1_000_000);
  let id = intParam(request.headers.get("last-event-id"), 0, 0, Number.MAX_SAFE_INTEGER);

  let timer;
  const stop = () => clearInterval(timer);
  const stream = new ReadableStream({
    start(controller) {
      controller.enqueue(encoder.encode(": ok\n\n"));
      let sent = 0;
      timer = setInterval(() => {
        id += 1;
        controller.enqueue(encoder.encode(`id: ${id}\ndata: ${new Date().toISOString()}\n\n`));
        if (++sent === count) {
          stop();
          controller.close();
        }
      }, intervalMs);
      request.signal.addEventListener("abort", stop);
    },
    cancel: stop,
  });
  return new Response(stream, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-store" },
  });
}

function page(request) {
  // "/sse" when mounted there; nothing when mounted at "/".
  const prefix = (request.headers.get("x-forwarded-prefix") ?? "").replace(/\/+$/, "");
  const eventsUrl = `${prefix}/events`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>isolane: server-sent events</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 42rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
  code { background: #f3f3f3; padding: 0 .25rem; border-radius: 3px; }
  #status { color: #555; }
  #log { font-family: ui-monospace, monospace; }
</style>
</head>
<body data-events="${escapeHtml(eventsUrl)}">
<h1>Server-sent events</h1>
<p>The server's clock, one event a second, over one streamed response from
<code>${escapeHtml(eventsUrl)}</code>. Add <code>?interval_ms=200&amp;count=10</code> to this page's
URL to change the period and end the stream after 10 events (the browser then reconnects with
<code>Last-Event-ID</code>, and the count goes on).</p>
<p id="status">connecting…</p>
<ol id="log"></ol>
<script>
  const statusLine = document.getElementById("status");
  const log = document.getElementById("log");
  const source = new EventSource(document.body.dataset.events + location.search);
  source.onopen = () => { statusLine.textContent = "connected"; };
  source.onerror = () => { statusLine.textContent = "disconnected, reconnecting…"; };
  source.onmessage = (event) => {
    const item = document.createElement("li");
    item.value = Number(event.lastEventId);
    item.textContent = event.data;
    log.prepend(item);
    while (log.children.length > 20) log.lastElementChild.remove();
  };
</script>
</body>
</html>
`;
  return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
}

export default {
  fetch(request) {
    const url = new URL(request.url);
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("Method not allowed\n", {
        status: 405,
        headers: { "content-type": "text/plain; charset=utf-8", allow: "GET, HEAD" },
      });
    }
    if (url.pathname === "/" || url.pathname === "/index.html") return page(request);
    if (url.pathname === "/events") return events(request, url);
    return new Response(`Not found: ${url.pathname}\n`, {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  },
};

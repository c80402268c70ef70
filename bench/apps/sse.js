// bench scenario "sse": server-sent events. Each request gets a stream that stays open: a comment
// at once, then every second an event carrying the server's clock in ms (bench/sse_client.mjs
// measures the delivery lag from it). The client going away cancels the stream, which stops the
// timer. bench/run mounts it with `streaming = true` (long-lived requests, held against the stream
// cap rather than the short-request caps).
import { SSE_HEADERS, SSE_INTERVAL_MS, SSE_OPEN, sseEvent } from './shared.js';

const encoder = new TextEncoder();

export default {
  fetch() {
    let timer;
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(encoder.encode(SSE_OPEN));
        timer = setInterval(() => controller.enqueue(encoder.encode(sseEvent())), SSE_INTERVAL_MS);
      },
      cancel() {
        clearInterval(timer);
      },
    });
    return new Response(body, { headers: SSE_HEADERS });
  },
};

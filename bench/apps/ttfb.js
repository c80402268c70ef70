// bench scenario "ttfb": streamed server-side rendering. The page's shell (~2 KiB) is enqueued at
// once, the rest (~20 KiB) after an awaited 50 ms timer, then the stream closes. A server that
// streams gets the shell to the client ~50 ms before the end; one that buffers does not.
import { TTFB_DELAY_MS, TTFB_REST, TTFB_SHELL } from './shared.js';

const encoder = new TextEncoder();
const SHELL = encoder.encode(TTFB_SHELL);
const REST = encoder.encode(TTFB_REST);

export default {
  fetch() {
    const body = new ReadableStream({
      async start(controller) {
        controller.enqueue(SHELL.slice());
        await new Promise((resolve) => setTimeout(resolve, TTFB_DELAY_MS));
        controller.enqueue(REST.slice());
        controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/html; charset=utf-8' } });
  },
};

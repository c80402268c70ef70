// bench scenario "async": awaits a 20 ms timer, then answers.
import { ASYNC_BODY, ASYNC_DELAY_MS } from './shared.js';

export default {
  async fetch() {
    await new Promise((resolve) => setTimeout(resolve, ASYNC_DELAY_MS));
    return new Response(ASYNC_BODY, { headers: { 'content-type': 'text/plain' } });
  },
};

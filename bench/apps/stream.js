// bench scenario "stream": a 1 MiB body produced in 64 KiB chunks through a ReadableStream
// (pulled one chunk at a time, as a streaming producer would).
import { STREAM_CHUNKS, streamChunk } from './shared.js';

export default {
  fetch() {
    let next = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (next === STREAM_CHUNKS) {
          controller.close();
          return;
        }
        controller.enqueue(streamChunk(next++));
      },
    });
    return new Response(body, { headers: { 'content-type': 'application/octet-stream' } });
  },
};

// bench scenario "upload": reads the whole request body (10 MiB POSTs in the benchmark) and
// answers with its length in bytes.
export default {
  async fetch(request) {
    const body = await request.arrayBuffer();
    return new Response(`${body.byteLength}\n`, { headers: { 'content-type': 'text/plain' } });
  },
};

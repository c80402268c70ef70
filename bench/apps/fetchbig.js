// bench scenario "fetchbig": fetches a 4 MiB body from a loopback upstream (env.UPSTREAM + "big")
// and reads it whole; answers with its length in bytes. What it measures is the outbound fetch's
// body path: upstream socket, the master's egress, the worker socket, the body stream.
export default {
  async fetch(request, env) {
    const res = await fetch(new URL('big', env.UPSTREAM));
    const bytes = await res.arrayBuffer();
    return new Response(`${bytes.byteLength}\n`, { headers: { 'content-type': 'text/plain' } });
  },
};

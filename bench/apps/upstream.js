// bench scenario "upstream": fetches from a loopback upstream (env.UPSTREAM), returns its body.
export default {
  async fetch(request, env) {
    const res = await fetch(env.UPSTREAM);
    return new Response(await res.text(), { headers: { 'content-type': 'text/plain' } });
  },
};

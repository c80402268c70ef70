// bench scenario "async": awaits a 20 ms timer, then answers.
export default {
  async fetch() {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return new Response('async done\n', { headers: { 'content-type': 'text/plain' } });
  },
};

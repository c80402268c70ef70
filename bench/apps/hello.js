// bench scenario "hello": a fixed text response (the same bytes nginx and Node return).
export default {
  fetch() {
    return new Response('Hello from isolane\n', {
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
  },
};

// The smallest isolane app: one ES module whose default export has a fetch handler.
export default {
  fetch() {
    return new Response("Hello from isolane\n", {
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  },
};

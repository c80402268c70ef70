// bench scenario "freeze": a wedged render. Each request burns ?ms= milliseconds of CPU in one
// synchronous turn (default 3000): past the default 2 s CPU budget, so the in-V8 deadline ends it
// with a 500 CPU_LIMIT; the worker is never killed for it.
export default {
  fetch(request) {
    const ms = Number(new URL(request.url).searchParams.get('ms') ?? 3000);
    const end = performance.now() + ms;
    let n = 0;
    while (performance.now() < end) n++;
    return new Response(`rendered ${n}\n`);
  },
};

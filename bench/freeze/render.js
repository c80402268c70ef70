// bench scenario "freeze": a wedged render. Each request spins for ?ms= milliseconds of wall
// time in one synchronous turn (the driver asks for 5000): past the default 2 s CPU budget unless
// the machine's other load leaves it less CPU, so the in-V8 deadline ends it with a 500
// CPU_LIMIT; the worker is never killed for it.
export default {
  fetch(request) {
    const ms = Number(new URL(request.url).searchParams.get('ms') ?? 3000);
    const end = performance.now() + ms;
    let n = 0;
    while (performance.now() < end) n++;
    return new Response(`rendered ${n}\n`);
  },
};

// An isolane app built on Hono (https://hono.dev). A Hono app already has the
// `fetch(request, env, ctx)` method isolane calls, so the app itself is the default export.
//
// Bundled by tools/bundle-examples.mjs into ../dist/app.js (the module isolane.toml points at).
// Mounted at "/router": isolane strips that prefix, so the routes below are written from "/".

import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";

const app = new Hono();

// Middleware: time every request and say so in a response header.
app.use("*", async (c, next) => {
  const start = performance.now();
  await next();
  c.header("x-response-time", `${(performance.now() - start).toFixed(2)}ms`);
});

app.get("/", (c) =>
  c.text(
    [
      "isolane + Hono",
      "",
      "GET  /hello/:name          greeting (uses the GREETING var from isolane.toml)",
      "GET  /sum?a=1&b=2&b=3      JSON built from query parameters",
      "POST /echo                 echoes a JSON body back",
      "GET  /teapot               an HTTPException handled by onError",
      "GET  /boom                 an unexpected error handled by onError",
      "",
    ].join("\n"),
  ),
);

// `c.env` is the env object isolane passes to fetch: the app's [app.vars] from isolane.toml.
app.get("/hello/:name", (c) => {
  const greeting = c.env?.GREETING ?? "Hello";
  return c.text(`${greeting}, ${c.req.param("name")}!\n`);
});

// Query parameters: every `a` and `b` value (repeats allowed) is summed.
app.get("/sum", (c) => {
  const values = [...(c.req.queries("a") ?? []), ...(c.req.queries("b") ?? [])];
  if (values.length === 0) {
    throw new HTTPException(400, { message: "give numbers as ?a=…&b=…" });
  }
  const numbers = values.map(Number);
  const bad = values.filter((v, i) => v.trim() === "" || !Number.isFinite(numbers[i]));
  if (bad.length > 0) {
    throw new HTTPException(400, { message: `not numbers: ${bad.join(", ")}` });
  }
  return c.json({ numbers, sum: numbers.reduce((x, y) => x + y, 0) });
});

app.post("/echo", async (c) => {
  let body;
  try {
    body = await c.req.json();
  } catch {
    throw new HTTPException(400, { message: "body must be valid JSON" });
  }
  return c.json({
    received: body,
    contentType: c.req.header("content-type") ?? null,
  });
});

app.get("/teapot", () => {
  throw new HTTPException(418, { message: "I'm a teapot" });
});

app.get("/boom", () => {
  throw new Error("this route always fails");
});

app.notFound((c) =>
  c.json({ error: "not_found", message: `No route for ${c.req.method} ${c.req.path}` }, 404),
);

// onError sees everything a handler or middleware throws. HTTPExceptions carry their own
// status; anything else is logged and becomes a 500 without leaking the message.
app.onError((err, c) => {
  if (err instanceof HTTPException) {
    return c.json({ error: "http_error", status: err.status, message: err.message }, err.status);
  }
  console.error(`hono-router: ${c.req.method} ${c.req.path} failed:`, err?.stack ?? String(err));
  return c.json({ error: "internal_error", message: "Something went wrong" }, 500);
});

export default app;

// A Hono app using the middleware the web platform issue names: cors, etag, compress,
// basicAuth, jwt, requestId, form parsing (parseBody, formData) and streamSSE. Mounted at "/"
// by tests/e2e/packages_test.cc, which checks each against Hono's documented behaviour.
import { Hono } from "hono";
import { basicAuth } from "hono/basic-auth";
import { compress } from "hono/compress";
import { cors } from "hono/cors";
import { etag } from "hono/etag";
import { jwt, sign } from "hono/jwt";
import { requestId } from "hono/request-id";
import { streamSSE } from "hono/streaming";

const SECRET = "isolane-test-secret";
const app = new Hono();

app.use("/api/*", cors({ origin: "https://app.example", allowMethods: ["GET", "POST"], maxAge: 600 }));
app.use("/id/*", requestId());
app.use("/etag/*", etag());
app.use("/big/*", compress());
app.use("/admin/*", basicAuth({ username: "ada", password: "lovelace" }));
app.use("/private/*", jwt({ secret: SECRET, alg: "HS256" }));

app.get("/api/data", (c) => c.json({ ok: true }));
app.get("/id/echo", (c) => c.text(c.get("requestId")));
app.get("/etag/doc", (c) => c.text("a document whose etag is stable"));
app.get("/big/text", (c) => c.text("compress me please ".repeat(2000)));
app.get("/admin/panel", (c) => c.text("welcome, ada"));

app.post("/token", async (c) => {
  const { sub } = await c.req.json();
  const token = await sign({ sub, exp: Math.floor(Date.now() / 1000) + 60 }, SECRET, "HS256");
  return c.json({ token });
});
app.get("/private/me", (c) => c.json({ sub: c.get("jwtPayload").sub }));

// parseBody: urlencoded and multipart fields, and uploaded files as File objects.
app.post("/form", async (c) => {
  const body = await c.req.parseBody({ all: true });
  const out = {};
  for (const [key, value] of Object.entries(body)) {
    const one = (v) => (v instanceof File ? { file: v.name, type: v.type, size: v.size, text: null } : v);
    out[key] = Array.isArray(value) ? value.map(one) : one(value);
  }
  const file = body.upload;
  if (file instanceof File) out.upload.text = await file.text();
  return c.json(out);
});

// A FormData response the client parses as multipart.
app.get("/form-out", () => {
  const form = new FormData();
  form.append("greeting", "hello");
  form.append("attachment", new File(["file body"], "a.txt", { type: "text/plain" }));
  return new Response(form);
});

app.get("/sse", (c) =>
  streamSSE(c, async (stream) => {
    for (let i = 1; i <= 3; i++) {
      await stream.writeSSE({ event: "tick", id: String(i), data: `message ${i}` });
      await stream.sleep(5);
    }
  }),
);

export default app;

// A small JSON API written against the web platform only (no libraries):
//
//   GET  /items        list all items
//   GET  /items/:id    one item, or a 404 JSON error
//   POST /items        create an item from a JSON body {name, price, tags?}; 201 + Location
//
// isolane strips the mount prefix (e.g. "/api") before the app sees the request, so routing here
// is relative to the app's own root. The store is a Map in this module: it lives as long as the
// app's context and is not shared between contexts or kept across restarts.

const MAX_BODY_BYTES = 16 * 1024;
const MAX_ITEMS = 1000;

const items = new Map();
for (const seed of [
  { id: "1", name: "Teapot", price: 24.5, tags: ["kitchen"] },
  { id: "2", name: "Notebook", price: 3.2, tags: ["office", "paper"] },
  { id: "3", name: "Desk lamp", price: 39.0, tags: ["office"] },
]) {
  items.set(seed.id, { ...seed, createdAt: "2024-01-01T00:00:00.000Z" });
}

// A JSON error body: {"error": {"code": ..., "message": ...}} (plus optional details).
function error(status, code, message, extra = {}) {
  const { headers, ...details } = extra;
  return Response.json({ error: { code, message, ...details } }, { status, headers });
}

function methodNotAllowed(allow) {
  return error(405, "method_not_allowed", `Allowed methods: ${allow}`, { headers: { allow } });
}

// Checks a parsed body; returns a list of problems (empty when valid).
function validateNewItem(body) {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return ["body must be a JSON object"];
  }
  const problems = [];
  if (typeof body.name !== "string" || body.name.trim() === "") {
    problems.push("name is required and must be a non-empty string");
  } else if (body.name.length > 200) {
    problems.push("name must be at most 200 characters");
  }
  if (typeof body.price !== "number" || !Number.isFinite(body.price) || body.price < 0) {
    problems.push("price is required and must be a non-negative number");
  }
  if (body.tags !== undefined &&
      (!Array.isArray(body.tags) || !body.tags.every((t) => typeof t === "string"))) {
    problems.push("tags, when given, must be an array of strings");
  }
  return problems;
}

async function createItem(request, pathname) {
  const text = await request.text();
  if (new TextEncoder().encode(text).length > MAX_BODY_BYTES) {
    return error(413, "payload_too_large", `Body must be at most ${MAX_BODY_BYTES} bytes`);
  }
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    return error(400, "invalid_json", `Body is not valid JSON: ${e.message}`);
  }
  const problems = validateNewItem(body);
  if (problems.length > 0) {
    return error(400, "validation_failed", "The item is not valid", { details: problems });
  }
  if (items.size >= MAX_ITEMS) {
    return error(507, "store_full", `This demo store keeps at most ${MAX_ITEMS} items`);
  }

  const item = {
    id: crypto.randomUUID(),
    name: body.name.trim(),
    price: body.price,
    tags: body.tags ?? [],
    createdAt: new Date().toISOString(),
  };
  items.set(item.id, item);

  // A relative reference, so it stays right whatever prefix the app is mounted under:
  // "items/<id>" resolved against ".../items" (or "<id>" against ".../items/") is ".../items/<id>".
  const location = pathname.endsWith("/") ? item.id : `items/${item.id}`;
  return Response.json(item, { status: 201, headers: { location } });
}

async function handle(request) {
  const url = new URL(request.url);
  const { pathname } = url;
  const method = request.method === "HEAD" ? "GET" : request.method;

  if (pathname === "/") {
    if (method !== "GET") return methodNotAllowed("GET, HEAD");
    return Response.json({
      name: "isolane json-api example",
      endpoints: ["GET /items", "GET /items/:id", "POST /items"],
    });
  }

  if (pathname === "/items" || pathname === "/items/") {
    if (method === "GET") {
      const list = [...items.values()];
      return Response.json({ items: list, count: list.length });
    }
    if (method === "POST") return createItem(request, pathname);
    return methodNotAllowed("GET, HEAD, POST");
  }

  const match = /^\/items\/([^/]+)\/?$/.exec(pathname);
  if (match) {
    if (method !== "GET") return methodNotAllowed("GET, HEAD");
    let id;
    try {
      id = decodeURIComponent(match[1]);
    } catch {
      return error(400, "bad_request", "Malformed item id");
    }
    const item = items.get(id);
    if (!item) return error(404, "not_found", `No item with id "${id}"`);
    return Response.json(item);
  }

  return error(404, "not_found", `No route for ${request.method} ${pathname}`);
}

export default {
  async fetch(request, env, ctx) {
    try {
      return await handle(request);
    } catch (e) {
      console.error("json-api: unhandled error:", e && e.stack ? e.stack : String(e));
      return error(500, "internal_error", "Something went wrong");
    }
  },
};

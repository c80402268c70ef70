// The product-list page of the React SSR example: data, components and renderPage(n), with no
// fetch handler, so that the example app (app.jsx) and the benchmark's Node baseline
// (bench/apps/ssr/render.jsx) render the very same code. `react-dom/server.browser` is the build of
// React's server renderer that needs only web APIs (no Node streams, no `process`).

import { renderToString } from "react-dom/server.browser";

const DEFAULT_COUNT = 50;
const MAX_COUNT = 500;

// ---- deterministic product data -------------------------------------------------------------

// mulberry32: a tiny seeded PRNG, so the same index always gives the same product.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ADJECTIVES = ["Compact", "Deluxe", "Rugged", "Silent", "Smart", "Vintage", "Wireless", "Ergonomic", "Portable", "Classic"];
const NOUNS = ["Kettle", "Lamp", "Backpack", "Headphones", "Chair", "Keyboard", "Blender", "Tent", "Watch", "Speaker"];
const CATEGORIES = ["Kitchen", "Office", "Outdoors", "Audio", "Home"];
const TAGS = ["new", "bestseller", "eco", "sale", "limited", "gift idea"];

function makeProduct(index) {
  const r = rng(0x15013 + index * 7919);
  const pick = (list) => list[Math.floor(r() * list.length)];
  const tags = TAGS.filter(() => r() < 0.25);
  return {
    id: index + 1,
    sku: `ISO-${String(index + 1).padStart(4, "0")}`,
    name: `${pick(ADJECTIVES)} ${pick(NOUNS)}`,
    category: pick(CATEGORIES),
    priceCents: 499 + Math.floor(r() * 49500),
    rating: Math.round((2.5 + r() * 2.5) * 10) / 10,
    stock: r() < 0.15 ? 0 : Math.floor(r() * 120),
    tags,
  };
}

// Generated once per context; requests take a prefix.
const PRODUCTS = Array.from({ length: MAX_COUNT }, (_, i) => makeProduct(i));

function formatPrice(cents) {
  return `$${(cents / 100).toFixed(2)}`;
}

// ---- components -----------------------------------------------------------------------------

const CSS = `
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #f6f6f4; }
  header, footer { padding: 1rem 2rem; background: #1f2933; color: #f5f7fa; }
  header a, footer a { color: #9fd3ff; }
  main { padding: 1rem 2rem; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: 1rem; list-style: none; padding: 0; }
  .card { background: #fff; border-radius: 8px; padding: .8rem 1rem; box-shadow: 0 1px 2px rgba(0,0,0,.1); }
  .card h2 { font-size: 1.05rem; margin: 0 0 .3rem; }
  .meta { color: #666; font-size: .85rem; margin: 0; }
  .price { font-weight: 600; font-size: 1.1rem; margin: .4rem 0; }
  .out { color: #b42318; }
  .tags { display: flex; flex-wrap: wrap; gap: .3rem; list-style: none; padding: 0; margin: .4rem 0 0; }
  .tags li { background: #e6f0ff; border-radius: 4px; padding: 0 .4rem; font-size: .8rem; }
`;

function Layout({ title, children }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{title}</title>
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>
        <header>
          <h1>{title}</h1>
          <a href="/">← all examples</a>
        </header>
        <main>{children}</main>
        <footer>
          Rendered on the server by React {"18"} inside an isolane isolate.
        </footer>
      </body>
    </html>
  );
}

function ProductCard({ product }) {
  const inStock = product.stock > 0;
  return (
    <li className="card" id={`product-${product.id}`}>
      <h2>{product.name}</h2>
      <p className="meta">
        {product.category} · {product.sku} · ★ {product.rating.toFixed(1)}
      </p>
      <p className="price">{formatPrice(product.priceCents)}</p>
      <p className={inStock ? "meta" : "meta out"}>
        {inStock ? `${product.stock} in stock` : "Out of stock"}
      </p>
      {product.tags.length > 0 && (
        <ul className="tags">
          {product.tags.map((tag) => (
            <li key={tag}>{tag}</li>
          ))}
        </ul>
      )}
    </li>
  );
}

function ProductList({ products }) {
  const total = products.reduce((sum, p) => sum + p.priceCents, 0);
  return (
    <section>
      <p>
        Showing {products.length} products (change with <code>?n=</code>, 1–{MAX_COUNT}); together
        they cost {formatPrice(total)}.
      </p>
      <ul className="grid">
        {products.map((product) => (
          <ProductCard key={product.id} product={product} />
        ))}
      </ul>
    </section>
  );
}

// ---- the page ------------------------------------------------------------------------------

export function parseCount(value) {
  const n = Number.parseInt(value ?? "", 10);
  if (!Number.isFinite(n)) return DEFAULT_COUNT;
  return Math.min(MAX_COUNT, Math.max(1, n));
}

// The whole HTML document for the first n products.
export function renderPage(n) {
  const html = renderToString(
    <Layout title="isolane shop">
      <ProductList products={PRODUCTS.slice(0, n)} />
    </Layout>,
  );
  return `<!doctype html>\n${html}`;
}

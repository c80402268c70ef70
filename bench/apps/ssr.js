// bench scenario "ssr": a React 18 renderToString product page (bench/apps/ssr/render.jsx).
// GET /?n=N renders N products. Not loadable as is: bench/run bundles it (React is an npm package)
// into build/bench/ssr-app.js, which is what isolane serves.
import { parseCount, renderPage } from './ssr/render.jsx';

export default {
  fetch(request) {
    const n = parseCount(new URL(request.url).searchParams.get('n'));
    return new Response(renderPage(n), {
      headers: { 'content-type': 'text/html; charset=utf-8' },
    });
  },
};

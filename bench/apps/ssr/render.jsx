// bench scenario "ssr": the product-list page of examples/react-ssr, used as is, so that the
// isolane app (bench/apps/ssr.js) and the Node baseline call the very same renderer.
// bench/run bundles this file twice with esbuild (React's production build, automatic JSX):
//   build/bench/ssr-app.js     bench/apps/ssr.js + this file, the module isolane serves
//   build/bench/ssr-render.mjs this file alone, imported by bench/baselines/node_server.mjs
export { parseCount, renderPage } from "../../../examples/react-ssr/src/page.jsx";

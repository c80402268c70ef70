// The native functions the C++ embedder gives this bundle (see ../README.md).
//
// This module is imported first by index.js, so it is the first code of the bundle to run: it
// takes the object off the global and deletes the property, so apps never see the natives.
export const host = globalThis.__isolane_host;
delete globalThis.__isolane_host;

if (host === undefined || host === null) {
  throw new Error('isolane web runtime: globalThis.__isolane_host is missing');
}

// bench scenario "freeze": the app whose bundle is rewritten over and over (the recompile storm).
// The driver rewrites this file's copy in the run's temp dir; the version line changes each time.
const version = 0;
export default {
  fetch() {
    return new Response(`storm ${version}\n`);
  },
};

// What every part of dashboard_browser_test.mjs reports through: a failed check is recorded under
// the part that runs (server, executor, their fake variants) and the test goes on, so that one
// run lists every reason; fatal() ends only the running part (the entry point catches Fatal and
// moves to the next part). The entry point prints the list and sets the exit status.
export const failures = [];
export let current = '';  // the running part; set with setPart()
export function setPart(name) { current = name; }
export function check(ok, what) {
  if (ok) return true;
  failures.push(`${current}: ${what}`);
  console.error(`  FAIL ${what}`);
  return false;
}
export class Fatal extends Error {}
export const fatal = (what) => { throw new Fatal(`${current}: ${what}`); };

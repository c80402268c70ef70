// bench scenario "jsloop": the json scenario's JavaScript alone, timed inside the isolate; the
// answer is microseconds per iteration. `isolane run` executes it in-process, no HTTP.
import { jsloopMicros } from './shared.js';

export default {
  fetch() {
    return new Response(`${jsloopMicros().toFixed(1)}\n`);
  },
};

// The jsloop scenario on a plain Node: prints microseconds per iteration (bench/apps/shared.js).
import { jsloopMicros } from '../apps/shared.js';

console.log(jsloopMicros().toFixed(1));

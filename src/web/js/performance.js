// performance.now() and performance.timeOrigin (High Resolution Time), over host.now() and
// host.timeOrigin. Hand-written glue.
import { host } from './host.js';
import { defineGlobal, exposeInterface } from './util.js';

const INTERNAL = Symbol('internal');

class Performance {
  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeError('Illegal constructor');
  }

  get timeOrigin() {
    return host.timeOrigin;
  }

  now() {
    return host.now();
  }

  toJSON() {
    return { timeOrigin: host.timeOrigin };
  }
}

exposeInterface(Performance, 'Performance');
const performance = new Performance(INTERNAL);
defineGlobal('performance', performance);

export { performance };

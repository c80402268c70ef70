// navigator (HTML §8.9.1, the part WinterTC's Minimum Common API keeps): userAgent, and
// hardwareConcurrency as Workers and Deno give it. Hand-written glue.
import { defineGlobal, exposeInterface } from './util.js';
import { TypeErrorCtor } from './primordials.js';

const INTERNAL = Symbol('internal');

// What apps that sniff the runtime see; stable across versions on purpose.
export const USER_AGENT = 'isolane';

class Navigator {
  #brand = true;

  constructor(token = undefined) {
    if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
  }

  get userAgent() {
    if (!(#brand in this)) throw new TypeErrorCtor('Illegal invocation');
    return USER_AGENT;
  }

  // One: an app's JavaScript runs on one thread, whatever the machine has.
  get hardwareConcurrency() {
    if (!(#brand in this)) throw new TypeErrorCtor('Illegal invocation');
    return 1;
  }
}

exposeInterface(Navigator, 'Navigator');
defineGlobal('navigator', new Navigator(INTERNAL));

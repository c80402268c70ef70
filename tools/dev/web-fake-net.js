// A scripted stand-in for the host's network natives (src/web/README.md, "Host operations"):
// host.fetchStart, host.fetchPull, host.fetchAbort and host.serviceFetch, for
// tools/dev/web-node-runner.mjs. This file is one expression, evaluated inside each test file's
// context (so that every object it makes belongs to that realm), and called with
// `schedule(fn, delayMs)`, which runs fn later from Node's event loop: callbacks are never called
// from inside a native call, as the contract says.
//
// Tests in tests/web/node-only/ see it as `globalThis.__fakeNet`:
//
//   __fakeNet.route(fn)            fn(init, opId) -> script (or a promise of one) for every
//                                  fetchStart; without a route every exchange fails ("network")
//   __fakeNet.service(app, fn)     fn(init) -> { status, statusText, headers, body } (or a promise
//                                  of one) for serviceFetch(app, ...); throwing/rejecting -> onError
//   __fakeNet.requests             the fetchStart inits, in order
//   __fakeNet.serviceRequests      [app, init] of every serviceFetch
//   __fakeNet.events               ['start', id, method, url] ['head', id, status] ['pull', id]
//                                  ['chunk', id, n] ['end', id] ['error', id, kind] ['abort', id]
//   __fakeNet.violations           contract violations seen (tests assert it stays empty)
//   __fakeNet.openOps()            ids of exchanges that have not ended
//   __fakeNet.eventsOf(id)         the event names of one exchange
//
// A script: { status = 200, statusText = '', headers = [], body = [chunks: string | Uint8Array],
//   delayMs (before the head), chunkDelayMs (before each pull's answer),
//   hang: 'head' (no head until aborted) | n (the pull for chunk n is never answered),
//   error: { message, kind, at: 'head' (default) | n (the pull for chunk n fails) } }
(function makeFakeNet(schedule) {
  'use strict';

  const encoder = new TextEncoder();
  const PIECES_AHEAD = 4;
  let ops = new Map();
  let nextId = 0;

  const net = {
    requests: [],
    serviceRequests: [],
    events: [],
    violations: [],
    handler: null,
    services: Object.create(null),
    route(fn) { net.handler = fn; },
    service(app, fn) { net.services[app] = fn; },
    openOps() { return [...ops.values()].filter((op) => !op.ended).map((op) => op.id); },
    eventsOf(id) { return net.events.filter((e) => e[1] === id).map((e) => e[0]); },
    reset() {
      net.requests = [];
      net.serviceRequests = [];
      net.events = [];
      net.violations = [];
      net.handler = null;
      net.services = Object.create(null);
      ops = new Map();
    },
  };

  function violation(text) {
    net.violations.push(text);
  }

  function bytesOf(chunk) {
    if (typeof chunk === 'string') return encoder.encode(chunk);
    if (chunk instanceof Uint8Array) return chunk.slice();
    throw new Error(`fake net: a body chunk must be a string or a Uint8Array, got ${chunk}`);
  }

  function call(op, name, ...args) {
    try {
      op.callbacks[name](...args);
    } catch (e) {
      violation(`callback ${name} of op ${op.id} threw: ${e && e.stack ? e.stack : e}`);
    }
  }

  function checkInit(init, what, httpOnly) {
    if (typeof init !== 'object' || init === null) return violation(`${what}: init is not an object`);
    if (typeof init.method !== 'string' || init.method === '') violation(`${what}: bad method ${init.method}`);
    if (typeof init.url !== 'string' || !(httpOnly ? /^https?:\/\/[^/]/ : /^[a-z][a-z0-9+.-]*:/i).test(init.url)) {
      violation(`${what}: bad url ${init.url}`);
    }
    if (typeof init.url === 'string' && init.url.includes('#')) violation(`${what}: url has a fragment: ${init.url}`);
    if (!Array.isArray(init.headers) || init.headers.length % 2 !== 0 ||
        !init.headers.every((p) => typeof p === 'string')) {
      violation(`${what}: headers must be a flat [name, value, ...] list of strings`);
    }
    if (init.body !== null && !(init.body instanceof Uint8Array)) violation(`${what}: body must be a Uint8Array or null`);
    if (typeof init.timeoutMs !== 'number') violation(`${what}: timeoutMs must be a number`);
    return undefined;
  }

  // The natives take and give header lines as a flat [name, value, ...] list; the scripts and the
  // recorded inits use [name, value] pairs.
  function asPairs(init) {
    const pairs = [];
    for (let i = 0; i < init.headers.length; i += 2) pairs.push([init.headers[i], init.headers[i + 1]]);
    return { ...init, headers: pairs };
  }
  function flat(pairs) {
    return pairs.flatMap((p) => [p[0], p[1]]);
  }

  function fetchStart(rawInit, callbacks) {
    checkInit(rawInit, 'fetchStart', true);
    const init = asPairs(rawInit);
    for (const name of ['onHead', 'onChunk', 'onEnd', 'onError']) {
      if (typeof callbacks?.[name] !== 'function') violation(`fetchStart: callbacks.${name} is not a function`);
    }
    const id = ++nextId;
    const op = { id, init, callbacks, ended: false, headSent: false, pulling: 0, script: null, next: 0 };
    ops.set(id, op);
    net.requests.push(init);
    net.events.push(['start', id, init.method, init.url]);
    schedule(() => {
      if (op.ended) return;
      let script;
      try {
        script = net.handler !== null
          ? net.handler(init, id)
          : { error: { message: `fake net: no route for ${init.url}`, kind: 'network' } };
      } catch (e) {
        script = { error: { message: `fake net: the route threw: ${e && e.message}`, kind: 'network' } };
      }
      Promise.resolve(script).then((s) => begin(op, s || {}));
    });
    return id;
  }

  function begin(op, s) {
    if (op.ended) return;
    op.script = s;
    const deliver = () => {
      if (op.ended || s.hang === 'head') return;
      if (s.error && (s.error.at === undefined || s.error.at === 'head')) {
        op.ended = true;
        net.events.push(['error', op.id, s.error.kind]);
        call(op, 'onError', s.error.message, s.error.kind);
        return;
      }
      op.headSent = true;
      const status = s.status ?? 200;
      net.events.push(['head', op.id, status]);
      call(op, 'onHead', status, s.statusText ?? '', flat(s.headers ?? []));
    };
    schedule(deliver, s.delayMs ?? 0);
  }

  function fetchPull(id) {
    const op = ops.get(id);
    if (op === undefined) return violation(`fetchPull(${id}): unknown op`);
    if (op.ended) return violation(`fetchPull(${id}) after the op ended`);
    if (!op.headSent) return violation(`fetchPull(${id}) before onHead`);
    // The host reads at most PIECES_AHEAD pieces ahead of what it delivered (kFetchPiecesAhead).
    if (op.pulling >= PIECES_AHEAD) {
      return violation(`fetchPull(${id}) while ${op.pulling} pulls are outstanding`);
    }
    op.pulling++;
    net.events.push(['pull', id]);
    const s = op.script;
    schedule(() => {
      if (op.ended) return; // aborted meanwhile: fetchAbort answers
      const i = op.next;
      if (s.hang === i) return;
      op.pulling--;
      const chunks = s.body ?? [];
      if (s.error && s.error.at === i) {
        op.ended = true;
        net.events.push(['error', id, s.error.kind]);
        call(op, 'onError', s.error.message, s.error.kind);
      } else if (i < chunks.length) {
        op.next++;
        const bytes = bytesOf(chunks[i]);
        net.events.push(['chunk', id, bytes.length]);
        call(op, 'onChunk', bytes);
      } else {
        op.ended = true;
        net.events.push(['end', id]);
        call(op, 'onEnd');
      }
    }, s.chunkDelayMs ?? 0);
    return undefined;
  }

  function fetchAbort(id) {
    net.events.push(['abort', id]);
    const op = ops.get(id);
    if (op === undefined || op.ended) return;
    op.ended = true;
    schedule(() => {
      net.events.push(['error', id, 'aborted']);
      call(op, 'onError', 'The operation was aborted', 'aborted');
    });
  }

  function serviceFetch(app, rawInit, callbacks) {
    if (typeof app !== 'string') violation(`serviceFetch: app must be a string, got ${app}`);
    checkInit(rawInit, 'serviceFetch', false);
    const init = asPairs(rawInit);
    for (const name of ['onResponse', 'onError']) {
      if (typeof callbacks?.[name] !== 'function') violation(`serviceFetch: callbacks.${name} is not a function`);
    }
    net.serviceRequests.push([app, init]);
    const op = { id: `service:${app}`, callbacks };
    schedule(() => {
      const fn = net.services[app];
      let answer;
      try {
        answer = fn === undefined ? Promise.reject(new Error(`no app named ${app}`)) : fn(init);
      } catch (e) {
        answer = Promise.reject(e);
      }
      Promise.resolve(answer).then(
        (r) => schedule(() => call(op, 'onResponse', r.status ?? 200, r.statusText ?? '', flat(r.headers ?? []),
          bytesOf(r.body ?? ''))),
        (e) => schedule(() => call(op, 'onError', String(e && e.message !== undefined ? e.message : e))),
      );
    });
  }

  return { net, natives: { fetchStart, fetchPull, fetchAbort, serviceFetch } };
})

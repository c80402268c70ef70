// Entry point of the web runtime bundle (build/gen/web_runtime.js). Every module installs the
// globals of its API family when it is evaluated; the order below is the evaluation order, and
// the comments say where it matters. Finally, host.dispatch and host.createEnv are handed to C++.
import { host } from './host.js';            // first: takes __isolane_host off the global
import './domexception.js';                  // before the streams and event-target libraries
import './console.js';
import './encoding.js';                      // before whatwg-url, which needs TextEncoder
import './url.js';
import './url_pattern.js';                  // after url.js: it uses the global URL
import './base64.js';
import './events.js';
import './abort.js';
import './timers.js';
import './performance.js';
import './navigator.js';
import './crypto.js';
import './streams.js';                       // before structured_clone.js (see streams.js)
import './structured_clone.js';
import './blob.js';                         // after streams.js: Blob.prototype.stream
import './form_data.js';
import './compression.js';
import './text_streams.js';
import './headers.js';
import './request.js';
import './response.js';
import './fetch.js';                         // the global fetch()
import { installWasmStreaming } from './wasm_streaming.js';
import { createEnv } from './bindings.js';
import { dispatch } from './dispatch.js';
import { installCodeMode, runExecution } from './codemode.js';
import { defineGlobal } from './util.js';

// Workers (and browsers' workers) expose the global object as `self`.
defineGlobal('self', globalThis);

host.dispatch = dispatch;
host.createEnv = createEnv;
host.installCodeMode = installCodeMode;
host.runExecution = runExecution;
// Called by C++ on each new context, after V8 added what a snapshot cannot hold (WebAssembly).
host.perContext = installWasmStreaming;

// whatwg-url maps non-ASCII host names with tr46 (IDNA), whose module builds a 190 KB mapping
// table when it is first required. Required at start-up, that table would be tens of thousands of
// objects in every context made from the runtime snapshot, and in the time to make each; most
// apps never parse an internationalized host. The build points `tr46` here (src/CMakeLists.txt),
// and the real module is made on first use, once per context. Hand-written glue.
'use strict';

let tr46 = null;
function real() {
  if (tr46 === null) tr46 = require('../../../node_modules/tr46/index.js');
  return tr46;
}

module.exports = {
  toASCII(domain, options) {
    return real().toASCII(domain, options);
  },
  toUnicode(domain, options) {
    return real().toUnicode(domain, options);
  },
};

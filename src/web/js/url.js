// URL and URLSearchParams: whatwg-url, the reference implementation of the WHATWG URL standard
// (IDNA via tr46). This module also gives Request/Response a cheap way to parse absolute URLs.
import './encoding.js'; // whatwg-url does `new TextEncoder()` when it loads
import { URL, URLSearchParams, parseURL, serializeURL } from 'whatwg-url';
import { registerInspector, shownAs } from './inspect.js';
import { defineGlobal, setName } from './util.js';

setName(URL, 'URL');
setName(URLSearchParams, 'URLSearchParams');
defineGlobal('URL', URL);
defineGlobal('URLSearchParams', URLSearchParams);

// Most URLs a server sees are already in the form the URL parser would serialize them to:
// http(s), lowercase ASCII host (not IDNA "xn--", not a number the IPv4 parser would rewrite, or a
// canonical dotted quad), no userinfo, a non-default port without leading zeros, a path and query
// made of characters the parser leaves alone, no dot segments, no fragment. For those the
// serialization is the input itself, so the full state machine can be skipped. Anything else
// (including anything this regex is unsure about) takes the full parser.
const DEC_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const FAST_URL = new RegExp(
  '^(https?)://' +
  `(?:(?:[a-z0-9-]+\\.)*[a-z][a-z0-9-]*|${DEC_OCTET}(?:\\.${DEC_OCTET}){3})` +
  '(?::([1-9][0-9]{0,4}))?' +
  "/[!$-;=@-\\[\\]_a-z|~]*" +                  // path: printable ASCII minus " # < > ? \\ ^ ` { }
  "(?:\\?[!$-&(-;=?-~]*)?$",                   // query: printable ASCII minus " # ' < >
);
const NEEDS_FULL_PATH_PARSE = /\/\.|%2e|xn--/i;

// Parses an absolute URL string. Returns the serialized URL, or null when it does not parse.
// Throws TypeError when it has credentials (Fetch forbids them in Request URLs) if asked.
export function parseAbsoluteURL(input, rejectCredentials, context) {
  const m = FAST_URL.exec(input);
  if (m !== null && !NEEDS_FULL_PATH_PARSE.test(input)) {
    const port = m[2];
    if (port === undefined) return input;
    const n = +port;
    if (n <= 65535 && n !== (m[1] === 'http' ? 80 : 443)) return input;
  }
  const record = parseURL(input);
  if (record === null) return null;
  if (rejectCredentials && (record.username !== '' || record.password !== '')) {
    throw new TypeError(`${context}: Request cannot be constructed from a URL that includes credentials: ${input}`);
  }
  return serializeURL(record);
}

// console.log(url) shows the parts, as Node does.
const hrefGetter = Object.getOwnPropertyDescriptor(URL.prototype, 'href').get;
registerInspector(URL.prototype, (url) => {
  try { hrefGetter.call(url); } catch { return undefined; }
  const props = {};
  for (const key of ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname',
    'port', 'pathname', 'search', 'searchParams', 'hash']) {
    props[key] = url[key];
  }
  return shownAs(URL.prototype, props);
});
const paramsSize = Object.getOwnPropertyDescriptor(URLSearchParams.prototype, 'size').get;
registerInspector(URLSearchParams.prototype, (params, format) => {
  try { paramsSize.call(params); } catch { return undefined; }
  const entries = [...params].map(([k, v]) => `${format(k)} => ${format(v)}`);
  return entries.length === 0 ? 'URLSearchParams {}' : `URLSearchParams { ${entries.join(', ')} }`;
});

export { URL, URLSearchParams };

// Form bodies: FormData to multipart/form-data bytes (HTML §4.10.21.8), and the body of a
// request or response back to FormData for formData() (Fetch §5.3: multipart/form-data per
// RFC 7578, and application/x-www-form-urlencoded), plus the Content-Type parsing both need.
// Hand-written: the npm multipart parsers are Node stream modules; this one parses whole bytes,
// which the body limits bound before it runs.
import { host } from './host.js';
import { blobBytes, blobType, fileInfo, makeFile, normalizeType } from './blob.js';
import { formDataEntries, makeFormData } from './form_data.js';
import { parseUrlencodedBytes } from './urlencoded.js';
import {
  bytesToLatin1, concatBytes, copyBytes, isHttpWhitespace, latin1ToBytes, replaceLineBreaks,
  trimHttpWhitespace,
} from './util.js';
import {
  ArrayPrototypeJoin, ArrayPrototypePush, DateNow, ObjectKeys, RegExpPrototypeExec,
  StringPrototypeCharCodeAt, StringPrototypeIndexOf, StringPrototypeSlice,
  StringPrototypeToLowerCase, TypeErrorCtor, TypedArrayPrototypeGetByteLength, Uint8ArrayCtor,
} from './primordials.js';

// Content-Type's essence (lower case) and parameters (names lower case, quoted values unquoted,
// a backslash escaping the next character unless `backslashEscapes` is false: multipart's
// Content-Disposition, where browsers send `filename="C:\\dir\\a.txt"` with the backslashes as
// they are). Returns null when there is no type/subtype.
export function parseContentType(value, backslashEscapes = true) {
  if (typeof value !== 'string') return null;
  const semi = StringPrototypeIndexOf(value, ';');
  const essence = StringPrototypeToLowerCase(trimHttpWhitespace(semi < 0 ? value : StringPrototypeSlice(value, 0, semi)));
  const slash = StringPrototypeIndexOf(essence, '/');
  if (slash <= 0 || slash === essence.length - 1) return null;
  const params = { __proto__: null };
  let i = semi < 0 ? value.length : semi + 1;
  while (i < value.length) {
    while (i < value.length && isHttpWhitespace(StringPrototypeCharCodeAt(value, i))) i++;
    // The parameter's name runs to '=' or ';' (one forward scan: searching for '=' past the
    // next ';' would make a value of many bare ';' quadratic).
    let eq = i;
    while (eq < value.length) {
      const c = StringPrototypeCharCodeAt(value, eq);
      if (c === 59 || c === 61) break;
      eq++;
    }
    if (eq >= value.length || StringPrototypeCharCodeAt(value, eq) === 59) {
      i = eq + 1; // no '=' in this parameter: skipped
      continue;
    }
    const name = StringPrototypeToLowerCase(StringPrototypeSlice(value, i, eq));
    i = eq + 1;
    let v;
    if (StringPrototypeCharCodeAt(value, i) === 34) { // a quoted-string
      const pieces = [];
      i++;
      while (i < value.length && StringPrototypeCharCodeAt(value, i) !== 34) {
        if (backslashEscapes && StringPrototypeCharCodeAt(value, i) === 92 && i + 1 < value.length) i++;
        ArrayPrototypePush(pieces, value[i]);
        i++;
      }
      v = ArrayPrototypeJoin(pieces, '');
      const end = StringPrototypeIndexOf(value, ';', i);
      i = end < 0 ? value.length : end + 1;
    } else {
      const end = StringPrototypeIndexOf(value, ';', i);
      v = trimHttpWhitespace(StringPrototypeSlice(value, i, end < 0 ? value.length : end));
      i = end < 0 ? value.length : end + 1;
    }
    if (name !== '' && !(name in params)) params[name] = v;
  }
  return { essence, params };
}

// Names and filenames in a part's header: CR, LF and '"' percent-encoded, as browsers send them.
function escapeName(s) {
  const pieces = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = StringPrototypeCharCodeAt(s, i);
    const escaped = c === 10 ? '%0A' : c === 13 ? '%0D' : c === 34 ? '%22' : null;
    if (escaped === null) continue;
    ArrayPrototypePush(pieces, StringPrototypeSlice(s, from, i), escaped);
    from = i + 1;
  }
  if (from === 0) return s;
  ArrayPrototypePush(pieces, StringPrototypeSlice(s, from));
  return ArrayPrototypeJoin(pieces, '');
}

function unescapeName(s) {
  if (StringPrototypeIndexOf(s, '%') < 0) return s;
  const pieces = [];
  let from = 0;
  for (let i = 0; i + 2 < s.length; i++) {
    if (StringPrototypeCharCodeAt(s, i) !== 37) continue;
    const code = StringPrototypeSlice(s, i + 1, i + 3);
    const ch = code === '0A' || code === '0a' ? '\n' : code === '0D' || code === '0d' ? '\r' : code === '22' ? '"' : null;
    if (ch === null) continue;
    ArrayPrototypePush(pieces, StringPrototypeSlice(s, from, i), ch);
    from = i + 3;
    i += 2;
  }
  ArrayPrototypePush(pieces, StringPrototypeSlice(s, from));
  return ArrayPrototypeJoin(pieces, '');
}

function newBoundary() {
  const random = new Uint8ArrayCtor(16);
  host.getRandomValues(random);
  const digits = '0123456789abcdef';
  let hex = '';
  for (let i = 0; i < 16; i++) hex += digits[random[i] >> 4] + digits[random[i] & 15];
  return `----isolaneFormBoundary${hex}`;
}

// FormData -> { bytes, contentType }.
export function serializeFormData(formData) {
  const entries = formDataEntries(formData);
  const boundary = newBoundary();
  const chunks = [];
  let total = 0;
  const add = (bytes) => {
    ArrayPrototypePush(chunks, bytes);
    total += TypedArrayPrototypeGetByteLength(bytes);
  };
  for (let i = 0; i < entries.length; i++) {
    const name = escapeName(replaceLineBreaks(entries[i][0], '\r\n'));
    const value = entries[i][1];
    if (typeof value === 'string') {
      add(host.utf8Encode(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${replaceLineBreaks(value, '\r\n')}\r\n`));
    } else {
      const type = blobType(value) || 'application/octet-stream';
      const info = fileInfo(value);
      const file = escapeName(info === null ? 'blob' : info.name);
      add(host.utf8Encode(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${file}"\r\nContent-Type: ${type}\r\n\r\n`));
      add(blobBytes(value));
      add(host.utf8Encode('\r\n'));
    }
  }
  add(host.utf8Encode(`--${boundary}--\r\n`));
  return { bytes: concatBytes(chunks, total), contentType: `multipart/form-data; boundary=${boundary}` };
}

function fail(reason) {
  throw new TypeErrorCtor(`Could not parse content as FormData: ${reason}.`);
}

// A part's header block (latin1 text) -> { name, filename (or null), type (or null) }.
function parsePartHeaders(text) {
  let disposition = null;
  let type = null;
  let from = 0;
  while (from < text.length) {
    let end = StringPrototypeIndexOf(text, '\r\n', from);
    if (end < 0) end = text.length;
    const line = StringPrototypeSlice(text, from, end);
    from = end + 2;
    const colon = StringPrototypeIndexOf(line, ':');
    if (colon <= 0) fail('a part has a malformed header line');
    const name = StringPrototypeToLowerCase(trimHttpWhitespace(StringPrototypeSlice(line, 0, colon)));
    const value = trimHttpWhitespace(StringPrototypeSlice(line, colon + 1));
    if (name === 'content-disposition') disposition = value;
    else if (name === 'content-type') type = value;
  }
  if (disposition === null) fail('a part has no Content-Disposition');
  // "form-data; name=...": parsed as a media type's parameters.
  const parsed = parseContentType(`x/${disposition}`, false);
  if (parsed === null || parsed.essence !== 'x/form-data' || !('name' in parsed.params)) {
    fail('a part\'s Content-Disposition is not form-data with a name');
  }
  const decode = (s) => unescapeName(host.utf8Decode(latin1ToBytes(s), false));
  return {
    name: decode(parsed.params.name),
    filename: 'filename' in parsed.params ? decode(parsed.params.filename) : null,
    type,
  };
}

// multipart/form-data bytes -> entries. Throws TypeError when the body is not well formed.
function parseMultipart(bytes, boundary) {
  if (boundary.length === 0 || boundary.length > 70) fail('the boundary is missing or longer than 70 characters');
  // The bytes as latin1 text, so that the boundary search is String's indexOf.
  const text = bytesToLatin1(bytes);
  const delimiter = `--${boundary}`;
  const entries = [];
  // The first delimiter: at the start, or after a preamble ending in CR LF.
  let at = StringPrototypeSlice(text, 0, delimiter.length) === delimiter
    ? 0 : StringPrototypeIndexOf(text, `\r\n${delimiter}`);
  if (at < 0) fail('no boundary delimiter');
  if (at > 0) at += 2;
  for (;;) {
    let i = at + delimiter.length;
    if (StringPrototypeSlice(text, i, i + 2) === '--') return entries; // the close delimiter
    while (StringPrototypeCharCodeAt(text, i) === 32 || StringPrototypeCharCodeAt(text, i) === 9) i++;
    if (StringPrototypeSlice(text, i, i + 2) !== '\r\n') fail('a boundary delimiter is not followed by CR LF');
    i += 2;
    const headersEnd = StringPrototypeIndexOf(text, '\r\n\r\n', i);
    if (headersEnd < 0) fail('a part\'s headers do not end');
    const head = parsePartHeaders(StringPrototypeSlice(text, i, headersEnd));
    const bodyStart = headersEnd + 4;
    const next = StringPrototypeIndexOf(text, `\r\n${delimiter}`, bodyStart);
    if (next < 0) fail('the body ends before its close delimiter');
    const body = copyBytes(bytes, bodyStart, next);
    if (head.filename !== null) {
      ArrayPrototypePush(entries, [head.name, makeFile(body, head.filename, fileType(head.type), DateNow())]);
    } else {
      ArrayPrototypePush(entries, [head.name, host.utf8Decode(body, false)]);
    }
    at = next + 2;
  }
}

// A file part's type: its Content-Type, "text/plain" when it has none (HTML's parser), as a
// Blob's type (printable ASCII, lower case, else '').
function fileType(type) {
  if (type === null) return 'text/plain';
  return parseContentType(type) === null ? '' : normalizeType(type);
}

// A MIME type as the MIME Sniffing standard serialises it: essence, then `;name=value` for each
// parameter, the value quoted when it is not a token.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export function serializeMimeType(parsed) {
  let out = parsed.essence;
  const names = ObjectKeys(parsed.params);
  for (let i = 0; i < names.length; i++) {
    const v = parsed.params[names[i]];
    if (RegExpPrototypeExec(TOKEN, v) !== null) {
      out += `;${names[i]}=${v}`;
    } else {
      let quoted = '';
      for (let j = 0; j < v.length; j++) {
        const c = StringPrototypeCharCodeAt(v, j);
        quoted += c === 34 || c === 92 ? `\\${v[j]}` : v[j];
      }
      out += `;${names[i]}="${quoted}"`;
    }
  }
  return out;
}

// The body's bytes and Content-Type -> FormData, or a TypeError.
export function parseFormBody(bytes, contentType) {
  const parsed = parseContentType(contentType);
  if (parsed !== null && parsed.essence === 'multipart/form-data') {
    const boundary = parsed.params.boundary;
    if (boundary === undefined) fail('multipart/form-data without a boundary');
    return makeFormData(parseMultipart(bytes, boundary));
  }
  if (parsed !== null && parsed.essence === 'application/x-www-form-urlencoded') {
    // The URL Standard's parser on the bytes (each name and value UTF-8 decoded on its own), its
    // list of new [name, value] pairs the FormData's own.
    return makeFormData(parseUrlencodedBytes(bytes));
  }
  fail(`the Content-Type is ${contentType === null ? 'missing' : `"${contentType}"`}, not multipart/form-data or application/x-www-form-urlencoded`);
}

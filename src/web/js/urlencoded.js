// application/x-www-form-urlencoded (URL Standard §5.1, §5.2): the parser and the serializer, for
// formData() (multipart.js) and for URLSearchParams (url.js puts them in place of whatwg-url's).
// Hand-written: whatwg-url's parser makes five byte arrays and two UTF-8 decoder calls for every
// name=value pair (1 MB of `a=1&a=1...` cost 1.3 s of a request's 2 s CPU budget), and its
// serializer encodes each code point with its own TextEncoder call. These scan the text once, hand
// out substrings of it, and percent-decode and UTF-8 decode only the names and values that need it.
import { host } from './host.js';
import { bytesToLatin1, copyBytes } from './util.js';
import {
  ArrayPrototypePush, StringPrototypeCharCodeAt, StringPrototypeSlice, StringPrototypeToWellFormed,
  TypedArrayPrototypeGetBuffer, TypedArrayPrototypeGetByteLength, Uint8ArrayCtor,
} from './primordials.js';

// What a name or value holds, as the scan finds it: what decoding it takes.
const PLUS = 1;    // a '+' (a space)
const PERCENT = 2; // a '%' (maybe an escape)
const HIGH = 4;    // a code unit above 0x7F

// The value of each ASCII hex digit byte, -1 for every other byte.
const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x41 + i] = 10 + i;
  HEX[0x61 + i] = 10 + i;
}

// The name or value text[start, end) decoded: '+' as space, percent-decoded, UTF-8 decoded
// (without BOM: a leading U+FEFF stays; invalid sequences become U+FFFD). `latin1` says the text's
// code units are the bytes themselves, not a string to UTF-8 encode first. `scratch` holds the
// parse's buffer for percent-decoded bytes, made at the first part that needs one.
function decodePart(text, start, end, flags, latin1, scratch) {
  if (flags === 0) return StringPrototypeSlice(text, start, end);
  if ((flags & PERCENT) === 0 && ((flags & HIGH) === 0 || !latin1)) {
    // No escapes, and the code units are ASCII or already a string: UTF-8 encoding then decoding
    // gives them back, lone surrogates as U+FFFD.
    let s;
    if ((flags & PLUS) === 0) {
      s = StringPrototypeSlice(text, start, end);
    } else {
      s = '';
      let from = start;
      for (let i = start; i < end; i++) {
        if (StringPrototypeCharCodeAt(text, i) !== 0x2b) continue;
        s += `${StringPrototypeSlice(text, from, i)} `;
        from = i + 1;
      }
      s += StringPrototypeSlice(text, from, end);
    }
    return (flags & HIGH) === 0 ? s : StringPrototypeToWellFormed(s);
  }
  if (!latin1 && (flags & HIGH) !== 0) {
    // Escapes among characters that UTF-8 encode to several bytes: the bytes first.
    const bytes = host.utf8Encode(StringPrototypeSlice(text, start, end));
    const w = percentDecode(bytes, bytes, TypedArrayPrototypeGetByteLength(bytes));
    return host.utf8Decode(copyBytes(bytes, 0, w), false);
  }
  // The code units are the bytes (latin1 text, or ASCII): decoded from the text into the scratch
  // buffer.
  if (scratch.bytes === null || TypedArrayPrototypeGetByteLength(scratch.bytes) < end - start) {
    scratch.bytes = new Uint8ArrayCtor(text.length);
  }
  const out = scratch.bytes;
  let high = false;
  let w = 0;
  for (let r = start; r < end; r++) {
    let b = StringPrototypeCharCodeAt(text, r);
    if (b === 0x2b) {
      b = 0x20;
    } else if (b === 0x25 && r + 2 < end) {
      const hi = HEX[StringPrototypeCharCodeAt(text, r + 1) & 0xff];
      const lo = HEX[StringPrototypeCharCodeAt(text, r + 2) & 0xff];
      if (hi >= 0 && lo >= 0) {
        b = hi * 16 + lo;
        r += 2;
      }
    }
    if (b > 0x7f) high = true;
    out[w++] = b;
  }
  const view = new Uint8ArrayCtor(TypedArrayPrototypeGetBuffer(out), 0, w);
  return high ? host.utf8Decode(view, false) : bytesToLatin1(view);
}

// '+' to space, then percent-decoding (so "%2B" stays a '+'), of input[0, length) into out (which
// may be `input`: the output is never longer). Returns the output's length.
function percentDecode(input, out, length) {
  let w = 0;
  for (let r = 0; r < length; r++) {
    let b = input[r];
    if (b === 0x2b) {
      b = 0x20;
    } else if (b === 0x25 && r + 2 < length && HEX[input[r + 1]] >= 0 && HEX[input[r + 2]] >= 0) {
      b = HEX[input[r + 1]] * 16 + HEX[input[r + 2]];
      r += 2;
    }
    out[w++] = b;
  }
  return w;
}

// The parser on text: the name-value pairs, a new list of new [name, value] arrays. One forward
// scan finds each '&', the first '=' before it, and what its name and value need.
function parse(text, latin1) {
  const list = [];
  const length = text.length;
  const scratch = { bytes: null };
  let start = 0;
  while (start < length) {
    let eq = -1;
    let nameFlags = 0;
    let flags = 0;
    let end = start;
    for (; end < length; end++) {
      const c = StringPrototypeCharCodeAt(text, end);
      if (c === 0x26) break; // '&'
      if (c === 0x3d && eq < 0) { // the first '='
        eq = end;
        nameFlags = flags;
        flags = 0;
      } else if (c === 0x2b) {
        flags |= PLUS;
      } else if (c === 0x25) {
        flags |= PERCENT;
      } else if (c > 0x7f) {
        flags |= HIGH;
      }
    }
    if (end > start) { // an empty sequence is skipped
      ArrayPrototypePush(list, eq < 0
        ? [decodePart(text, start, end, flags, latin1, scratch), '']
        : [decodePart(text, start, eq, nameFlags, latin1, scratch),
          decodePart(text, eq + 1, end, flags, latin1, scratch)]);
    }
    start = end + 1;
  }
  return list;
}

// The application/x-www-form-urlencoded parser on bytes (a body).
export function parseUrlencodedBytes(u8) {
  return parse(bytesToLatin1(u8), true);
}

// The urlencoded string parser: the parser on the string's UTF-8 encoding.
export function parseUrlencodedString(s) {
  return parse(s, false);
}

// The serializer's output for each ASCII code unit: null where it is kept (alphanumerics and
// *-._), '+' for a space, else its percent-encoding (the form-urlencoded percent-encode set).
const HEX_DIGITS = '0123456789ABCDEF';
const PERCENT_BYTE = [];
for (let b = 0; b < 256; b++) PERCENT_BYTE[b] = `%${HEX_DIGITS[b >> 4]}${HEX_DIGITS[b & 15]}`;
const ASCII_OUT = [];
for (let c = 0; c < 128; c++) {
  const keep = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) ||
    c === 0x2a || c === 0x2d || c === 0x2e || c === 0x5f;
  ASCII_OUT[c] = keep ? null : c === 0x20 ? '+' : PERCENT_BYTE[c];
}

// The form-urlencoded encoding of `s`: runs of kept characters as they are, every other character
// as the percent-encoding of its UTF-8 bytes (a lone surrogate as U+FFFD's). Built by
// concatenation, which V8 does with ropes (cheaper than joining a list of many short pieces).
function encode(s) {
  let out = '';
  let from = 0;
  const length = s.length;
  for (let i = 0; i < length; i++) {
    const c = StringPrototypeCharCodeAt(s, i);
    if (c < 0x80 && ASCII_OUT[c] === null) continue;
    if (i > from) out += StringPrototypeSlice(s, from, i);
    if (c < 0x80) {
      out += ASCII_OUT[c];
    } else if (c < 0x800) {
      out += PERCENT_BYTE[0xc0 | (c >> 6)] + PERCENT_BYTE[0x80 | (c & 63)];
    } else {
      let cp = c;
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < length ? StringPrototypeCharCodeAt(s, i + 1) : 0;
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
        } else {
          cp = 0xfffd;
        }
      }
      if (cp < 0x10000) {
        out += PERCENT_BYTE[0xe0 | (cp >> 12)] + PERCENT_BYTE[0x80 | ((cp >> 6) & 63)] +
          PERCENT_BYTE[0x80 | (cp & 63)];
      } else {
        out += PERCENT_BYTE[0xf0 | (cp >> 18)] + PERCENT_BYTE[0x80 | ((cp >> 12) & 63)] +
          PERCENT_BYTE[0x80 | ((cp >> 6) & 63)] + PERCENT_BYTE[0x80 | (cp & 63)];
      }
    }
    from = i + 1;
  }
  if (from === 0) return s;
  return from < length ? out + StringPrototypeSlice(s, from) : out;
}

// The application/x-www-form-urlencoded serializer (UTF-8) of a list of [name, value] pairs of
// strings.
export function serializeUrlencoded(list) {
  let out = '';
  for (let i = 0; i < list.length; i++) {
    if (i !== 0) out += '&';
    out += `${encode(list[i][0])}=${encode(list[i][1])}`;
  }
  return out;
}

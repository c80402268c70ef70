// atob / btoa (HTML "forgiving-base64"). Hand-written: it is a few lines over a lookup table, and
// the error behaviour (InvalidCharacterError DOMException) is specific to these two globals.
import { DOMException } from './domexception.js';
import { exposeFunction, requireArgs } from './util.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DECODE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) DECODE[ALPHABET.charCodeAt(i)] = i;
const ASCII_WS = /[\t\n\f\r ]+/g;
const HAS_ASCII_WS = /[\t\n\f\r ]/;
const CHUNK = 8192; // code units per String.fromCharCode.apply call

function invalid(message) {
  return new DOMException(message, 'InvalidCharacterError');
}

function atob(data) {
  requireArgs(arguments.length, 1, "Failed to execute 'atob'");
  let s = `${data}`;
  if (HAS_ASCII_WS.test(s)) s = s.replace(ASCII_WS, '');
  let len = s.length;
  if (len % 4 === 0 && len > 0 && s.charCodeAt(len - 1) === 0x3d) {
    len -= s.charCodeAt(len - 2) === 0x3d ? 2 : 1;
  }
  if (len % 4 === 1) throw invalid("Failed to execute 'atob': The string to be decoded is not correctly encoded.");

  const out = [];
  let text = '';
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? DECODE[c] : -1;
    if (v < 0) throw invalid("Failed to execute 'atob': The string to be decoded is not correctly encoded.");
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((buffer >> bits) & 0xff);
      if (out.length === CHUNK) { text += String.fromCharCode.apply(null, out); out.length = 0; }
    }
  }
  // Leftover bits (4 or 2) are discarded, as the spec says.
  return text + String.fromCharCode.apply(null, out);
}

function btoa(data) {
  requireArgs(arguments.length, 1, "Failed to execute 'btoa'");
  const s = `${data}`;
  const len = s.length;
  let out = '';
  let i = 0;
  for (; i + 2 < len; i += 3) {
    const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
    if ((a | b | c) > 0xff) break;
    const n = (a << 16) | (b << 8) | c;
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  for (let j = i; j < len; j++) {
    if (s.charCodeAt(j) > 0xff) {
      throw invalid("Failed to execute 'btoa': The string to be encoded contains characters outside of the Latin1 range.");
    }
  }
  const rest = len - i;
  if (rest === 1) {
    const n = s.charCodeAt(i) << 16;
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + '==';
  } else if (rest === 2) {
    const n = (s.charCodeAt(i) << 16) | (s.charCodeAt(i + 1) << 8);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + '=';
  }
  return out;
}

exposeFunction(atob, 'atob');
exposeFunction(btoa, 'btoa');

export { atob, btoa };

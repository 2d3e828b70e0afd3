const encoder = new TextEncoder();
// ignoreBOM: a decoded U+FEFF at the start is data (decodeURIComponent keeps it too).
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
/** Hex digit values by byte, -1 for anything else. */
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;
/** Scratch space, grown to the longest string seen (bounded by the server's header size limit). */
let bytes = new Uint8Array(4096);

/**
 * One round of %-decoding that never throws, linear in the length of `s`: a long string takes one
 * native UTF-8 encode, one pass over the bytes that compacts the escapes and one native UTF-8
 * decode; a short one is decoded in JS (cheaper than three native calls).
 *
 * It equals `decodeURIComponent` wherever that does not throw. Where `decodeURIComponent` throws,
 * it does what the WHATWG URL standard's percent-decode does (URLSearchParams and most upstream
 * frameworks): a `%` not followed by two hex digits stays literal, and escaped bytes that are not
 * valid UTF-8 become U+FFFD (one per maximal invalid subpart). `+` is left alone.
 *
 * @example
 * percentDecode('a%20b%') // 'a b%'
 * percentDecode('%C3%A9%FF') // 'é\uFFFD'
 */
export function percentDecode(s: string): string {
  if (s.indexOf('%') === -1) return s;
  // Three native calls cost more than decoding a short string in JS (a parameter name, say).
  // A lone surrogate would not survive the native UTF-8 round trip; Node reads request targets as
  // Latin-1 and decoding never makes one, so only direct callers ever take that branch.
  return s.length <= SMALL || LONE_SURROGATE.test(s) ? decodeSmall(s) : decodeLarge(s);
}

/** Single-unit lookarounds only: no backtracking. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Up to this length a string is decoded in JS; longer ones natively. Both give the same result. */
const SMALL = 64;

/** A valid escape. A fixed count, no alternation: a match attempt never backtracks. */
const ESCAPE = /%[0-9A-Fa-f]{2}/;

function decodeLarge(s: string): string {
  // One native pass settles the common hostile case (a `%` in every other byte, none valid).
  if (!ESCAPE.test(s)) return s;
  // UTF-8 needs at most 3 bytes per UTF-16 code unit.
  if (bytes.length < s.length * 3) bytes = new Uint8Array(s.length * 3);
  const b = bytes;
  const len = encoder.encodeInto(s, b).written;
  let w = b.indexOf(37); // bytes before the first '%' stay where they are
  let r = w;
  while (r < len) {
    if (b[r] === 37 && r + 2 < len) {
      const hi = HEX[b[r + 1]!]!;
      const lo = HEX[b[r + 2]!]!;
      if ((hi | lo) >= 0) {
        b[w++] = (hi << 4) | lo;
        r += 3;
        continue;
      }
    }
    b[w++] = b[r++]!;
  }
  return decoder.decode(b.subarray(0, w));
}

/** The same decoding in JS: the WHATWG Encoding standard's UTF-8 decoder, one escaped byte at a time. */
function decodeSmall(s: string): string {
  let out = '';
  let needed = 0; // continuation bytes still expected
  let cp = 0;
  let lower = 0x80; // bounds of the next continuation byte: they exclude overlong forms,
  let upper = 0xbf; // surrogates and code points above U+10FFFF
  for (let i = 0; i < s.length;) {
    if (needed === 0) {
      // Literal text up to the next `%` is copied in one slice (a `%25` chain is one escape a round).
      const pct = s.indexOf('%', i);
      if (pct === -1) return out + s.slice(i);
      if (pct > i) out += s.slice(i, pct);
      i = pct;
    }
    const c = s.charCodeAt(i);
    const byte = c === 37 && i + 2 < s.length ? hexPair(s.charCodeAt(i + 1), s.charCodeAt(i + 2)) : -1;
    if (byte === -1 || (needed !== 0 && (byte < lower || byte > upper))) {
      // A literal or an invalid continuation ends the sequence so far: U+FFFD for it.
      if (needed !== 0) {
        out += '\uFFFD';
        needed = 0;
        lower = 0x80;
        upper = 0xbf;
        if (byte !== -1) continue; // the byte starts afresh
      }
      if (byte === -1) {
        out += s[i++];
        continue;
      }
    }
    i += 3;
    if (needed !== 0) {
      lower = 0x80;
      upper = 0xbf;
      cp = (cp << 6) | (byte & 0x3f);
      if (--needed === 0) out += String.fromCodePoint(cp);
    } else if (byte <= 0x7f) out += String.fromCharCode(byte);
    else if (byte >= 0xc2 && byte <= 0xdf) [needed, cp] = [1, byte & 0x1f];
    else if (byte >= 0xe0 && byte <= 0xef) {
      [needed, cp] = [2, byte & 0xf];
      if (byte === 0xe0) lower = 0xa0;
      if (byte === 0xed) upper = 0x9f;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      [needed, cp] = [3, byte & 0x7];
      if (byte === 0xf0) lower = 0x90;
      if (byte === 0xf4) upper = 0x8f;
    } else out += '\uFFFD';
  }
  return needed !== 0 ? out + '\uFFFD' : out;
}

function hexPair(a: number, b: number): number {
  const hi = a < 256 ? HEX[a]! : -1;
  const lo = b < 256 ? HEX[b]! : -1;
  return (hi | lo) < 0 ? -1 : (hi << 4) | lo;
}

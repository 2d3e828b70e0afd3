import { isUtf8 } from 'node:buffer';

// The one decoder of the guards: %-decoding as the WHATWG URL standard does it (never throws), its
// repetition under a budget, and the Unicode fold the strict level and the path check read.

// ignoreBOM: a decoded U+FEFF at the start is data (decodeURIComponent keeps it too).
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
/** Hex digit values by character code, -1 for anything else. */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;
/** Scratch space for escaped bytes, grown to the longest run seen (bounded by the header size limit). */
let scratch = new Uint8Array(256);

/** One escape anywhere: a text without one (a lone `%`, `%zz`) decodes to itself after one native test. */
const ESCAPE = /%[0-9A-Fa-f]{2}/;

/** The byte `%XX` at `i` of `s` stands for, or -1. */
function escapedByte(s: string, i: number): number {
  if (s.charCodeAt(i) !== 37) return -1;
  const a = s.charCodeAt(i + 1);
  const b = s.charCodeAt(i + 2);
  const hi = hexDigit(a);
  const lo = hexDigit(b);
  return (hi | lo) < 0 ? -1 : (hi << 4) | lo;
}

/** The value of the hex digit with character code `c`, or -1. */
function hexDigit(c: number): number {
  return c < 128 ? HEX[c]! : -1;
}

/** The number the `n` hex digits at `a[i]` (bytes or code units, none at `end` or past it) spell, or -1. */
export function hexAt(a: ArrayLike<number>, i: number, n: number, end: number): number {
  if (i + n > end) return -1;
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const d = hexDigit(a[k]!);
    if (d === -1) return -1;
    v = (v << 4) | d;
  }
  return v;
}

/**
 * One round of %-decoding that never throws, linear in the length of `s`. It equals
 * `decodeURIComponent` wherever that does not throw; where that throws it does what the WHATWG URL
 * standard's percent-decode does (URLSearchParams and most upstream frameworks): a `%` not followed
 * by two hex digits stays literal, escaped bytes that are not UTF-8 become U+FFFD (one per maximal
 * invalid subpart). `+` is left alone. A run of ASCII escapes costs no native call.
 *
 * @example
 * percentDecode('a%20b%') // 'a b%'
 * percentDecode('%C3%A9%FF') // 'é\uFFFD'
 */
export function percentDecode(s: string): string {
  let i = s.indexOf('%');
  if (i === -1 || !ESCAPE.test(s)) return s;
  let out = '';
  let from = 0;
  while (i !== -1) {
    let n = 0;
    let ascii = true;
    let run = '';
    for (let b = escapedByte(s, i); b !== -1; b = escapedByte(s, (i += 3))) {
      if (n === scratch.length) {
        const grown = new Uint8Array(n * 2);
        grown.set(scratch);
        scratch = grown;
      }
      scratch[n++] = b;
      if (b < 0x80) run += String.fromCharCode(b);
      else ascii = false;
    }
    if (n === 0) {
      i = s.indexOf('%', i + 1); // a literal `%`
      continue;
    }
    // Literal text before the run, then the run (its bytes escaped the same way: one UTF-8 text).
    out += s.slice(from, i - 3 * n) + (ascii ? run : utf8.decode(scratch.subarray(0, n)));
    from = i;
    i = s.indexOf('%', i);
  }
  return out + s.slice(from);
}

/** Whether character code `c` is an ASCII letter. */
export function isLetter(c: number): boolean {
  return (c | 0x20) >= 97 && (c | 0x20) <= 122;
}

/** Whether character code `c` is an ASCII letter or digit (base62). */
export function isBase62(c: number): boolean {
  return (c >= 48 && c <= 57) || isLetter(c);
}

/**
 * `s` lowercased, letters and digits only (how key-like names and secrets are compared). Of the
 * non-ASCII characters only two lowercase to an ASCII letter (the Kelvin sign to `k`, `\u0130` to
 * `i` and a combining dot): they count as that letter.
 */
export function squash(s: string): string {
  return s.toLowerCase().replace(NOT_ALNUM, '');
}
const NOT_ALNUM = /[^a-z0-9]+/g;

/** Rounds of decoding at most, at every level: a text still changing after them is undecided. */
export const DECODE_ROUNDS = 8;

/** The budget for decoding a text of `length` characters: 2 characters decoded per character. */
export function decodeBudget(length: number): DecodeBudget {
  return { rounds: DECODE_ROUNDS, left: 2 * length + 2048, undecided: false };
}

/** What `decodeRepeatedly` may spend over every string it decodes, and whether one stayed undecided. */
export interface DecodeBudget {
  rounds: number;
  /** Characters left to decode. */
  left: number;
  undecided: boolean;
}

/**
 * %-decodes `s` until it stops changing, at most `budget.rounds` times, each round charged its
 * length against `budget.left`; sets `budget.undecided` when one more round would still change it
 * or the budget ran out (the rest is not decoded). Never throws; `+` is left alone.
 *
 * @example
 * decodeRepeatedly('%2561', { rounds: 8, left: 1e6, undecided: false }) // 'a'
 */
export function decodeRepeatedly(s: string, budget: DecodeBudget): string {
  let cur = s;
  for (let i = 0; cur.includes('%'); i++) {
    const spent = (budget.left -= cur.length + 8) < 0;
    const next = spent ? cur : percentDecode(cur);
    if (spent || (next !== cur && i === budget.rounds)) budget.undecided = true;
    if (spent || next === cur || i === budget.rounds) break;
    cur = next;
  }
  return cur;
}

const NON_ASCII = /[^\0-\x7f]/;
/**
 * UTF-8 sequences in a text that holds bytes as latin1 characters (Node's header values, a
 * %-decoded string), overlong ones included (`\xc1\xae` is `n` to a lenient decoder).
 */
const UTF8_SEQUENCE = /[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}/g;

/**
 * `s` with UTF-8 byte sequences (as latin1 characters, overlong ones too) made characters, then
 * NFKC-folded (full-width `ｎ`, `𝐧`, `ⓝ` become `n`, `％` becomes `%`). A text that is all ASCII
 * is returned as is after one native test.
 *
 * @example
 * foldUnicode('\xef\xbd\x8e\xc1\xae') // 'nn'
 */
export function foldUnicode(s: string): string {
  if (!NON_ASCII.test(s)) return s;
  // Valid UTF-8 bytes (no overlong form, no lone byte) decode natively to what the pattern below
  // gives them, one native pass instead of a callback per character.
  if (!ABOVE_LATIN1.test(s)) {
    const bytes = Buffer.from(s, 'latin1');
    if (isUtf8(bytes)) return utf8.decode(bytes).normalize('NFKC');
  }
  return s.replace(UTF8_SEQUENCE, decodeUtf8).normalize('NFKC');
}

const ABOVE_LATIN1 = /[^\0-\xff]/;

function decodeUtf8(m: string): string {
  const b0 = m.charCodeAt(0);
  const b1 = m.charCodeAt(1) & 0x3f;
  const code =
    m.length === 2
      ? ((b0 & 0x1f) << 6) | b1
      : m.length === 3
        ? ((b0 & 0x0f) << 12) | (b1 << 6) | (m.charCodeAt(2) & 0x3f)
        : ((b0 & 0x07) << 18) | (b1 << 12) | ((m.charCodeAt(2) & 0x3f) << 6) | (m.charCodeAt(3) & 0x3f);
  return code <= 0x10ffff ? String.fromCodePoint(code) : m;
}

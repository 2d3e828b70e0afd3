import { DEFAULT_URL_GUARD_LIMITS } from '../config/schema.js';
import { KEY_CHECKSUM_LENGTH, KEY_RANDOM_LENGTH } from './api-key.js';
import { percentDecode } from './percent-decode.js';

/**
 * Repeated %-encoding is undone too (`%2561pi_key` still names `api_key`), as deep as the forward
 * step's key-material check reads (src/proxy/key-material.ts); a string still changing after that
 * counts as carrying a key.
 */
const MAX_DECODE_ROUNDS = 8;
/**
 * Decoding work per URL, in characters decoded per character of the URL over every round of every
 * piece, each round charged DECODE_CALL_COST more, plus DECODE_BUDGET_MIN: a benign URL decodes each
 * encoded piece once (a matrix parameter twice: with the path, then alone), so this leaves room for
 * double encoding, and for any encoding of a short URL, while a long URL of deep `%25` chains costs
 * about 2 passes, not 9. Past it the URL counts as undecided.
 */
const DECODE_BUDGET_PER_CHAR = 2;
const DECODE_CALL_COST = 8;
const DECODE_BUDGET_MIN = 2048;

export interface UrlGuardLimits {
  /** Parameter names that override the request method (`_method`...): reported as `methodOverride`. */
  methodOverrideParams?: readonly string[];
  /** Query and matrix parameters examined: every piece between `&` or `;` (or `/` after a `;`). */
  maxParams: number;
  /** Path segments (pieces between `/`). */
  maxPathSegments: number;
}

/**
 * What the guard saw. `overLimit`: the URL has more parameters or path segments than the guard
 * examines, so it may hide a key: a caller refuses it and does not log its path. Candidates are
 * what was found in the examined part, plus plain (not %-encoded) key-shaped values in the rest.
 * `undecided`: a part of the URL was still %-encoded after MAX_DECODE_ROUNDS rounds, or after the
 * URL's decoding budget (DECODE_BUDGET_PER_CHAR characters decoded per character of the URL) ran out;
 * it is found  * (treated as a key in the URL) whatever the candidates.
 */
export type UrlKeyCheck =
  | { found: false; overLimit?: boolean; methodOverride?: boolean }
  | { found: true; candidates: string[]; overLimit?: boolean; undecided?: boolean; methodOverride?: boolean };

/** Lowercases and drops everything but letters and digits: `X-API_Key`, `x.api.key` → `xapikey`. */
export function normaliseParamName(name: string): string {
  return squashName(decodeRepeatedly(name, NO_LIMIT));
}

const NO_LIMIT = { undecided: false, decodeBudget: Infinity };

/**
 * A method-override name: squashed like a key name, but a leading `_`, `-` or `.` counts, so
 * `_method` (what method-override, Rails and Laravel read) is not `method`, a common parameter.
 * Read the way PHP reads parameter names (Laravel, Symfony): leading spaces dropped (a `+` is one in
 * a query), then ` `, `.` and `[` read as `_`; and the way Rack does, leading `[` and `]` dropped.
 * So `%20_method`, `+_method`, `.method`, `_method[]` and `[_method]` are `_method`; ` method` is
 * still `method`. Control characters count as spaces too (no framework reads them as a name).
 */
function overrideName(decoded: string, squashed = squashName(decoded)): string {
  let i = 0;
  while (i < decoded.length && isIgnoredLead(decoded.charCodeAt(i))) i++;
  const c = decoded.charCodeAt(i);
  return c === 95 || c === 45 || c === 46 ? `_${squashed}` : squashed;
}

/** A space or control character, `+`, `[` or `]`: dropped before a method-override name. */
function isIgnoredLead(c: number): boolean {
  return c <= 32 || c === 43 || c === 91 || c === 93;
}

/**
 * Builds the URL guard: a request URL carries a key when a query or matrix parameter has a
 * key-like name (any case, separators or %-encoding) or any part of the URL holds a value shaped
 * like one of our keys. Returns the candidate key values (a key-named parameter's decoded value,
 * or the key-shaped substring) so a caller can check whether a real key was exposed.
 *
 * Cost: linear in the URL's length, with native string operations doing most of it; no
 * exceptions, no backtracking regex. A string is %-decoded at most MAX_DECODE_ROUNDS times. At most
 * `limits.maxParams` parameters and `limits.maxPathSegments` segments are examined; past a cap the
 * result says `overLimit`, and the rest of the URL is only searched, as sent (not decoded), for
 * key-shaped values.
 *
 * @example
 * const check = createUrlKeyGuard(['api_key', 'token']);
 * check('/notify/v1/otps?API%5FKEY=abc') // { found: true, candidates: ['abc'] }
 */
export function createUrlKeyGuard(
  paramNames: readonly string[],
  limits: Readonly<UrlGuardLimits> = DEFAULT_URL_GUARD_LIMITS,
): (url: string) => UrlKeyCheck {
  const names = new Set(paramNames.map(normaliseParamName));
  const overrideNames = new Set(
    (limits.methodOverrideParams ?? []).map((n) => overrideName(decodeRepeatedly(n, NO_LIMIT))),
  );
  const longestName = Math.max(0, ...[...names, ...overrideNames].map((n) => n.length));
  return function checkUrlForKey(url: string): UrlKeyCheck {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const scan: PairScan = {
      names,
      longestName,
      candidates: [],
      budget: limits.maxParams,
      undecided: false,
      overrideNames,
      methodOverride: false,
      decodeBudget: DECODE_BUDGET_PER_CHAR * url.length + DECODE_BUDGET_MIN,
      everything: new BareBodyScan(),
      values: new BareBodyScan(),
      joinedValues: '',
    };
    let overLimit = hasMoreThan(path, '/', limits.maxPathSegments);
    if (overLimit) collectKeyMaterial(url, scan.candidates);
    else {
      const decoded = decodeRepeatedly(path, scan);
      collectKeyShaped(decoded, scan.candidates);
      scan.everything.feed(decoded, scan.candidates);
      // Matrix parameters (`/x;api_key=...`, also %-encoded) are parameters too; after the first
      // `;` every later segment is read as one.
      const semi = decoded.indexOf(';');
      if (semi !== -1) overLimit = !checkPairs(decoded, semi + 1, true, scan);
      if (overLimit) collectKeyMaterial(url.slice(path.length), scan.candidates);
      else if (q !== -1) overLimit = !checkPairs(url, q + 1, false, scan);
      // A key split over parameters (`x=nk_live_AbC…&y=…xYz`): the values, joined in order.
      collectKeyShaped(scan.joinedValues, scan.candidates);
    }
    const found = scan.candidates.length > 0 || scan.undecided;
    // A key is often found twice (its shape, its bare body): each candidate once.
    const candidates = scan.candidates.length > 1 ? [...new Set(scan.candidates)] : scan.candidates;
    const result: UrlKeyCheck = found ? { found, candidates } : { found };
    if (scan.undecided) (result as { undecided?: boolean }).undecided = true;
    if (scan.methodOverride) result.methodOverride = true;
    if (overLimit) result.overLimit = true;
    return result;
  };
}

interface PairScan {
  names: Set<string>;
  /** Length of the longest squashed name: a longer name is not squashed to the end. */
  longestName: number;
  candidates: string[];
  /** A piece was still %-encoded after the last round. */
  undecided: boolean;
  /** Squashed names of method-override parameters, and whether one was seen. */
  overrideNames: Set<string>;
  methodOverride: boolean;
  /** Characters left to %-decode, over all rounds of all pieces. */
  decodeBudget: number;
  /** Pieces left to examine one by one. */
  budget: number;
  /** Bare key bodies in the decoded path, names and values, read as one stream (see BareBodyScan). */
  everything: BareBodyScan;
  /** Bare key bodies in the decoded parameter values alone, joined (a key split over `x=…&y=…`). */
  values: BareBodyScan;
  /** The decoded parameter values, joined in order: searched for `nk_` shapes at the end. */
  joinedValues: string;
}

/**
 * Checks the `name=value` pairs of `s` from `start`, separated by `&` or `;` (and `/` in a path's
 * matrix parameters). Returns false when the budget ran out; the rest of `s` is then only searched
 * for plain key-shaped values. Each separator is looked up with indexOf once, so the whole scan is one
 * native pass however many pieces there are.
 */
function checkPairs(s: string, start: number, matrix: boolean, scan: PairScan): boolean {
  const next = { '&': -2, ';': -2, '/': matrix ? -2 : -1, '=': -2 };
  for (let i = start; i <= s.length;) {
    if (--scan.budget < 0) {
      collectKeyShaped(s.slice(i), scan.candidates);
      return false;
    }
    const end = Math.min(nextOf(s, '&', i, next), nextOf(s, ';', i, next), nextOf(s, '/', i, next));
    const eq = nextOf(s, '=', i, next);
    if (end > i) {
      const named = eq < end;
      checkPair(s.slice(i, named ? eq : end), named ? s.slice(eq + 1, end) : '', scan);
    }
    i = end + 1;
  }
  return true;
}

/** Index of the next `ch` at or after `i` (s.length if none), cached in `next` (-1: none left). */
function nextOf(s: string, ch: '&' | ';' | '/' | '=', i: number, next: Record<string, number>): number {
  let at = next[ch]!;
  if (at !== -1 && at < i) next[ch] = at = s.indexOf(ch, i);
  return at === -1 ? s.length : at;
}

function checkPair(rawName: string, rawValue: string, scan: PairScan): void {
  // `+` is a space in a form-encoded value, but a space and a `+` are alike to the squashed name and
  // to the key-shape scan: only a key-named parameter's value (a candidate) is read with `+` as a space.
  const name = decodeRepeatedly(rawName, scan);
  const squashed = squashName(name, scan.longestName);
  if (scan.overrideNames.size > 0 && scan.overrideNames.has(overrideName(name, squashed)))
    scan.methodOverride = true;
  let value: string;
  if (scan.names.has(squashed)) {
    const plain = rawValue.includes('+') ? rawValue.replaceAll('+', ' ') : rawValue;
    value = decodeRepeatedly(plain, scan);
    scan.candidates.push(value);
  } else collectKeyShaped((value = decodeRepeatedly(rawValue, scan)), scan.candidates);
  // A key-shaped parameter *name* (`?nk_live_…`) is a key in the URL too.
  collectKeyShaped(name, scan.candidates);
  scan.everything.feed(name, scan.candidates);
  scan.everything.feed(value, scan.candidates);
  scan.values.feed(value, scan.candidates);
  scan.joinedValues += value;
}

/**
 * Lowercase letters and digits only, in one pass; stops once longer than `max` (no name can match).
 * A non-ASCII character counts by its lowercase form, as `toLowerCase` would give it: only two have
 * a letter there, the Kelvin sign `\u212A` (`k`) and `\u0130` (`i` and a combining dot).
 */
function squashName(decoded: string, max = Infinity): string {
  let out = '';
  for (let i = 0; i < decoded.length && out.length <= max; i++) {
    const c = decoded.charCodeAt(i);
    if (isDigit(c) || isLower(c)) out += decoded[i];
    else if (isUpper(c)) out += String.fromCharCode(c + 32);
    else if (c === 0x212a) out += 'k';
    else if (c === 0x130) out += 'i';
  }
  return out;
}

/** A key's body after its `_`: where a native search for key shapes starts. */
const KEY_BODY = /_[0-9A-Za-z]{38}/g;
/** The longest environment in `nk_<env>_` (KEY_LIKE_PATTERN: `[a-z][a-z0-9]{1,15}`). */
const MAX_ENV_LENGTH = 16;

/**
 * Key-shaped substrings (`nk_<env>_` + 38 base62, KEY_LIKE_PATTERN) in any letter case, like the
 * forward step (`NK_LIVE_…`). One native pass finds each `_` followed by 38 base62 characters (a
 * try fails at the first other character, and matches cannot overlap a key's `nk_<env>`); from
 * there at most 19 characters are read backwards for `nk_<env>`.
 */
function collectKeyShaped(text: string, out: string[]): void {
  if (text.length < 44) return;
  KEY_BODY.lastIndex = 0;
  for (let m = KEY_BODY.exec(text); m !== null; m = KEY_BODY.exec(text)) {
    const v = m.index;
    let e = v - 1; // back over the environment to the `_` before it
    while (e >= 0 && v - e <= MAX_ENV_LENGTH && isBase62(text.charCodeAt(e))) e--;
    if (v - e < 3 || text.charCodeAt(e) !== 95 || !isLetter(text.charCodeAt(e + 1))) continue;
    if ((text.charCodeAt(e - 1) | 0x20) !== 107 || (text.charCodeAt(e - 2) | 0x20) !== 110) continue;
    out.push(text.slice(e - 2, v + 39));
  }
}

/** Key shapes and bare bodies in text read as sent (past a cap): one pass each. */
function collectKeyMaterial(text: string, out: string[]): void {
  collectKeyShaped(text, out);
  new BareBodyScan().feed(text, out);
}

/** 32 random characters and a 6-character checksum: a key's secret body after `nk_<env>_`. */
const BODY_LENGTH = KEY_RANDOM_LENGTH + KEY_CHECKSUM_LENGTH;
/**
 * The environments whose bare bodies are recognised without their prefix: a body's checksum covers
 * `nk_<env>_`, so each environment is one more comparison per character. Keys of other
 * environments are found by their `nk_<env>_` shape only (and, after authentication, the presented
 * key in any shape by the forward step's matcher).
 */
export const BARE_BODY_ENVIRONMENTS = ['live', 'test'] as const;
/** CRC-32 (IEEE, reflected: zlib's `crc32`, the key checksum) byte table. */
const CRC_TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c >>> 0;
}
function crcStep(state: number, byte: number): number {
  return (CRC_TABLE[(state ^ byte) & 0xff]! ^ (state >>> 8)) >>> 0;
}
/**
 * What a byte contributes to a zero-started CRC register once 32 more bytes followed it: the CRC is
 * linear, so xoring this out removes the byte that leaves a 32-byte window (a rolling CRC).
 */
const CRC_LEAVING = new Uint32Array(256);
for (let b = 0; b < 256; b++) {
  let st = crcStep(0, b);
  for (let i = 0; i < KEY_RANDOM_LENGTH; i++) st = crcStep(st, 0);
  CRC_LEAVING[b] = st;
}
/**
 * Per environment, the register after `nk_<env>_` (from zlib's initial ~0) and 32 zero bytes: the
 * checksum of `nk_<env>_` + W is then `~(start ^ R(W))`, R(W) the zero-started register of W.
 */
const ENV_STARTS = BARE_BODY_ENVIRONMENTS.map((env) => {
  let st = 0xffffffff;
  for (const ch of `nk_${env}_`) st = crcStep(st, ch.charCodeAt(0));
  for (let i = 0; i < KEY_RANDOM_LENGTH; i++) st = crcStep(st, 0);
  return st;
});
/** Base62 digit values (the checksum's alphabet, api-key.ts) by character code, -1 for others. */
const BASE62_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 62; i++)
  BASE62_VALUE['0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.charCodeAt(i)] = i;
/** The checksum is a 32-bit CRC in 6 base62 digits: its first digit is at most 4 (5 × 62^5 > 2^32). */
const MAX_FIRST_SUM_DIGIT = 4;

/**
 * Finds bare key bodies: 38 base62 characters whose last 6 are the checksum of `nk_<env>_` + the
 * first 32, for an environment of BARE_BODY_ENVIRONMENTS — the secret of a key without its public
 * prefix (`/otps/${key.slice(8)}`). Every other character is a separator, skipped: `n-k-_-l-i-v-e-…`,
 * `A.b.C…`, a body spread over path segments or, fed piece after piece, over parameters. One pass,
 * a few table look-ups per character (a rolling CRC over the last 32 base62 characters); state
 * carries over between `feed` calls, so the pieces fed read as one stream. Found bodies are pushed
 * as full keys (`nk_live_…`), for the exposure check.
 *
 * False positives: for text that is not built to match, the 6 characters after a window equal its
 * checksum with odds of 62^-6 (about 1.8·10^-11) per base62 character and environment; a
 * 16 KB URL, read as 2 streams for 2 environments, stays under 1.2·10^-6, and a 200-character
 * URL under 1.5·10^-8. Letter case is not folded (the checksum is case-sensitive): an upper-cased
 * bare body is not recognised here.
 */
class BareBodyScan {
  /** The last base62 characters of the stream (64 ≥ 38, a power of two for the index mask). */
  private readonly ring = new Uint8Array(64);
  private seen = 0;
  /** Zero-started CRC register of the 32 characters before the newest 6. */
  private register = 0;

  feed(text: string, out: string[]): void {
    const ring = this.ring;
    let n = this.seen;
    let reg = this.register;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 128 || BASE62_VALUE[c]! < 0) continue;
      ring[n & 63] = c;
      if (n >= KEY_CHECKSUM_LENGTH) {
        reg = crcStep(reg, ring[(n - KEY_CHECKSUM_LENGTH) & 63]!);
        if (n >= BODY_LENGTH) reg = (reg ^ CRC_LEAVING[ring[(n - BODY_LENGTH) & 63]!]!) >>> 0;
      }
      n++;
      if (n >= BODY_LENGTH && BASE62_VALUE[ring[(n - KEY_CHECKSUM_LENGTH) & 63]!]! <= MAX_FIRST_SUM_DIGIT)
        this.check(n, reg, out);
    }
    this.seen = n;
    this.register = reg;
  }

  /** Compares the newest 6 characters with each environment's checksum of the 32 before them. */
  private check(n: number, reg: number, out: string[]): void {
    let sum = 0;
    for (let k = KEY_CHECKSUM_LENGTH; k > 0; k--) sum = sum * 62 + BASE62_VALUE[this.ring[(n - k) & 63]!]!;
    for (let e = 0; e < ENV_STARTS.length; e++) {
      if (~(ENV_STARTS[e]! ^ reg) >>> 0 !== sum) continue;
      let body = '';
      for (let k = BODY_LENGTH; k > 0; k--) body += String.fromCharCode(this.ring[(n - k) & 63]!);
      out.push(`nk_${BARE_BODY_ENVIRONMENTS[e]!}_${body}`);
    }
  }
}

function isLetter(c: number): boolean {
  return isLower(c | 0x20);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isLower(c: number): boolean {
  return c >= 97 && c <= 122;
}

function isUpper(c: number): boolean {
  return c >= 65 && c <= 90;
}

function isBase62(c: number): boolean {
  return isDigit(c) || isLower(c) || isUpper(c);
}

/** Whether `s` holds more than `max` of `ch` (stops looking at max + 1). */
function hasMoreThan(s: string, ch: string, max: number): boolean {
  let at = -1;
  for (let n = 0; n <= max; n++) if ((at = s.indexOf(ch, at + 1)) === -1) return false;
  return true;
}

/**
 * Escapes some upstreams still decode though WHATWG and `decodeURIComponent` do not: IIS's and old
 * ASP's `%uXXXX`, and overlong UTF-8 (a Java or PHP decoder that does not check the shortest form):
 * 2 bytes `%c0`/`%c1` + a continuation (`%c1%ae` is `n`), 3 bytes `%e0` + `%80`–`%9f` + a
 * continuation, 4 bytes `%f0` + `%80`–`%8f` + two. The trigger is one native test (fixed-length
 * alternatives, no backtracking); most strings stop there.
 */
const LEGACY_ESCAPE_TRIGGER = /%(?:u[0-9a-f]{4}|c[01]%[89ab]|e0%[89]|f0%8)/i;

/** Hex digit values by character code (< 128), -1 for others. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++)
  HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;

/** The byte of the escape `%XX` at `i` of `s`, or -1. */
function escapedByte(s: string, i: number): number {
  if (s.charCodeAt(i) !== 37 || i + 2 >= s.length) return -1;
  const a = s.charCodeAt(i + 1);
  const b = s.charCodeAt(i + 2);
  const hi = a < 128 ? HEX_VALUE[a]! : -1;
  const lo = b < 128 ? HEX_VALUE[b]! : -1;
  return (hi | lo) < 0 ? -1 : (hi << 4) | lo;
}

/** A continuation byte's 6 bits when `%XX` at `i` is one (`%80`–`%bf`, or up to `max`), else -1. */
function continuation(s: string, i: number, max = 0xbf): number {
  const b = escapedByte(s, i);
  return b >= 0x80 && b <= max ? b & 0x3f : -1;
}

/**
 * `s` with each legacy escape (LEGACY_ESCAPE_TRIGGER) replaced by its character. One pass from `%`
 * to `%` (indexOf), constant work at each; never throws; other escapes are left for percentDecode.
 */
function decodeLegacyEscapes(s: string): string {
  let out = '';
  let from = 0;
  for (let i = s.indexOf('%'); i !== -1; i = s.indexOf('%', i)) {
    let code = -1;
    let len = 0;
    if ((s.charCodeAt(i + 1) | 0x20) === 117 /* u */ && i + 5 < s.length) {
      let v = 0;
      for (let k = 2; k <= 5 && v >= 0; k++) {
        const c = s.charCodeAt(i + k);
        const d = c < 128 ? HEX_VALUE[c]! : -1;
        v = d < 0 ? -1 : (v << 4) | d;
      }
      if (v >= 0) [code, len] = [v, 6];
    } else {
      const lead = escapedByte(s, i);
      if (lead === 0xc0 || lead === 0xc1) {
        const c1 = continuation(s, i + 3);
        if (c1 >= 0) [code, len] = [((lead & 1) << 6) | c1, 6];
      } else if (lead === 0xe0) {
        const c1 = continuation(s, i + 3, 0x9f);
        const c2 = c1 >= 0 ? continuation(s, i + 6) : -1;
        if (c2 >= 0) [code, len] = [(c1 << 6) | c2, 9];
      } else if (lead === 0xf0) {
        const c1 = continuation(s, i + 3, 0x8f);
        const c2 = c1 >= 0 ? continuation(s, i + 6) : -1;
        const c3 = c2 >= 0 ? continuation(s, i + 9) : -1;
        if (c3 >= 0) [code, len] = [(c1 << 12) | (c2 << 6) | c3, 12];
      }
    }
    if (code === -1) {
      i++;
      continue;
    }
    out += s.slice(from, i) + String.fromCharCode(code);
    i = from = i + len;
  }
  return from === 0 ? s : out + s.slice(from);
}

/**
 * %-decodes until stable, at most MAX_DECODE_ROUNDS times; `+` is left alone. Never throws. Sets
 * `undecided` when one more round would still change the string, or the budget ran out. Each round
 * first turns legacy escapes (`%uXXXX`, overlong UTF-8: decodeLegacyEscapes) into their characters.
 */
function decodeRepeatedly(s: string, seen: { undecided: boolean; decodeBudget: number }): string {
  let cur = s;
  for (let i = 0; cur.includes('%'); i++) {
    if ((seen.decodeBudget -= cur.length + DECODE_CALL_COST) < 0) {
      seen.undecided = true;
      break;
    }
    const next = percentDecode(LEGACY_ESCAPE_TRIGGER.test(cur) ? decodeLegacyEscapes(cur) : cur);
    if (next === cur) break;
    if (i === MAX_DECODE_ROUNDS) {
      seen.undecided = true;
      break;
    }
    cur = next;
  }
  return cur;
}

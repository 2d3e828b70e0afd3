import { DEFAULT_URL_GUARD_LIMITS } from '../config/schema.js';
import {
  BareBodyScan,
  collectEncodedKeys,
  decodeLegacyEscapes,
  LEGACY_ESCAPE_TRIGGER,
} from './key-body-scan.js';
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
 * what was found in the examined part, plus, in the rest (as sent, not %-decoded), key shapes, base64/hex keys and bare bodies.
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
 * like one of our keys, a bare key body, or a key in base64 or hex (collectEncodedKeys: the checksum
 * decides). Returns the candidate key values (a key-named parameter's decoded value,
 * or the key-shaped substring) so a caller can check whether a real key was exposed.
 *
 * Cost: linear in the URL's length, with native string operations doing most of it; no
 * exceptions, no backtracking regex. A string is %-decoded at most MAX_DECODE_ROUNDS times. At most
 * `limits.maxParams` parameters and `limits.maxPathSegments` segments are examined; past a cap the
 * result says `overLimit`, and the rest of the URL is only searched, as sent (not %-decoded), for
 * key shapes, base64/hex keys and bare bodies.
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
      collectEncodedKeys(decoded, scan.candidates);
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
 * matrix parameters). Returns false when the budget ran out; the rest of `s` is then only searched,
 * as sent, for key shapes, base64/hex keys and bare bodies (collectKeyMaterial). Each separator is looked up with indexOf once, so the whole scan is one
 * native pass however many pieces there are.
 */
function checkPairs(s: string, start: number, matrix: boolean, scan: PairScan): boolean {
  const next = { '&': -2, ';': -2, '/': matrix ? -2 : -1, '=': -2 };
  for (let i = start; i <= s.length;) {
    if (--scan.budget < 0) {
      collectKeyMaterial(s.slice(i), scan.candidates);
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
  // A key in base64 or hex in a name or value (a matrix parameter's is read with the path too).
  collectEncodedKeys(name, scan.candidates);
  collectEncodedKeys(value, scan.candidates);
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

/** Key shapes, base64/hex keys and bare bodies in text read as sent (past a cap): one pass each. */
function collectKeyMaterial(text: string, out: string[]): void {
  collectKeyShaped(text, out);
  collectEncodedKeys(text, out);
  new BareBodyScan().feed(text, out);
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

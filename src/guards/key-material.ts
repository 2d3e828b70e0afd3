import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  ENVIRONMENT_MAX_LENGTH,
  KEY_CHECKSUM_LENGTH,
  KEY_LIKE_PATTERN,
  KEY_MIN_LENGTH,
  KEY_PREFIX_PATTERN,
  KEY_RANDOM_LENGTH,
  parseApiKey,
} from '../auth/api-key.js';
import '../request-state.js';
import { decodeBudget, decodeRepeatedly, isBase62, isLetter } from './decode.js';
import { createStrictMatcher, type SplitCheck } from './strict-material.js';

/**
 * How far the guards read (`guards.level`, docs/security.md "Levels"): `default` finds the copies
 * an honest client makes by mistake, exactly and cheaply; `strict` also undoes the encodings a
 * client could build on purpose.
 */
export type GuardLevel = 'default' | 'strict';

/** What a text holds: the keys found (the presented key as sent, other keys as found), or undecided (strict: still encoded after the last round). */
export interface KeyFinding {
  keys: string[];
  undecided: boolean;
}

/** Finds copies of the presented key, and any valid gateway key, in a header value, a cookie pair or a URL. */
export interface KeyMatcher {
  /** The presented key (`''`: none; then only other valid keys are found). */
  readonly key: string;
  /** What `text` holds, or null. */
  find(text: string): KeyFinding | null;
  /** Whether `text` holds key material (undecided counts as holding). */
  holds(text: string): boolean;
  /** `holds` for a header name, which Node hands over lowercased: the presented key in any case. */
  holdsName(name: string): boolean;
  /** The split-copy check (strict level only; null at the default level). */
  readonly split: SplitCheck | null;
}

declare module '../request-state.js' {
  interface RequestState {
    /** The presented key's matcher, built on first use (`createKeyMatcherOf`) and shared by every later step. */
    keyMatcher?: KeyMatcher;
  }
}

const NK = /nk_/i;
/** A key's body after its `_`: where the search for key shapes starts (one native pass). */
const KEY_BODY = /_[0-9A-Za-z]{38}/g;
const BASIC = /^basic\s+/i;
/** Characters of a key header read for a key inside a malformed value (`Bearer K`, `K, K`, `K#junk`). */
const CANDIDATE_READ = 256;

/**
 * Adds to `found` each key shape in `t` (`nk_<env>_` + 38 base62, prefix in any case, lowercased):
 * the valid gateway keys (checksum right), or every shape with `anyChecksum` (the URL key guard
 * refuses a shape whether or not it is a real key). One native test when `t` holds no `nk_`; else
 * one native search for `_` + 38 base62 (matches cannot overlap a key's `nk_<env>`), then at most
 * 19 characters read back for `nk_<env>`: a text full of `nk_` costs no more than one without.
 *
 * @example
 * const found: string[] = []; addKeyShapes(`x=${key}`, found) // found: [key]
 */
export function addKeyShapes(t: string, found: string[], anyChecksum = false): void {
  if (t.length < KEY_MIN_LENGTH || !NK.test(t)) return;
  KEY_BODY.lastIndex = 0;
  for (let m = KEY_BODY.exec(t); m !== null; m = KEY_BODY.exec(t)) {
    const v = m.index;
    let e = v - 1; // back over the environment to the `_` before it
    while (e >= 0 && v - e <= ENVIRONMENT_MAX_LENGTH && isBase62(t.charCodeAt(e))) e--;
    if (v - e < 3 || t.charCodeAt(e) !== 95 || !isLetter(t.charCodeAt(e + 1))) continue;
    if ((t.charCodeAt(e - 1) | 0x20) !== 107 || (t.charCodeAt(e - 2) | 0x20) !== 110) continue;
    const shape = t.slice(e - 2, v).toLowerCase() + t.slice(v, v + 39);
    if (anyChecksum || parseApiKey(shape, { maxLength: 256, acceptLegacy: false }).ok) found.push(shape);
  }
}

/**
 * Builds the matcher of one presented key for a level. Default level (threat model: T1, T5): `text`
 * holds key material when, as sent, %-decoded (until it stops changing: at most 8 rounds within a
 * budget of 2 characters per character, past which it is *undecided*), or as the credentials of
 * `Basic …`, it holds
 * - the presented key's 32 random characters (so the key with or without its prefix or checksum;
 *   a legacy key: the whole key), or their base64 or base64url encoding at any byte alignment
 *   (precomputed: a search, no decoding);
 * - or a valid gateway key of any company (`nk_<env>_` + 38 base62, checksum right).
 * A few native `indexOf` calls per value; a value shorter than any of these is not read. The strict
 * level reads deeper (see `createStrictMatcher`). Never throws.
 *
 * @example
 * createKeyMatcher(key, 'default').holds(`Basic ${Buffer.from(`${key}:`).toString('base64')}`) // true
 */
export function createKeyMatcher(key: string, level: GuardLevel): KeyMatcher {
  if (level === 'strict') return createStrictMatcher(key);
  const secret = KEY_PREFIX_PATTERN.test(key)
    ? key.slice(key.indexOf('_', 3) + 1, key.length - KEY_CHECKSUM_LENGTH)
    : key;
  const needles = secret.length >= KEY_RANDOM_LENGTH / 2 ? [secret, ...base64Needles(secret)] : [];
  const min = needles.length ? Math.min(secret.length, KEY_MIN_LENGTH) : KEY_MIN_LENGTH;
  const read = (t: string, found: string[]): void => {
    for (const n of needles)
      if (t.includes(n)) {
        found.push(key);
        break;
      }
    addKeyShapes(t, found);
  };
  function find(text: string): KeyFinding | null {
    if (text.length < min) return null;
    const found: string[] = [];
    read(text, found);
    if (text.includes('%')) {
      const budget = decodeBudget(text.length);
      const decoded = decodeRepeatedly(text, budget);
      if (budget.undecided) return { keys: [], undecided: true };
      read(decoded, found);
    }
    if (BASIC.test(text)) read(Buffer.from(text.replace(BASIC, ''), 'base64').toString('latin1'), found);
    if (found.length === 0) return null;
    return { keys: found.length > 1 ? [...new Set(found)] : found, undecided: false };
  }
  const lowerSecret = secret.toLowerCase();
  const holds = (text: string) => find(text) !== null;
  return {
    key,
    find,
    holds,
    holdsName: (name) => (needles.length > 0 && name.includes(lowerSecret)) || holds(name),
    split: null,
  };
}

/**
 * The base64 and base64url characters that encode `secret` wherever it sits in a longer byte string:
 * at each of the 3 byte alignments, the characters made of its bits only.
 */
function base64Needles(secret: string): string[] {
  const out: string[] = [];
  for (let a = 0; a < 3; a++) {
    const encoded = Buffer.from('\0\0'.slice(0, a) + secret, 'latin1').toString('base64');
    const s = encoded.slice(Math.ceil((8 * a) / 6), Math.floor((8 * (a + secret.length)) / 6));
    out.push(s);
    if (/[+/]/.test(s)) out.push(s.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

/** A value this long or longer is a secret of its own (a legacy key is at least 20 characters). */
const SECRET_MIN_LENGTH = 20;

/**
 * The key a request presents, for its matcher: the `X-API-Key` value when it is shaped like a key
 * (a checksum typo included; a legacy key when accepted); else the first key shape in the first 256
 * characters of `X-API-Key`, `X_API_KEY` or `Authorization` (sent twice: `K, K`; `Bearer K`; K
 * followed by junk or too long); else an `X-API-Key` value of 20 characters or more as sent (an
 * unknown or malformed key is still someone's secret); `''` when there is none.
 */
function presentedKeyOf(
  headers: IncomingHttpHeaders,
  format: { maxLength: number; acceptLegacy: boolean },
): string {
  for (const name of ['x-api-key', 'x_api_key', 'authorization']) {
    const h = headers[name];
    const v = Array.isArray(h) ? h[0] : h;
    if (v === undefined || v === '') continue;
    if (name === 'x-api-key' && v.length <= format.maxLength) {
      const parsed = parseApiKey(v, format);
      if (parsed.ok || parsed.reason === 'checksum') return v;
    }
    const shape = KEY_LIKE_PATTERN.exec(v.slice(0, CANDIDATE_READ));
    if (shape) return shape[0];
    if (name === 'x-api-key' && v.length >= SECRET_MIN_LENGTH && v.length <= format.maxLength) return v;
  }
  return '';
}

/**
 * Builds `keyMatcherOf(req)`: the matcher of the key `req` presents (see `presentedKeyOf`), built on
 * first use and kept on `req.gw` for every later step (request id, URL, headers, logged path).
 * Needs `req.gw`.
 *
 * @example
 * const keyMatcherOf = createKeyMatcherOf('default', { maxLength: 256, acceptLegacy: false });
 * keyMatcherOf(req).holds(req.url)
 */
export function createKeyMatcherOf(
  level: GuardLevel,
  format: { maxLength: number; acceptLegacy: boolean },
): (req: IncomingMessage) => KeyMatcher {
  return (req) => (req.gw.keyMatcher ??= createKeyMatcher(presentedKeyOf(req.headers, format), level));
}

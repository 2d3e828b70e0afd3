import { parseApiKey } from '../auth/api-key.js';

/**
 * Consecutive characters of a key's secret body that make a copy: 24 of its 38 base62 characters.
 * A shorter piece leaves at least 9 unknown random characters (53 bits, online guesses only): not a
 * usable key. Compared without case, so 24 characters still carry 124 bits: a chance match is
 * out of reach (see `docs/security.md`, "Key material").
 */
export const SECRET_WINDOW = 24;
/** %-escapes, `\xNN`, `\uNNNN` and HTML numeric entities, undone up to 8 times over. */
const MAX_DECODE_ROUNDS = 8;
/** base64 / hex / base32 inside base64 / hex: two levels, so base64(base64(key)) is seen. */
const MAX_NESTING = 2;
/** The key format's longest environment plus `nk__`: the shape check's reach (KEY_LIKE_PATTERN). */
const KEY_SHAPE_MIN_LENGTH = 44;

const ESCAPE_TRIGGERS = /[%\\&]/;
const ESCAPES =
  /%([0-9a-fA-F]{2})|\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|&#[xX]([0-9a-fA-F]{1,6});?|&#([0-9]{1,7});?/g;
const NOT_ALNUM = /[^a-z0-9]+/g;
const NOT_KEY_CHAR = /[^A-Za-z0-9_]+/g;
const WHITESPACE = /\s+/g;
/** A key shape, any case in `nk_<env>_` (the checksum covers the lowercase form). Bounded: ≤ 60 steps per `nk_`. */
const KEY_SHAPE = /nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{38}/gi;
const HEX_JUNK = /0x|[^0-9a-f]+/g;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** What was found: the keys (the presented one as sent, others as found), or an encoding too deep to read. */
export type KeyMaterialFinding = { keys: string[]; undecided: false } | { keys: []; undecided: true };

/** Finds copies of one API key, and of any valid gateway key, inside header values, cookie pairs and URLs. */
export interface KeyMaterialMatcher {
  /** Whether `text` holds key material (see {@link createKeyMaterialMatcher}); undecided counts as holding. */
  holds(text: string): boolean;
  /** What `text` holds, or null. */
  find(text: string): KeyMaterialFinding | null;
  /** `text` with escapes undone, lowercased, letters and digits only: the form `spanIn` reads. */
  normalise(text: string): string;
  /** Where in a `normalise`d string (e.g. several values joined) a copy of the secret sits, or null. */
  spanIn(normalised: string): [number, number] | null;
}

interface Secret {
  /** Lowercase; letters and digits only unless `raw`. */
  text: string;
  /** Characters of `text` that make a copy. */
  window: number;
  /** Pieces of `text` of which every window holds one: searched with indexOf, then extended. */
  blocks: { at: number; s: string }[];
  /** A legacy key with few letters or digits: compared with only whitespace removed. */
  raw: boolean;
}

/**
 * Builds a matcher for one presented key (`''`: none, only other keys are looked for). A text holds
 * key material when, after undoing %-escapes, `\xNN`, `\uNNNN` and HTML numeric entities (up to 8
 * rounds; a text still changing after that is *undecided*):
 * - it holds 24 consecutive characters of the presented key's secret body (after `nk_<env>_`), in
 *   any letter case, with any characters that are not letters or digits in between (`+`, `-`, `.`,
 *   spaces, NUL, a full-width `_`...): the body with or without prefix or checksum;
 * - or it holds a gateway key shape `nk_<env>_` + 38 base62 with a valid checksum (any company),
 *   separators allowed except around `_`;
 * - or a base64/base64url run (any alignment, whitespace ignored), a base32 run or its hex digits
 *   (`6e:6b`, `0x6e,0x6b`) decode to a text that does, two levels deep (base64 of base64, of hex,
 *   of UTF-16).
 * A legacy key counts whole: all its letters and digits (or, with fewer than 16, the key itself).
 * Linear in the length of `text` (a constant factor for the decoding levels); never throws. A text
 * shorter than 24 characters (or than a legacy key) is not examined.
 *
 * @example
 * const m = createKeyMaterialMatcher(key);
 * m.holds(`Basic ${Buffer.from(`${key}:`).toString('base64')}`) // true
 * m.holds(key.slice(8).split('').join('.')) // true
 */
export function createKeyMaterialMatcher(key: string): KeyMaterialMatcher {
  const secret = key === '' ? null : secretOf(key);
  // Every covered form is at least as long as what it carries.
  const minLength = secret === null ? KEY_SHAPE_MIN_LENGTH : Math.min(secret.window, KEY_SHAPE_MIN_LENGTH);
  const strip = (s: string) =>
    secret?.raw ? s.toLowerCase().replace(WHITESPACE, '') : s.toLowerCase().replace(NOT_ALNUM, '');

  function spanIn(n: string): [number, number] | null {
    return secret === null || n.length < secret.window ? null : findWindow(n, secret);
  }
  /** One decoded form: the secret, or other keys' shapes (added to `found`). */
  function checkForm(t: string, found: string[]): boolean {
    const n = strip(t);
    if (spanIn(n) !== null) {
      found.push(key);
      return true;
    }
    // Cheap pre-check: a key shape needs `n`, `k` and `_`.
    if (t.length < KEY_SHAPE_MIN_LENGTH || !t.includes('_') || !n.includes('nk')) return false;
    const before = found.length;
    const k = t.replace(NOT_KEY_CHAR, '');
    KEY_SHAPE.lastIndex = 0;
    for (let m = KEY_SHAPE.exec(k); m !== null; m = KEY_SHAPE.exec(k)) {
      const sep = m[0].indexOf('_', 3);
      const candidate = m[0].slice(0, sep).toLowerCase() + m[0].slice(sep);
      if (parseApiKey(candidate, { maxLength: 256, acceptLegacy: false }).ok) found.push(candidate);
    }
    return found.length > before;
  }
  /** `text` and what decodes from it; true (with `found` filled or `undecided`) on a find. */
  const p = runPatternsFor(minLength);
  function scan(text: string, depth: number, found: string[]): boolean | 'undecided' {
    const forms = decodedForms(text);
    if (forms === null) return 'undecided';
    for (const f of forms) if (checkForm(f, found)) return true;
    // Binary encodings of the first and the fully decoded form (escapes never hide inside base64).
    const ends = forms.length > 1 ? [forms[0]!, forms[forms.length - 1]!] : forms;
    for (const f of ends) {
      for (const d of binaryDecodings(f, p, depth === 0)) {
        // A wrong alignment decodes to noise: only a text with a printable stretch can hold the key.
        if (!p.printable.test(d)) continue;
        const r = depth + 1 < MAX_NESTING ? scan(d, depth + 1, found) : checkForm(d, found);
        if (r !== false) return r;
      }
    }
    return false;
  }
  function find(text: string): KeyMaterialFinding | null {
    if (text.length < minLength) return null;
    const found: string[] = [];
    const r = scan(text, 0, found);
    if (r === 'undecided') return { keys: [], undecided: true };
    return r ? { keys: [...new Set(found)], undecided: false } : null;
  }
  return {
    holds: (text) => find(text) !== null,
    find,
    normalise: (text) => strip(decodedForms(text)?.at(-1) ?? text),
    spanIn,
  };
}

/**
 * Whether `text` may carry the key sent in `X-API-Key` (before it is verified): true when it holds
 * it (or any valid gateway key), and when the header is longer than `maxKeyLength` (such a key is
 * refused anyway; not scanning it keeps the cost bounded before authentication). False without a key.
 *
 * @example
 * mayHoldKey(req.headers['x-request-id'], req.headers['x-api-key'], 256)
 */
export function mayHoldKey(text: string, key: string | string[] | undefined, maxKeyLength: number): boolean {
  if (key === undefined || key === '') return false;
  if (typeof key !== 'string' || key.length > maxKeyLength) return true;
  return createKeyMaterialMatcher(key).holds(text);
}

/** The secret of a key: an `nk_` key's body; a legacy key's letters and digits, or itself. */
function secretOf(key: string): Secret {
  const m = /^nk_[a-z][a-z0-9]{1,15}_([0-9A-Za-z]{24,})$/.exec(key);
  if (m) return withBlocks(m[1]!.toLowerCase(), SECRET_WINDOW, false);
  const alnum = key.toLowerCase().replace(NOT_ALNUM, '');
  if (alnum.length >= 16) return withBlocks(alnum, alnum.length, false);
  return withBlocks(key.toLowerCase().replace(WHITESPACE, ''), key.replace(WHITESPACE, '').length || 1, true);
}

/**
 * Blocks of half a window at fixed places (and one ending the text): a window of `w` characters
 * always contains one of them, so a few indexOf calls find every candidate.
 */
function withBlocks(text: string, window: number, raw: boolean): Secret {
  const w = Math.min(window, text.length);
  const size = Math.max(1, Math.ceil(w / 2));
  const blocks: { at: number; s: string }[] = [];
  for (let at = 0; at + size <= text.length; at += size) blocks.push({ at, s: text.slice(at, at + size) });
  if (text.length % size !== 0) blocks.push({ at: text.length - size, s: text.slice(-size) });
  return { text, window: w, blocks, raw };
}

/** The first place `n` holds `window` consecutive characters of the secret. Linear: each hit extends ≤ secret length. */
function findWindow(n: string, secret: Secret): [number, number] | null {
  const t = secret.text;
  for (const { at, s } of secret.blocks) {
    for (let i = n.indexOf(s); i !== -1; i = n.indexOf(s, i + 1)) {
      let l = 0;
      while (l < at && i - l > 0 && n[i - l - 1] === t[at - l - 1]) l++;
      let r = 0;
      const end = at + s.length;
      while (end + r < t.length && i + s.length + r < n.length && n[i + s.length + r] === t[end + r]) r++;
      if (l + s.length + r >= secret.window) return [i - l, i + s.length + r];
    }
  }
  return null;
}

/** `text`, then each round of escape decoding until stable; null when still changing after the last round. */
function decodedForms(text: string): string[] | null {
  const forms = [text];
  let s = text;
  for (let i = 0; ESCAPE_TRIGGERS.test(s); i++) {
    const next = s.replace(ESCAPES, decodeEscape);
    if (next === s) break;
    if (i === MAX_DECODE_ROUNDS) return null;
    forms.push((s = next));
  }
  return forms;
}

function decodeEscape(
  m: string,
  pct?: string,
  x?: string,
  u?: string,
  hexEntity?: string,
  dec?: string,
): string {
  const hexDigits = pct ?? x ?? u ?? hexEntity;
  const code = hexDigits !== undefined ? parseInt(hexDigits, 16) : parseInt(dec!, 10);
  return code <= 0x10ffff ? String.fromCodePoint(code) : m;
}

interface RunPatterns {
  /** Whether any of the runs below is there: one native pass in the common case. */
  gate: RegExp;
  base64: RegExp;
  hex: RegExp;
  base32: RegExp;
  /** A stretch of printable ASCII (NUL too: UTF-16) long enough to carry the key. */
  printable: RegExp;
}
const runPatterns = new Map<number, RunPatterns>();

/** Patterns for runs long enough to carry `minLength` bytes (one set per length, made once). */
function runPatternsFor(minLength: number): RunPatterns {
  let p = runPatterns.get(minLength);
  if (p === undefined) {
    // Each run is tried from its first character only (the lookbehinds), so a short run costs one
    // pass rather than one per position; every quantified group is followed by something it cannot
    // match, so there is no backtracking blow-up.
    const base64 = `(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{${Math.ceil((minLength * 4) / 3)},}`;
    const hex = `(?<![0-9a-f])(?:(?:0x)?[0-9a-f]{2}[^0-9a-z]{0,2}){${minLength},}`;
    const b32Min = Math.ceil((minLength * 8) / 5);
    p = {
      gate: new RegExp(`${base64}|${hex}`, 'i'),
      base64: new RegExp(base64, 'g'),
      hex: new RegExp(hex, 'gi'),
      printable: new RegExp(`(?<![\\0\\t\\n\\r\\x20-\\x7e])[\\0\\t\\n\\r\\x20-\\x7e]{${minLength},}`),
      // Base32 is written in one case: a mixed-case run (base64, text) is not it.
      base32: new RegExp(`(?<![A-Z2-7])[A-Z2-7]{${b32Min},}|(?<![a-z2-7])[a-z2-7]{${b32Min},}`, 'g'),
    };
    runPatterns.set(minLength, p);
  }
  return p;
}

/**
 * What the base64/base64url runs of `s` (at each of their 4 alignments, whitespace ignored), its
 * hex runs (`6e6b`, `6e:6b`, `0x6e,0x6b`; both nibble alignments) and, at the top level, its
 * base32 runs (8 alignments) decode to, as latin1 text. Only runs long enough to carry
 * `minLength` bytes are decoded; a text without one costs one regex pass.
 */
function binaryDecodings(s: string, p: RunPatterns, withBase32: boolean): string[] {
  const compact = /\s/.test(s) ? s.replace(WHITESPACE, '') : s;
  if (!p.gate.test(compact)) return [];
  const out: string[] = [];
  for (const run of compact.match(p.base64) ?? [])
    for (let o = 0; o < 4; o++) out.push(Buffer.from(run.slice(o), 'base64').toString('latin1'));
  for (const run of compact.match(p.hex) ?? []) {
    const digits = run.toLowerCase().replace(HEX_JUNK, '');
    out.push(
      Buffer.from(digits, 'hex').toString('latin1'),
      Buffer.from(digits.slice(1), 'hex').toString('latin1'),
    );
  }
  if (withBase32)
    for (const run of compact.match(p.base32) ?? [])
      for (let o = 0; o < 8; o++) out.push(decodeBase32(run.toLowerCase(), o));
  return out;
}

/** RFC 4648 base32 (lowercase input, no padding) from character `from`, as latin1 text. */
function decodeBase32(run: string, from: number): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (let i = from; i < run.length; i++) {
    value = ((value << 5) | BASE32.indexOf(run[i]!)) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out += String.fromCharCode((value >> bits) & 0xff);
    }
  }
  return out;
}

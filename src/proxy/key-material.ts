import { crc32 } from 'node:zlib';
import { parseApiKey } from '../auth/api-key.js';

/**
 * Consecutive characters of a key's secret body that make a copy: 24 of its 38 base62 characters.
 * A shorter piece leaves at least 9 unknown random characters (53 bits, online guesses only): not a
 * usable key. Compared without case, so 24 characters still carry 124 bits: a chance match is
 * out of reach (see `docs/security.md`, "Key material").
 */
export const SECRET_WINDOW = 24;
/** Escapes (see `ESCAPES`), undone up to 8 times over. */
const MAX_DECODE_ROUNDS = 8;
/** A key's secret body: 32 random base62 characters and a 6-character checksum. */
const BODY_LENGTH = 38;
/**
 * Environments a bare 38-character body is checked against (its checksum covers `nk_<env>_`),
 * besides the presented key's: the admin API's default and the usual second one.
 */
const BODY_ENVIRONMENTS = ['live', 'test'];
/** Pieces of the secret, at least this long, that the split check puts together (see `piecesIn`). */
const PIECE_MIN = 8;
/** base64 / hex / base32 inside base64 / hex: two levels, so base64(base64(key)) is seen. */
const MAX_NESTING = 2;
/** The key format's longest environment plus `nk__`: the shape check's reach (KEY_LIKE_PATTERN). */
const KEY_SHAPE_MIN_LENGTH = 44;

const ESCAPE_TRIGGERS = /[%\\&]/;
/**
 * `%XX`, `%uXXXX` (IIS), `\xXX`, `\uXXXX`, `\u{X…}`, `\UXXXXXXXX`, octal `\NNN`, and HTML numeric
 * entities with any number of leading zeros (`&#00000110;`, `&#x0006e`). Each alternative starts
 * with a fixed character and `0*` is followed by a bounded run: a failed attempt costs a constant.
 */
const ESCAPES =
  /%[uU][0-9a-fA-F]{4}|%[0-9a-fA-F]{2}|\\x[0-9a-fA-F]{2}|\\u\{[0-9a-fA-F]{1,6}\}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\[0-7]{1,3}|&#[xX]0*[0-9a-fA-F]{1,6};?|&#0*[0-9]{1,7};?/g;
const NON_ASCII = /[^\0-\x7f]/;
/**
 * UTF-8 sequences in a text that holds bytes as latin1 characters (Node's header values, a
 * %-decoded string), overlong ones included (`\xc1\xae` is `n` to a lenient decoder).
 */
const UTF8_SEQUENCE = /[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}/g;
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
  /** `text` as sent (escapes left as they are), lowercased, letters and digits only. */
  normaliseRaw(text: string): string;
  /** Where in a `normalise`d string (e.g. several values joined) a copy of the secret sits, or null. */
  spanIn(normalised: string): [number, number] | null;
  /**
   * Where in a `normalise`d string the pieces of a split copy sit: every stretch of at least 8
   * consecutive characters of the secret (or the whole of a shorter secret's window), in any order
   * and with anything between them, when together they cover a window of the secret (24
   * characters); null when they do not.
   */
  piecesIn(normalised: string): [number, number][] | null;
}

interface Secret {
  /** Lowercase; letters and digits only unless `raw`. */
  text: string;
  /** Characters of `text` that make a copy. */
  window: number;
  /** Pieces of `text` of which every window holds one: searched with indexOf, then extended. */
  blocks: { at: number; s: string }[];
  /** Characters of `text` that make a piece of a split copy (`piecesIn`), and its blocks. */
  piece: number;
  pieceBlocks: { at: number; s: string }[];
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
  const minLength = secret === null ? BODY_LENGTH : Math.min(secret.window, BODY_LENGTH);
  const strip = (s: string) =>
    secret?.raw ? s.toLowerCase().replace(WHITESPACE, '') : s.toLowerCase().replace(NOT_ALNUM, '');
  const envs = bodyEnvironments(key);

  function spanIn(n: string): [number, number] | null {
    return secret === null || n.length < secret.window ? null : findWindow(n, secret);
  }
  /** One decoded form: the secret, or other keys' shapes and bare bodies (added to `found`). */
  function checkForm(t: string, found: string[]): boolean {
    const n = strip(t);
    if (spanIn(n) !== null) {
      found.push(key);
      return true;
    }
    if (t.length < BODY_LENGTH) return false;
    const before = found.length;
    bodiesIn(t, envs, found);
    // Cheap pre-check: a key shape needs `n`, `k` and `_`.
    if (t.length < KEY_SHAPE_MIN_LENGTH || !t.includes('_') || !n.includes('nk'))
      return found.length > before;
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
    normaliseRaw: strip,
    spanIn,
    piecesIn: (n) => (secret === null ? null : findPieces(n, secret)),
  };
}

/** `nk_<env>_` and its CRC-32, for each environment a bare body is checked against. */
interface BodyEnvironment {
  prefix: string;
  crc: number;
}
const COMMON_ENVIRONMENTS: BodyEnvironment[] = BODY_ENVIRONMENTS.map((e) => ({
  prefix: `nk_${e}_`,
  crc: crc32(`nk_${e}_`),
}));

/** The common environments, and the presented key's when it has another. */
function bodyEnvironments(key: string): BodyEnvironment[] {
  const m = /^nk_([a-z][a-z0-9]{1,15})_/.exec(key);
  if (m === null || BODY_ENVIRONMENTS.includes(m[1]!)) return COMMON_ENVIRONMENTS;
  return [...COMMON_ENVIRONMENTS, { prefix: m[0], crc: crc32(m[0]) }];
}

/** A run of base62 long enough to be a body, tried from its first character only (linear). */
const BASE62_RUN = new RegExp(`(?<![0-9A-Za-z])[0-9A-Za-z]{${BODY_LENGTH},}`, 'g');
const CHECKSUM_AT = BODY_LENGTH - 6;

/**
 * Adds to `found` every key whose bare body (32 random + 6 checksum characters, without
 * `nk_<env>_`) sits in a base62 run of `t` with a valid checksum for one of `envs`. The checksum
 * is a CRC-32 written in 6 base62 digits, so its first digit is 0-4: other places cost one
 * comparison; the rest one CRC per environment (continued from the prefix's CRC).
 */
function bodiesIn(t: string, envs: BodyEnvironment[], found: string[]): void {
  BASE62_RUN.lastIndex = 0;
  for (let m = BASE62_RUN.exec(t); m !== null; m = BASE62_RUN.exec(t)) {
    const run = m[0];
    for (let p = 0; p + BODY_LENGTH <= run.length; p++) {
      const first = run.charCodeAt(p + CHECKSUM_AT);
      if (first < 48 || first > 52) continue;
      let sum = 0;
      for (let i = p + CHECKSUM_AT; i < p + BODY_LENGTH; i++) sum = sum * 62 + base62Digit(run.charCodeAt(i));
      if (sum > 0xffffffff) continue;
      const random = run.slice(p, p + CHECKSUM_AT);
      for (const e of envs)
        if (crc32(random, e.crc) === sum) {
          found.push(e.prefix + run.slice(p, p + BODY_LENGTH));
          break;
        }
    }
  }
}

function base62Digit(c: number): number {
  return c <= 57 ? c - 48 : c <= 90 ? c - 55 : c - 61;
}

/**
 * Every stretch of `n` made of at least `secret.piece` consecutive characters of the secret (each
 * extended as far as it goes), when together they cover at least `secret.window` characters of
 * it; else null. Linear: a few indexOf calls, each hit extended by at most the secret's length.
 */
function findPieces(n: string, secret: Secret): [number, number][] | null {
  const t = secret.text;
  const covered = new Uint8Array(t.length);
  const spans: [number, number][] = [];
  for (const { at, s } of secret.pieceBlocks) {
    for (let i = n.indexOf(s); i !== -1; i = n.indexOf(s, i + 1)) {
      const [l, r] = extendHit(n, t, at, s, i);
      if (l + s.length + r < secret.piece) continue;
      spans.push([i - l, i + s.length + r]);
      covered.fill(1, at - l, at + s.length + r);
    }
  }
  let total = 0;
  for (const c of covered) total += c;
  return total >= secret.window ? spans : null;
}

/**
 * Whether `text` (a URL: path segments, matrix parameters, query names and values) holds the
 * presented key's secret split into pieces: after undoing escapes (`normalise`), or as sent
 * (`normaliseRaw`: an escape between pieces can decode to a character that breaks a stretch), and
 * removing everything that is not a letter or digit, stretches of at least 8 characters of the secret, in any
 * order and with anything between them, cover 24 of its characters (`piecesIn`, the rule the
 * header scrubber applies across headers). Linear in the length of `text`; false without a key.
 *
 * @example
 * holdsSplitCopy(m, `/send/${body.slice(0, 19)}?x=${body.slice(19)}`) // true
 */
export function holdsSplitCopy(m: KeyMaterialMatcher, text: string): boolean {
  const decoded = m.normalise(text);
  if (m.piecesIn(decoded) !== null) return true;
  // Read as sent only when that differs (a URL with escapes): most URLs are read once.
  const raw = m.normaliseRaw(text);
  return raw !== decoded && m.piecesIn(raw) !== null;
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
  const piece = Math.min(PIECE_MIN, w);
  return { text, window: w, blocks: blocksOf(text, w), piece, pieceBlocks: blocksOf(text, piece), raw };
}

function blocksOf(text: string, w: number): { at: number; s: string }[] {
  const size = Math.max(1, Math.ceil(w / 2));
  const blocks: { at: number; s: string }[] = [];
  for (let at = 0; at + size <= text.length; at += size) blocks.push({ at, s: text.slice(at, at + size) });
  if (text.length % size !== 0) blocks.push({ at: text.length - size, s: text.slice(-size) });
  return blocks;
}

/**
 * How far a hit extends: block `s` (at `at` in the secret `t`) found at `i` in `n` goes on for `l`
 * more matching characters before it and `r` after it. At most the secret's length of steps.
 */
function extendHit(n: string, t: string, at: number, s: string, i: number): [l: number, r: number] {
  let l = 0;
  while (l < at && i - l > 0 && n[i - l - 1] === t[at - l - 1]) l++;
  let r = 0;
  const end = at + s.length;
  while (end + r < t.length && i + s.length + r < n.length && n[i + s.length + r] === t[end + r]) r++;
  return [l, r];
}

/** The first place `n` holds `window` consecutive characters of the secret. Linear: each hit extends ≤ secret length. */
function findWindow(n: string, secret: Secret): [number, number] | null {
  const t = secret.text;
  for (const { at, s } of secret.blocks) {
    for (let i = n.indexOf(s); i !== -1; i = n.indexOf(s, i + 1)) {
      const [l, r] = extendHit(n, t, at, s, i);
      if (l + s.length + r >= secret.window) return [i - l, i + s.length + r];
    }
  }
  return null;
}

/**
 * `text`, its Unicode fold (when it differs), then each round of escape decoding (each folded)
 * until stable; null when still changing after the last round.
 */
function decodedForms(text: string): string[] | null {
  const forms = [text];
  let s = foldUnicode(text);
  if (s !== text) forms.push(s);
  for (let i = 0; ESCAPE_TRIGGERS.test(s); i++) {
    const next = foldUnicode(s.replace(ESCAPES, decodeEscape));
    if (next === s) break;
    if (i === MAX_DECODE_ROUNDS) return null;
    forms.push((s = next));
  }
  return forms;
}

function decodeEscape(m: string): string {
  let code: number;
  const c1 = m.charCodeAt(1);
  if (m.charCodeAt(0) === 37) code = parseInt(c1 === 117 || c1 === 85 ? m.slice(2) : m.slice(1), 16);
  else if (m.charCodeAt(0) === 38)
    code = c1 === 35 && (m[2] === 'x' || m[2] === 'X') ? parseInt(m.slice(3), 16) : parseInt(m.slice(2), 10);
  else if (c1 === 120 || c1 === 85)
    code = parseInt(m.slice(2), 16); // \x, \U
  else if (c1 === 117)
    code = parseInt(m.charCodeAt(2) === 123 ? m.slice(3, -1) : m.slice(2), 16); // \u
  else code = parseInt(m.slice(1), 8); // octal
  return code <= 0x10ffff ? String.fromCodePoint(code) : m;
}

/**
 * `s` with UTF-8 byte sequences (as latin1 characters, overlong ones too) made characters, then
 * NFKC-folded (full-width `ｎ`, `𝐧`, `ⓝ` become `n`, `％` becomes `%`). A text that is all ASCII
 * is returned as is after one native test: the common case costs no folding.
 *
 * @example
 * foldUnicode('\xef\xbd\x8e\xc1\xae') // 'nn'
 */
export function foldUnicode(s: string): string {
  if (!NON_ASCII.test(s)) return s;
  return s.replace(UTF8_SEQUENCE, decodeUtf8).normalize('NFKC');
}

function decodeUtf8(m: string): string {
  const b0 = m.charCodeAt(0);
  let code: number;
  if (m.length === 2) code = ((b0 & 0x1f) << 6) | (m.charCodeAt(1) & 0x3f);
  else if (m.length === 3)
    code = ((b0 & 0x0f) << 12) | ((m.charCodeAt(1) & 0x3f) << 6) | (m.charCodeAt(2) & 0x3f);
  else
    code =
      ((b0 & 0x07) << 18) |
      ((m.charCodeAt(1) & 0x3f) << 12) |
      ((m.charCodeAt(2) & 0x3f) << 6) |
      (m.charCodeAt(3) & 0x3f);
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

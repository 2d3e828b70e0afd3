import type { IncomingHttpHeaders } from 'node:http';
import { crc32 } from 'node:zlib';
import { KEY_CHECKSUM_LENGTH, KEY_PREFIX_PATTERN, KEY_RANDOM_LENGTH } from '../auth/api-key.js';
import { decodeBudget, foldUnicode, squash } from './decode.js';
import { addKeyShapes, type KeyFinding, type KeyMatcher } from './key-material.js';

// The strict level (`guards.level: strict`; threat model: T1 and T5 against a client that builds
// encodings on purpose, up to non-goal N1; docs/security.md "Levels" states the cost). Not on the
// default path.

/**
 * Consecutive characters of a key's secret body that make a copy: 24 of its 38. A shorter piece
 * leaves at least 9 random characters unknown (53 bits, online guesses only). Compared without
 * case, so 24 characters still carry 124 bits: a chance match is out of reach.
 */
const SECRET_WINDOW = 24;
const BODY_LENGTH = KEY_RANDOM_LENGTH + KEY_CHECKSUM_LENGTH;
/** Environments a bare 38-character body is checked against (its checksum covers `nk_<env>_`). */
const BODY_ENVIRONMENTS = ['live', 'test'];
/** Pieces of the secret, at least this long, that the split check puts together. */
const PIECE_MIN = 8;
/** base64 / hex / base32 inside base64 / hex: two levels, so base64(base64(key)) is seen. */
const MAX_NESTING = 2;

const ESCAPE_TRIGGERS = /[%\\&]/;
/** An escape `unescape` does not read: `\`, an HTML entity, `%U`. */
const NOT_PERCENT_ONLY = /\\|&#|%U/;
/**
 * `%XX`, `%uXXXX`, `\xXX`, `\uXXXX`, `\u{X…}`, `\UXXXXXXXX`, octal `\NNN`, HTML numeric entities with
 * any number of leading zeros. Each alternative starts with a fixed character and every run is
 * bounded: a failed attempt costs a constant.
 */
const ESCAPES =
  /%[uU][0-9a-fA-F]{4}|%[0-9a-fA-F]{2}|\\x[0-9a-fA-F]{2}|\\u\{[0-9a-fA-F]{1,6}\}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\[0-7]{1,3}|&#[xX]0*[0-9a-fA-F]{1,6};?|&#0*[0-9]{1,7};?/g;
const NOT_BASE62 = /[^0-9A-Za-z]+/g;
const NOT_KEY_CHAR = /[^A-Za-z0-9_]+/g;
const WHITESPACE = /\s+/g;
const HEX_JUNK = /0x|[^0-9a-f]+/g;

/** The split-copy check of the strict level: a secret cut into pieces, put back together. */
export interface SplitCheck {
  /** `text` with escapes undone, lowercased, letters and digits only. */
  normalise(text: string): string;
  /** `text` as sent, lowercased, letters and digits only. */
  normaliseRaw(text: string): string;
  /** Where in a normalised string the pieces of a split copy sit (`findPieces`), or null. */
  piecesIn(normalised: string): [number, number][] | null;
}

/**
 * A secret (lowercase; letters and digits only unless `raw`: a legacy key with few of them, only
 * whitespace removed), and the blocks of which every `window` (or `piece`) of it holds one.
 */
interface Secret {
  text: string;
  window: number;
  blocks: { at: number; s: string }[];
  piece: number;
  pieceBlocks: { at: number; s: string }[];
  raw: boolean;
}

/**
 * The strict matcher of one presented key (`''`: none). A text holds key material when, after
 * undoing %-escapes, `\x`, `\u`, octal and HTML numeric escapes (up to 8 rounds, within a budget of
 * 2 characters decoded per character; past either it is *undecided*) and folding Unicode (UTF-8
 * bytes, overlong ones too, then NFKC), it holds
 * - 24 consecutive characters of the presented key's secret body, in any case, with anything that
 *   is not a letter or digit in between;
 * - or a valid gateway key shape, separators allowed except around `_`;
 * - or a bare 38-character body with a valid checksum for `live`, `test` or the presented
 *   environment (separators between its characters allowed);
 * - or base64/base64url (any alignment, whitespace ignored), hex (`6e:6b`, `0x6e,`) or, at the top
 *   level, single-case base32 runs decode to a text that does, two levels deep.
 * A legacy key counts whole. Linear in the length of `text`; never throws. `shallow` (the URL key
 * guard, before authentication: work an anonymous client can ask for) reads binary encodings one
 * level deep and no base32.
 *
 * @example
 * createStrictMatcher(key).holds(key.slice(8).split('').join('.')) // true
 */
export function createStrictMatcher(key: string, shallow = false): KeyMatcher {
  const nesting = shallow ? 1 : MAX_NESTING;
  const secret = key === '' ? null : secretOf(key);
  const minLength = secret === null ? BODY_LENGTH : Math.min(secret.window, BODY_LENGTH);
  const strip = (s: string) => (secret?.raw ? s.toLowerCase().replace(WHITESPACE, '') : squash(s));
  const envs = bodyEnvironments(key);
  const spanIn = (n: string) => (secret === null || n.length < secret.window ? null : findWindow(n, secret));
  const p = runPatternsFor(minLength);
  /** One decoded form: the secret, or other keys' shapes and bare bodies (added to `found`). */
  function checkForm(t: string, found: string[]): boolean {
    if (spanIn(strip(t)) !== null) return found.push(key) > 0;
    if (t.length < BODY_LENGTH) return false;
    const before = found.length;
    bodiesIn(t.replace(NOT_BASE62, ''), envs, found);
    if (t.includes('_')) addKeyShapes(t.replace(NOT_KEY_CHAR, ''), found);
    return found.length > before;
  }
  function scan(text: string, depth: number, found: string[]): boolean | 'undecided' {
    const forms = decodedForms(text);
    if (forms === null) return 'undecided';
    for (const f of forms) if (checkForm(f, found)) return true;
    // Binary encodings of the first and the fully decoded form (escapes never hide inside base64).
    for (const f of forms.length > 1 ? [forms[0]!, forms.at(-1)!] : forms) {
      for (const d of binaryDecodings(f, p, depth === 0 && !shallow)) {
        // A wrong alignment decodes to noise: only a text with a printable stretch can hold the key.
        if (!p.printable.test(d)) continue;
        const r = depth + 1 < nesting ? scan(d, depth + 1, found) : checkForm(d, found);
        if (r !== false) return r;
      }
    }
    return false;
  }
  function find(text: string): KeyFinding | null {
    if (text.length < minLength) return null;
    const found: string[] = [];
    const r = scan(text, 0, found);
    if (r === 'undecided') return { keys: [], undecided: true };
    return r ? { keys: [...new Set(found)], undecided: false } : null;
  }
  const split: SplitCheck = {
    normalise: (text) => strip(decodedForms(text)?.at(-1) ?? text),
    normaliseRaw: strip,
    piecesIn: (n) => (secret === null ? null : findPieces(n, secret)),
  };
  const holds = (text: string) => find(text) !== null;
  return { key, find, holds, holdsName: holds, split };
}

/** `nk_<env>_`, and the CRC-32 of it followed by 32 zero bytes (a window's CRC xors onto it). */
interface BodyEnvironment {
  prefix: string;
  crc: number;
}
const envOf = (e: string): BodyEnvironment => ({
  prefix: `nk_${e}_`,
  crc: crc32(Buffer.alloc(KEY_RANDOM_LENGTH), crc32(`nk_${e}_`)),
});
const COMMON_ENVIRONMENTS = BODY_ENVIRONMENTS.map(envOf);

function bodyEnvironments(key: string): BodyEnvironment[] {
  const m = KEY_PREFIX_PATTERN.exec(key);
  if (m === null || BODY_ENVIRONMENTS.includes(m[1]!)) return COMMON_ENVIRONMENTS;
  return [...COMMON_ENVIRONMENTS, envOf(m[1]!)];
}

/** A run of base62 long enough to be a body, tried from its first character only (linear). */
const BASE62_RUN = new RegExp(`(?<![0-9A-Za-z])[0-9A-Za-z]{${BODY_LENGTH},}`, 'g');
const CHECKSUM_AT = KEY_RANDOM_LENGTH;
/** CRC-32 by byte, and what a byte adds once 32 more have followed it (it leaves the window). */
const CRC_STEP = new Int32Array(256);
const CRC_OUT = new Int32Array(256);
for (let b = 0; b < 256; b++) {
  let c = b;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_STEP[b] = c;
}
for (let b = 0; b < 256; b++) {
  let r = CRC_STEP[b]!;
  for (let k = 0; k < CHECKSUM_AT; k++) r = CRC_STEP[r & 0xff]! ^ (r >>> 8);
  CRC_OUT[b] = r;
}

/**
 * Adds to `found` every key whose bare body (32 random + 6 checksum characters) sits in a base62
 * run of `t` with a valid checksum for one of `envs`. The checksum is a CRC-32 in 6 base62 digits,
 * so its first digit is 0-4: other places cost one rolling CRC step (the CRC is linear: the byte
 * leaving the 32-byte window is xored out), the rest a comparison per environment. False positives:
 * 62^-6 per place and environment (below 10^-6 for a 16 KB URL).
 */
function bodiesIn(t: string, envs: BodyEnvironment[], found: string[]): void {
  BASE62_RUN.lastIndex = 0;
  for (let m = BASE62_RUN.exec(t); m !== null; m = BASE62_RUN.exec(t)) {
    const run = m[0];
    let crc = 0;
    for (let i = 0; i < CHECKSUM_AT - 1; i++) crc = CRC_STEP[(crc ^ run.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
    for (let p = 0; p + BODY_LENGTH <= run.length; p++) {
      crc = CRC_STEP[(crc ^ run.charCodeAt(p + CHECKSUM_AT - 1)) & 0xff]! ^ (crc >>> 8);
      if (p > 0) crc ^= CRC_OUT[run.charCodeAt(p - 1)]!;
      const first = run.charCodeAt(p + CHECKSUM_AT) - 48;
      if (first < 0 || first > 4) continue;
      // The first checksum digit settles most places: the rest only for an environment it fits.
      for (const e of envs) {
        const expected = (e.crc ^ crc) >>> 0;
        if (Math.floor(expected / BASE62_5) !== first || expected !== base62At(run, p + CHECKSUM_AT))
          continue;
        found.push(e.prefix + run.slice(p, p + BODY_LENGTH));
        break;
      }
    }
  }
}

const BASE62_5 = 62 ** 5;

/** The number the 6 base62 digits at `run[i]` spell. */
function base62At(run: string, i: number): number {
  let sum = 0;
  for (let k = i; k < i + KEY_CHECKSUM_LENGTH; k++) {
    const c = run.charCodeAt(k);
    sum = sum * 62 + (c <= 57 ? c - 48 : c <= 90 ? c - 55 : c - 61);
  }
  return sum;
}

/** The secret of a key: an `nk_` key's body; a legacy key's letters and digits, or itself. */
function secretOf(key: string): Secret {
  const body = key.slice(KEY_PREFIX_PATTERN.exec(key)?.[0].length ?? key.length);
  if (/^[0-9A-Za-z]{24,}$/.test(body)) return withBlocks(body.toLowerCase(), SECRET_WINDOW, false);
  const alnum = squash(key);
  if (alnum.length >= 16) return withBlocks(alnum, alnum.length, false);
  return withBlocks(key.toLowerCase().replace(WHITESPACE, ''), key.replace(WHITESPACE, '').length || 1, true);
}

/** Blocks of half a window at fixed places (and one ending the text): every window holds one. */
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
 * Each stretch of `n` that holds at least `min` consecutive characters of the secret `t`, found by
 * its blocks (indexOf, then extended both ways): `hit(from, to, at)` with its place in `n` and where
 * it starts in `t`; a `true` from `hit` stops the walk. Linear.
 */
function eachStretch(
  n: string,
  t: string,
  blocks: Secret['blocks'],
  min: number,
  hit: (from: number, to: number, at: number) => boolean | void,
): void {
  for (const { at, s } of blocks) {
    for (let i = n.indexOf(s); i !== -1; i = n.indexOf(s, i + 1)) {
      let l = 0;
      while (l < at && i - l > 0 && n[i - l - 1] === t[at - l - 1]) l++;
      let r = i + s.length;
      while (r - i + at < t.length && r < n.length && n[r] === t[r - i + at]) r++;
      if (r - i + l >= min && hit(i - l, r, at - l)) return;
    }
  }
}

/** The first place `n` holds `window` consecutive characters of the secret. */
function findWindow(n: string, secret: Secret): [number, number] | null {
  let found: [number, number] | null = null;
  eachStretch(n, secret.text, secret.blocks, secret.window, (from, to) => !!(found = [from, to]));
  return found;
}

/**
 * Stretches of `n` of at least `secret.piece` (8) characters of the secret, in any order and with
 * anything between them, when together they cover a window (24 characters); else null.
 */
function findPieces(n: string, secret: Secret): [number, number][] | null {
  const covered = new Uint8Array(secret.text.length);
  const spans: [number, number][] = [];
  eachStretch(n, secret.text, secret.pieceBlocks, secret.piece, (from, to, at) => {
    spans.push([from, to]);
    covered.fill(1, at, at + to - from);
  });
  return covered.reduce((a, c) => a + c, 0) >= secret.window ? spans : null;
}

/**
 * `text`, its Unicode fold, then each round of escape decoding (folded) until stable; null when
 * still changing after the last round or past the budget (2 characters decoded per character).
 */
function decodedForms(text: string): string[] | null {
  const forms = [text];
  let s = foldUnicode(text);
  if (s !== text) forms.push(s);
  const budget = decodeBudget(text.length);
  for (let i = 0; ESCAPE_TRIGGERS.test(s); i++) {
    // `%XX` and `%uXXXX` alone: the native `unescape` decodes them the same way, in one pass.
    const next = foldUnicode(NOT_PERCENT_ONLY.test(s) ? s.replace(ESCAPES, decodeEscape) : unescape(s));
    if (next === s) break;
    if (i === budget.rounds || (budget.left -= s.length) < 0) return null;
    forms.push((s = next));
  }
  return forms;
}

function decodeEscape(m: string): string {
  const c1 = m.charCodeAt(1);
  let code: number;
  if (m[0] === '%') code = parseInt(c1 === 117 || c1 === 85 ? m.slice(2) : m.slice(1), 16);
  else if (m[0] === '&')
    code = m[2] === 'x' || m[2] === 'X' ? parseInt(m.slice(3), 16) : parseInt(m.slice(2), 10);
  else if (c1 === 120 || c1 === 85)
    code = parseInt(m.slice(2), 16); // \x, \U
  else if (c1 === 117)
    code = parseInt(m.charCodeAt(2) === 123 ? m.slice(3, -1) : m.slice(2), 16); // \u
  else code = parseInt(m.slice(1), 8); // octal
  return code <= 0x10ffff ? String.fromCodePoint(code) : m;
}

interface RunPatterns {
  /** Whether any run below is there: one native pass in the common case. */
  gate: RegExp;
  base64: RegExp;
  hex: RegExp;
  base32: RegExp;
  /** A stretch of printable ASCII (NUL too: UTF-16) long enough to carry the key. */
  printable: RegExp;
}
const runPatterns = new Map<number, RunPatterns>();

/** Patterns for runs long enough to carry `minLength` bytes (made once per length). */
function runPatternsFor(minLength: number): RunPatterns {
  let p = runPatterns.get(minLength);
  if (p === undefined) {
    // Each run is tried from its first character only (the lookbehinds), and every quantified
    // group is followed by something it cannot match: no backtracking blow-up.
    const base64 = `(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{${Math.ceil((minLength * 4) / 3)},}`;
    const hex = `(?<![0-9a-f])(?:(?:0x)?[0-9a-f]{2}[^0-9a-z]{0,2}){${minLength},}`;
    const b32 = Math.ceil((minLength * 8) / 5);
    p = {
      gate: new RegExp(`${base64}|${hex}`, 'i'),
      base64: new RegExp(base64, 'g'),
      hex: new RegExp(hex, 'gi'),
      printable: new RegExp(`(?<![\\0\\t\\n\\r\\x20-\\x7e])[\\0\\t\\n\\r\\x20-\\x7e]{${minLength},}`),
      // Base32 is written in one case: a mixed-case run (base64, text) is not it.
      base32: new RegExp(`(?<![A-Z2-7])[A-Z2-7]{${b32},}|(?<![a-z2-7])[a-z2-7]{${b32},}`, 'g'),
    };
    runPatterns.set(minLength, p);
  }
  return p;
}

/**
 * What the base64/base64url runs of `s` (4 alignments, whitespace ignored), its hex runs (both
 * nibble alignments) and, at the top level, its base32 runs (8 alignments) decode to, as latin1.
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

/** RFC 4648 base32 (lowercase, no padding) from character `from`, as latin1 text. */
function decodeBase32(run: string, from: number): string {
  const out = Buffer.allocUnsafe(Math.max(0, Math.floor(((run.length - from) * 5) / 8)));
  let bits = 0;
  let value = 0;
  let n = 0;
  for (let i = from; i < run.length; i++) {
    const c = run.charCodeAt(i);
    value = ((value << 5) | (c >= 97 ? c - 97 : c - 24)) & 0xfff; // a-z: 0-25, 2-7: 26-31
    bits += 5;
    if (bits >= 8) out[n++] = (value >> (bits -= 8)) & 0xff;
  }
  return out.toString('latin1', 0, n);
}

/**
 * Whether a URL holds the presented key's secret split into pieces (segments, matrix parameters,
 * query names and values): `piecesIn` on the URL normalised with escapes undone, and as sent (an
 * escape between pieces can decode to a character that breaks a stretch). False without a key or
 * at the default level.
 *
 * @example
 * holdsSplitCopy(m, `/send/${body.slice(0, 19)}?x=${body.slice(19)}`) // true
 */
export function holdsSplitCopy(m: KeyMatcher, text: string): boolean {
  if (m.split === null) return false;
  const decoded = m.split.normalise(text);
  if (m.split.piecesIn(decoded) !== null) return true;
  const raw = m.split.normaliseRaw(text);
  return raw !== decoded && m.split.piecesIn(raw) !== null;
}

/**
 * Headers the gateway may remove after scrubbing (`Transfer-Encoding` after http-proxy's DELETE
 * handling, `traceparent`/`tracestate` when tracing continues the trace, an empty trusted
 * `X-Forwarded-Host`): the pieces on either side of one become neighbours upstream.
 */
const REMOVED_AFTER_SCRUB = new Set(['transfer-encoding', 'traceparent', 'tracestate', 'x-forwarded-host']);
/** Characters of a stretch a piece must hold to be dropped with it (unless it lies wholly inside). */
const GRAZE_LIMIT = 4;

/**
 * Drops, in place, every header (name or value; from `Cookie`, the pairs) taking part in a copy of
 * the secret split over several of them, until no join shows one. Four joins are read: escapes
 * undone and as sent, each with the headers in the order they came and reversed (http-proxy writes
 * them to the upstream in reverse), and each also without REMOVED_AFTER_SCRUB. A piece that holds
 * fewer than 4 characters of a stretch, at its edge, is kept (a neighbour continuing a stretch by
 * chance). Each round drops at least one piece, so this ends. Strict level only.
 */
export function dropSplitCopies(out: IncomingHttpHeaders, m: KeyMatcher): void {
  if (m.split === null) return;
  for (;;) {
    const pieces = piecesOf(out, m.split);
    const found = findSplitCopy(pieces, m.split);
    if (found === null) return;
    const droppedPairs = new Set<number>();
    const { ends } = found;
    for (const [from, to] of found.spans) {
      // Every piece that overlaps the stretch (a request has tens of pieces: a walk is enough).
      for (let i = 0; i < ends.length && (ends[i - 1] ?? 0) < to; i++) {
        const start = ends[i - 1] ?? 0;
        if (ends[i]! <= from) continue;
        const inside = Math.min(ends[i]!, to) - Math.max(start, from);
        if (inside < GRAZE_LIMIT && inside < ends[i]! - start) continue;
        const piece = found.order[i]!;
        if (pieces.pair[piece]! >= 0) droppedPairs.add(pieces.pair[piece]!);
        else delete out[pieces.owner[piece]!];
      }
    }
    if (pieces.cookie !== null && out.cookie !== undefined && droppedPairs.size > 0) {
      const kept = pieces.cookie.filter((_, i) => !droppedPairs.has(i));
      if (kept.length > 0) out.cookie = kept.join('; ');
      else delete out.cookie;
    }
  }
}

interface Pieces {
  /** Per piece: its header, its cookie pair (-1: none), its decoded and raw normal forms. */
  owner: string[];
  pair: number[];
  forms: [string, string][];
  /** Where each header's pieces start (for the reverse join). */
  groups: number[];
  /** Pieces of headers the gateway may still remove. */
  volatile: Set<number>;
  cookie: string[] | null;
}

/** Each kept header's name and value (each cookie pair on its own), normalised. */
function piecesOf(out: IncomingHttpHeaders, split: SplitCheck): Pieces {
  const p: Pieces = { owner: [], pair: [], forms: [], groups: [], volatile: new Set(), cookie: null };
  const add = (text: string, name: string, pair: number) => {
    p.owner.push(name);
    p.pair.push(pair);
    p.forms.push([split.normalise(text), split.normaliseRaw(text)]);
  };
  for (const name in out) {
    const v = out[name];
    if (v === undefined) continue;
    p.groups.push(p.owner.length);
    if (REMOVED_AFTER_SCRUB.has(name)) p.volatile.add(p.owner.length).add(p.owner.length + 1);
    add(name, name, -1);
    if (name === 'cookie' && typeof v === 'string') {
      p.cookie = v
        .split(';')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      p.cookie.forEach((s, i) => add(s, name, i));
    } else add(typeof v === 'string' ? v : v.join(','), name, -1);
  }
  return p;
}

/** The first join holding a split copy: the pieces' order in it, where each ends, and the stretches. */
function findSplitCopy(
  p: Pieces,
  split: SplitCheck,
): { order: number[]; ends: number[]; spans: [number, number][] } | null {
  const forward = p.forms.map((_, i) => i);
  const reverse: number[] = [];
  for (let g = p.groups.length - 1; g >= 0; g--)
    for (let i = p.groups[g]!; i < (p.groups[g + 1] ?? p.forms.length); i++) reverse.push(i);
  const orders = [forward, reverse];
  if (p.volatile.size > 0) orders.push(...orders.map((o) => o.filter((i) => !p.volatile.has(i))));
  // Without escapes the raw join is the decoded one: read it once.
  const readRaw = p.forms.some(([decoded, raw]) => decoded !== raw);
  for (const form of readRaw ? [0, 1] : [0]) {
    for (const order of orders) {
      let joined = '';
      const ends: number[] = [];
      for (const i of order) ends.push((joined += p.forms[i]![form]!).length);
      const spans = split.piecesIn(joined);
      if (spans !== null) return { order, ends, spans };
    }
  }
  return null;
}

import { KEY_CHECKSUM_LENGTH, KEY_RANDOM_LENGTH, parseApiKey } from './api-key.js';

/**
 * Two pieces of the URL key guard (url-key-guard.ts) that read key material in forms the `nk_`
 * shape search misses: bare key bodies recognised by their checksum, and legacy escapes some
 * upstreams decode. Both linear, no exceptions.
 */

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
export class BareBodyScan {
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

/**
 * Escapes some upstreams still decode though WHATWG and `decodeURIComponent` do not: IIS's and old
 * ASP's `%uXXXX`, and overlong UTF-8 (a Java or PHP decoder that does not check the shortest form):
 * 2 bytes `%c0`/`%c1` + a continuation (`%c1%ae` is `n`), 3 bytes `%e0` + `%80`–`%9f` + a
 * continuation, 4 bytes `%f0` + `%80`–`%8f` + two. The trigger is one native test (fixed-length
 * alternatives, no backtracking); most strings stop there.
 */
export const LEGACY_ESCAPE_TRIGGER = /%(?:u[0-9a-f]{4}|c[01]%[89ab]|e0%[89]|f0%8)/i;

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
export function decodeLegacyEscapes(s: string): string {
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
 * A base64/base64url run long enough to hold a bare body (38 bytes: 51 characters), tried from its
 * first character only (the lookbehind): one native pass, no backtracking. `=` ends a run (padding;
 * Node's decoder would stop there), `+` and `/` are in it (standard base64, the path's separators).
 */
const BASE64_RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{51,}/g;
/** A hex run long enough to hold a bare body (38 bytes: 76 digits), either case; inside a base64 run. */
const HEX_RUN = /(?<![0-9A-Fa-f])[0-9A-Fa-f]{76,}/g;
/** A run of base62 bytes long enough to be a bare body, in decoded bytes; tried from its first byte only. */
const DECODED_BODY_RUN = /(?<![0-9A-Za-z])[0-9A-Za-z]{38,}/g;
/** A key shape in decoded bytes, `nk_<env>_` in any case; bounded (≤ 60 steps per `nk_`). */
const DECODED_KEY_SHAPE = /nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{38}/gi;

/**
 * Finds keys in base64 (standard or url-safe, padded or not) and hex (either case) inside `text`:
 * each base64 run of 51 characters or more is decoded at its 4 character alignments (so a key at any
 * byte offset of a longer blob is read), and each hex run of 76 digits or more inside it at both
 * nibble alignments. In the bytes (as latin1 text), each run of 38 base62 bytes or more is read by a
 * fresh BareBodyScan (bare bodies of `live` and `test` keys, also after their `nk_<env>_`), and
 * `nk_<env>_` shapes of any environment count when their checksum is valid. Found keys are pushed
 * as full keys (`nk_<env>_…`), for the exposure check. Decoded noise is not a key: only the checksum
 * decides (odds as in BareBodyScan, per decoded base62 byte; noise rarely holds 38 base62 bytes in a
 * row). A body with separators inside, once encoded, is not read.
 *
 * Cost: one native regex pass over `text`; a text without a run of 51 base64 characters stops
 * there. Each run character is decoded at most 6 times (4 base64 alignments, 2 hex ones, native),
 * and each decoded byte read by two native searches: linear, no exceptions (Node's base64 and hex
 * decoders skip what they cannot read). The rolling CRC only reads runs of 38 base62 bytes.
 */
export function collectEncodedKeys(text: string, out: string[]): void {
  if (text.length < 51) return;
  BASE64_RUN.lastIndex = 0;
  for (let m = BASE64_RUN.exec(text); m !== null; m = BASE64_RUN.exec(text)) {
    const run = m[0];
    for (let o = 0; o < 4; o++) collectDecoded(Buffer.from(run.slice(o), 'base64').toString('latin1'), out);
    HEX_RUN.lastIndex = 0;
    for (let h = HEX_RUN.exec(run); h !== null; h = HEX_RUN.exec(run)) {
      const hex = h[0];
      collectDecoded(Buffer.from(hex, 'hex').toString('latin1'), out);
      collectDecoded(Buffer.from(hex.slice(1), 'hex').toString('latin1'), out);
    }
  }
}

/** Bare bodies and checksum-valid key shapes in decoded bytes. */
function collectDecoded(bytes: string, out: string[]): void {
  DECODED_BODY_RUN.lastIndex = 0;
  for (let m = DECODED_BODY_RUN.exec(bytes); m !== null; m = DECODED_BODY_RUN.exec(bytes))
    new BareBodyScan().feed(m[0], out);
  DECODED_KEY_SHAPE.lastIndex = 0;
  for (let m = DECODED_KEY_SHAPE.exec(bytes); m !== null; m = DECODED_KEY_SHAPE.exec(bytes)) {
    const sep = m[0].indexOf('_', 3);
    const key = m[0].slice(0, sep).toLowerCase() + m[0].slice(sep);
    if (parseApiKey(key, { maxLength: 256, acceptLegacy: false }).ok) out.push(key);
  }
}

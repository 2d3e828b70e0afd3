import { hash as cryptoHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  DISPLAY_PREFIX_RANDOM_CHARS,
  ENVIRONMENT_PATTERN,
  ENVIRONMENT_SOURCE,
  KEY_LIKE_PATTERN,
} from '../config/field-patterns.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 32 base62 characters = 190.5 bits of entropy. */
export const KEY_RANDOM_LENGTH = 32;
export const KEY_CHECKSUM_LENGTH = 6;
/**
 * Environments (`live`, `test`, `staging`), the key shape anywhere in a string, and the display
 * prefix's length: one rule, in config/field-patterns.ts.
 */
export { DISPLAY_PREFIX_RANDOM_CHARS, ENVIRONMENT_PATTERN, KEY_LIKE_PATTERN };

const KEY_PATTERN = new RegExp(`^nk_(${ENVIRONMENT_SOURCE})_([0-9A-Za-z]{38})$`);
/** `nk_<environment>_` at the start of a key (the environment is group 1). */
export const KEY_PREFIX_PATTERN = new RegExp(`^nk_(${ENVIRONMENT_SOURCE})_`);
/** The longest environment, and the shortest key: `nk_` + 2 + `_` + 38. */
export const ENVIRONMENT_MAX_LENGTH = 16;
export const KEY_MIN_LENGTH = 6 + KEY_RANDOM_LENGTH + KEY_CHECKSUM_LENGTH;
/** Printable ASCII without space or comma (a comma means the header was sent twice and joined). */
const LEGACY_PATTERN = /^[\x21-\x2b\x2d-\x7e]+$/;
const LEGACY_MIN_LENGTH = 20;

/** `parseApiKey`'s answer: the key's environment (null for a legacy key), or why it was refused. */
export type ParsedKey =
  { ok: true; environment: string | null } | { ok: false; reason: 'malformed' | 'checksum' | 'too_long' };

/**
 * Checks a client-supplied key before any store access. Rejects over-long values, anything that is
 * not printable ASCII, and `nk_` keys whose checksum does not match (a typo or a guess costs no
 * lookup). Keys of another format pass only with `acceptLegacy` (imported by hash).
 *
 * @example
 * parseApiKey('nk_live_…', { maxLength: 256, acceptLegacy: false }) // { ok: true, environment: 'live' }
 */
export function parseApiKey(raw: string, opts: { maxLength: number; acceptLegacy: boolean }): ParsedKey {
  if (raw.length > opts.maxLength) return { ok: false, reason: 'too_long' };
  const m = KEY_PATTERN.exec(raw);
  if (m) {
    const body = raw.slice(0, raw.length - KEY_CHECKSUM_LENGTH);
    const sum = raw.slice(raw.length - KEY_CHECKSUM_LENGTH);
    return checksumOf(body) === sum ? { ok: true, environment: m[1]! } : { ok: false, reason: 'checksum' };
  }
  if (
    opts.acceptLegacy &&
    raw.length >= LEGACY_MIN_LENGTH &&
    LEGACY_PATTERN.test(raw) &&
    !raw.startsWith('nk_')
  ) {
    return { ok: true, environment: null };
  }
  return { ok: false, reason: 'malformed' };
}

/** Creates a new key `nk_<environment>_<32 base62><6 checksum>` from `crypto.randomBytes`. */
export function generateApiKey(environment: string): string {
  if (!ENVIRONMENT_PATTERN.test(environment)) throw new TypeError(`invalid key environment: ${environment}`);
  const body = `nk_${environment}_${randomBase62(KEY_RANDOM_LENGTH)}`;
  return body + checksumOf(body);
}

/** SHA-256 of the whole key, hex. Keys carry ≥ 190 random bits, so a fast hash is safe here. */
export function hashApiKey(key: string): string {
  // crypto.hash (one-shot, Node >= 20.12) is several times cheaper than createHash for short inputs.
  return cryptoHash('sha256', key, 'hex');
}

/** The part of a key that may be shown and stored: `nk_live_AbC123`. */
export function displayPrefixOf(key: string): string {
  const m = /^(nk_[a-z0-9]+_)/.exec(key);
  if (m) return m[1]! + key.slice(m[1]!.length, m[1]!.length + DISPLAY_PREFIX_RANDOM_CHARS);
  return key.slice(0, 4);
}

function checksumOf(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < KEY_CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 * 62: rejecting bytes above it keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

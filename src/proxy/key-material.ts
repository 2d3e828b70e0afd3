/** Double and triple %-encoding are undone too (`%256E` → `%6E` → `n`). */
const MAX_DECODE_ROUNDS = 4;
const WHITESPACE = /[ \t]+/g;
const PERCENT_ESCAPE = /%([0-9a-fA-F]{2})/g;
const URL_SAFE_BASE64 = /[-_]/g;

/** Finds copies of one API key inside header values and cookie pairs. */
export interface KeyMaterialMatcher {
  /** Whether `text` holds the key in any encoding the matcher knows (see {@link createKeyMaterialMatcher}). */
  holds(text: string): boolean;
}

/**
 * Builds a matcher for one presented key. `holds(text)` is true when `text` carries the key:
 * - raw, in any letter case, with spaces or tabs inserted anywhere;
 * - %-encoded (any case, partly or fully, up to four times over);
 * - in base64 or base64url at any alignment inside a longer token (`Basic base64(key:)`,
 *   `base64(user:key)`, a JWT payload holding it), also %-encoded, also of the all-lower or all-upper key;
 * - hex-encoded.
 * Linear in the length of `text`; never throws. A key is ≥ 20 characters of high entropy, so a
 * match by chance is not a practical concern: a false positive only drops a header.
 *
 * @example
 * const m = createKeyMaterialMatcher(key);
 * m.holds(`Basic ${Buffer.from(`${key}:`).toString('base64')}`) // true
 */
export function createKeyMaterialMatcher(key: string): KeyMaterialMatcher {
  const lower = key.toLowerCase();
  // Built on first use: a matcher is made per request, and most header values are too short to
  // hold the key in any encoding (see `holds`), so usually nothing needs them.
  let encoded: { hex: string; cores: string[] } | null = null;
  const encodings = () =>
    (encoded ??= {
      hex: Buffer.from(key, 'latin1').toString('hex'),
      cores: [...new Set([key, lower, key.toUpperCase()])].flatMap(base64Cores),
    });
  function holdsPlain(s: string): boolean {
    const l = s.toLowerCase();
    if (l.includes(lower)) return true;
    const { hex, cores } = encodings();
    if (l.includes(hex)) return true;
    const std = s.includes('-') || s.includes('_') ? s.replace(URL_SAFE_BASE64, urlSafeToStd) : s;
    for (const core of cores) if (std.includes(core)) return true;
    return false;
  }
  return {
    holds(text: string): boolean {
      // Every encoding known here (raw, %-escaped, base64, hex) is at least as long as the key, and
      // removing whitespace or escapes only shortens: a shorter text cannot hold it.
      if (text.length < key.length) return false;
      let s = text.includes(' ') || text.includes('\t') ? text.replace(WHITESPACE, '') : text;
      if (holdsPlain(s)) return true;
      for (let i = 0; i < MAX_DECODE_ROUNDS && s.includes('%'); i++) {
        const next = s.replace(PERCENT_ESCAPE, decodeEscape);
        if (next === s) break;
        s = next.includes(' ') || next.includes('\t') ? next.replace(WHITESPACE, '') : next;
        if (holdsPlain(s)) return true;
      }
      return false;
    },
  };
}

/**
 * Whether `text` may carry the key sent in `X-API-Key` (before it is verified): true when it holds
 * it, and when the header is longer than `maxKeyLength` (such a key is refused anyway; not
 * scanning it keeps the cost bounded before authentication). False without a key.
 *
 * @example
 * mayHoldKey(req.headers['x-request-id'], req.headers['x-api-key'], 256)
 */
export function mayHoldKey(text: string, key: string | string[] | undefined, maxKeyLength: number): boolean {
  if (key === undefined || key === '') return false;
  if (typeof key !== 'string' || key.length > maxKeyLength) return true;
  return createKeyMaterialMatcher(key).holds(text);
}

/**
 * The part of the key's base64 encoding that does not depend on the bytes around it, for each of
 * the three alignments (the key starting 0, 1 or 2 bytes into a 3-byte group): found in a longer
 * base64 string wherever the key sits in the decoded bytes.
 */
function base64Cores(key: string): string[] {
  const out: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const encoded = Buffer.concat([Buffer.alloc(pad), Buffer.from(key, 'latin1')]).toString('base64');
    // Skip the characters that carry bits of the padding; stop before one that carries bits of whatever follows.
    out.push(encoded.slice(Math.ceil((pad * 8) / 6), Math.floor(((pad + key.length) * 8) / 6)));
  }
  return out;
}

function urlSafeToStd(c: string): string {
  return c === '-' ? '+' : '/';
}

function decodeEscape(_: string, h: string): string {
  return String.fromCharCode(parseInt(h, 16));
}

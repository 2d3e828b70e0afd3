// The patterns and messages of the field rules (config/fields.ts), without zod: the CLI's
// `--help` and the modules every command loads (store/types.ts, auth/api-key.ts) import these.

/** Company and key ids: safe in URLs, headers, Redis key names and log lines. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A SHA-256 hex digest (the key file may write it `sha256:<hex>`, in any case). */
export const HASH_PATTERN = /^[0-9a-f]{64}$/;
/**
 * A key's environment: 2-16 lowercase letters and digits, starting with a letter (`live`, `test`,
 * `staging`). A pattern, not a closed list: it is the `<environment>` of the key format
 * `nk_<environment>_...`, and `keys generate --environment` may name any.
 */
export const ENVIRONMENT_PATTERN = /^[a-z][a-z0-9]{1,15}$/;
/** `ENVIRONMENT_PATTERN` unanchored, for the patterns built on it (the key format, its prefix). */
export const ENVIRONMENT_SOURCE = ENVIRONMENT_PATTERN.source.slice(1, -1);
/** A key of the gateway's format anywhere in a longer string: `nk_<environment>_` + 38 base62. */
export const KEY_LIKE_PATTERN = new RegExp(`nk_${ENVIRONMENT_SOURCE}_[0-9A-Za-z]{38}`);
/** A rate-limit tier's name (the config's `rateLimit.tiers[].name`). */
export const TIER_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** Random characters of a key shown in its display prefix (`nk_live_AbC123`): 6 of its 32. */
export const DISPLAY_PREFIX_RANDOM_CHARS = 6;
/** The display prefix of a key of the gateway's format: `nk_<environment>_` and 6 base62 characters. */
export const KEY_DISPLAY_PREFIX = new RegExp(`^nk_(${ENVIRONMENT_SOURCE})_[0-9A-Za-z]{6}$`);
/**
 * The display prefix of a key imported by hash from another system (`keys.acceptLegacyFormat`):
 * its first 4 characters, printable ASCII without space or comma, never `nk_` (a legacy key never
 * starts with it).
 */
export const LEGACY_DISPLAY_PREFIX = /^(?!nk_)[\x21-\x2b\x2d-\x7e]{1,4}$/;

/** A key of the gateway's format, in any case (the checksum covers the lowercase `nk_<env>_`). */
const KEY_SHAPE = new RegExp(KEY_LIKE_PATTERN.source, 'i');
/** Runs of ASCII letters and digits long enough to be a secret: a key's body (38), a hash (64). */
const LONG_RUN = /[A-Za-z0-9]{32,}/g;

/**
 * Whether `v` holds key material: a key of the gateway's format (any case), or a run of 32 or
 * more ASCII letters and digits that holds a digit or a capital after a small letter (a key's
 * secret body, a key hash, a token of another system: random base62 has both, almost always). A
 * key id, company id, name, label or prefix never needs one, and each of them reaches a log line,
 * an audit entry or a header the upstream receives. Long words (`Donaudampfschifffahrtsgesellschaft`)
 * pass.
 *
 * @example
 * holdsKeyMaterial('acme backend'); // false
 * holdsKeyMaterial('nk_live_' + 'x'.repeat(38)); // true
 */
export function holdsKeyMaterial(v: string): boolean {
  if (KEY_SHAPE.test(v)) return true;
  for (const run of v.match(LONG_RUN) ?? []) if (/[0-9]|[a-z][A-Z]/.test(run)) return true;
  return false;
}

/** The message of a value that holds key material. */
export const KEY_MATERIAL_MESSAGE =
  'must not contain an API key, a key hash or a key-like token (32 or more letters and digits in a row)';
export const ID_MESSAGE = 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit';
export const ENVIRONMENT_MESSAGE =
  'must be 2-16 lowercase letters or digits, starting with a letter (live, test)';
export const PREFIX_MESSAGE =
  'must be the display prefix the key was made with: nk_<environment>_ and 6 letters or digits, ' +
  'or up to 4 characters of a key imported by hash';
export const TIER_NAME_MESSAGE = 'must be 1-32 lowercase letters, digits, "_" or "-"';

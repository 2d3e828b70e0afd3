import { randomBytes } from 'node:crypto';
import type { KeyRecord } from '../store/types.js';
import { displayPrefixOf, generateApiKey, hashApiKey } from './api-key.js';

/** Random bytes in a key id: 128 bits, so ids never collide across instances or offline tools. */
const KEY_ID_RANDOM_BYTES = 16;

/** What {@link createKeyRecord} needs besides randomness. */
export interface NewKeyInput {
  /** The owning company; `''` when not known yet (an offline entry placed in the file by hand). */
  companyId: string;
  /** Must match `ENVIRONMENT_PATTERN`, else `generateApiKey` throws a `TypeError`. */
  environment: string;
  label: string | null;
  expiresAt: string | null;
  /** `YYYY-MM-DDTHH:MM:SSZ`. */
  createdAt: string;
}

/** A fresh key: the plaintext (shown once, never stored) and the record to store. */
export interface NewKey {
  key: string;
  record: KeyRecord;
}

/**
 * The one place a key record is built, for the admin API, rotation and `keys generate`: a new
 * key from `crypto.randomBytes`, its SHA-256, its display prefix and an id
 * `key_<22 base64url characters>` (16 random bytes, accepted by `ID_PATTERN`).
 *
 * @example
 * const { key, record } = createKeyRecord({
 *   companyId: 'acme', environment: 'live', label: null, expiresAt: null, createdAt: isoSeconds(),
 * });
 * await store.createKey(record, 2, record.createdAt); // hand `key` to the client, then forget it
 */
export function createKeyRecord(input: NewKeyInput): NewKey {
  const key = generateApiKey(input.environment);
  return {
    key,
    record: {
      id: `key_${randomBytes(KEY_ID_RANDOM_BYTES).toString('base64url')}`,
      companyId: input.companyId,
      hash: hashApiKey(key),
      prefix: displayPrefixOf(key),
      label: input.label,
      environment: input.environment,
      createdAt: input.createdAt,
      expiresAt: input.expiresAt,
      revokedAt: null,
      lastUsedAt: null,
      exposedAt: null,
      rotatedTo: null,
      scopes: null,
      limits: null,
    },
  };
}

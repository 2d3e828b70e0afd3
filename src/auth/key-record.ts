import { randomBytes } from 'node:crypto';
import {
  findCompanyRecordProblems,
  findKeyRecordProblems as findProblems,
  holdsKeyMaterial,
  ID_PATTERN,
} from '../config/fields.js';
import type { Company, KeyRecord } from '../store/types.js';
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

/**
 * The fields of a key record read from a store that break their rule (config/fields.ts, the rules
 * every way in applies), `[]` when it is sound. The gateway puts a record's id and company id into
 * headers the upstream receives and into log lines, so a record whatever its origin (a key file of
 * an older version, a hand-edited Redis hash, a store of one's own) is checked before it is used;
 * the verifier does it once per cached record. Names only, never values.
 *
 * @example
 * findKeyRecordProblems({ ...record, id: key }); // ['id']
 */
export function findKeyRecordProblems(record: KeyRecord): string[] {
  return findProblems(record);
}

/** The same for a company record (its id goes into `X-Company-Id` and log lines). */
export function findCompanyProblems(company: Company): string[] {
  return findCompanyRecordProblems(company);
}

/**
 * `{ [field]: id }` when `id` may be written to a log line (it passes the id rule: no key
 * material), else `{}`: a stored id that breaks the rule is never logged.
 */
export function idShownInLogs<F extends string>(field: F, id: string): Partial<Record<F, string>> {
  return ID_PATTERN.test(id) && !holdsKeyMaterial(id) ? ({ [field]: id } as Record<F, string>) : {};
}

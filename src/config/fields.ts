import { z } from 'zod';
import { INSTANT_MESSAGE, parseInstant, TIMESTAMP_PATTERN } from '../time.js';
import { scopeListSchema, windowListSchema } from './limits.js';
import { DISPLAY_TEXT_MESSAGE, isDisplayText } from './text.js';
import {
  ID_PATTERN,
  HASH_PATTERN,
  ENVIRONMENT_PATTERN,
  TIER_NAME_PATTERN,
  KEY_DISPLAY_PREFIX,
  LEGACY_DISPLAY_PREFIX,
  holdsKeyMaterial,
  KEY_MATERIAL_MESSAGE,
  ID_MESSAGE,
  ENVIRONMENT_MESSAGE,
  PREFIX_MESSAGE,
  TIER_NAME_MESSAGE,
} from './field-patterns.js';

// One schema per field of a company or a key, for every way a value comes in: the admin API
// (admin/schemas.ts), the CLI (through the admin service, and `keys generate`), `apply -f` and the
// key file (store/file-store.ts `parseKeyFile`), the company dashboard, and the records the gateway
// reads back from a store (auth/key-record.ts, checked once per cached record by the verifier).
// A rule lives here once; entry points compose these schemas and never restate a pattern.

export {
  ID_PATTERN,
  HASH_PATTERN,
  ENVIRONMENT_PATTERN,
  TIER_NAME_PATTERN,
  DISPLAY_PREFIX_RANDOM_CHARS,
  holdsKeyMaterial,
  KEY_MATERIAL_MESSAGE,
  ID_MESSAGE,
  ENVIRONMENT_MESSAGE,
  PREFIX_MESSAGE,
  TIER_NAME_MESSAGE,
} from './field-patterns.js';

const notKeyMaterial = (v: string) => !holdsKeyMaterial(v);

/** A company id or a key id. */
export const idSchema = z
  .string()
  .regex(ID_PATTERN, ID_MESSAGE)
  .refine(notKeyMaterial, KEY_MATERIAL_MESSAGE)
  .describe('1-64 letters, digits, ".", "_" or "-", starting with a letter or digit; no key material');

/**
 * Free text shown in lists, tables, logs and the console (a company's name, a key's label):
 * trimmed, 1-200 characters, no key material, and the character rule of `isDisplayText`.
 */
export const displayTextSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'at most 200 characters')
  .refine(notKeyMaterial, KEY_MATERIAL_MESSAGE)
  .refine(isDisplayText, DISPLAY_TEXT_MESSAGE)
  .describe(
    'Trimmed, 1-200 characters, no API key or key-like token; no control characters (C0, DEL, C1), ' +
      'no invisible format characters (bidi marks, overrides and isolates, zero-width characters, ' +
      'BOM), no line or paragraph separator, no private-use or unassigned code point, no unpaired ' +
      'surrogate; something visible, no combining mark first or more than 4 in a row',
  );

/** A company's name. */
export const nameSchema = displayTextSchema;
/** A key's label. */
export const labelSchema = displayTextSchema;

/** An e-mail address (a dashboard member's), compared and stored lower-case. */
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(254, 'at most 254 characters')
  .regex(/^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/, 'must be an e-mail address')
  .describe('An e-mail address, at most 254 characters; stored lower-case');

/** A key's environment (see `ENVIRONMENT_PATTERN`). */
export const environmentSchema = z.string().regex(ENVIRONMENT_PATTERN, ENVIRONMENT_MESSAGE);

/** A key's display prefix, shape only; `findPrefixProblem` checks it against the environment. */
export const prefixSchema = z
  .string()
  .refine((v) => KEY_DISPLAY_PREFIX.test(v) || LEGACY_DISPLAY_PREFIX.test(v), PREFIX_MESSAGE);

/** The environment a display prefix names (`nk_test_AbC123` → `test`); null for a legacy prefix. */
export function environmentOfPrefix(prefix: string): string | null {
  return KEY_DISPLAY_PREFIX.exec(prefix)?.[1] ?? null;
}

/**
 * Why a display prefix and an environment do not belong to one key, or null: a prefix of the
 * gateway's format names its environment (`nk_<environment>_`), which must be the record's. An
 * empty prefix (unknown, a key file entry without one) and a legacy prefix agree with anything.
 */
export function findPrefixProblem(prefix: string, environment: string | null): string | null {
  const named = environmentOfPrefix(prefix);
  if (named === null || environment === null || named === environment) return null;
  return `names environment ${named}, but the key's environment is ${environment}`;
}

/** A stored time: UTC `YYYY-MM-DDTHH:MM:SSZ` that names a real instant, as a string (never a date object). */
export const timestampSchema = z
  .string({ invalid_type_error: 'must be a string YYYY-MM-DDTHH:MM:SSZ (a YAML timestamp is not read)' })
  .regex(TIMESTAMP_PATTERN, 'must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ')
  // The shape is not enough: month 13, February 30, hour 24 or second 60 name no instant.
  .refine((v) => parseInstant(v) !== null, INSTANT_MESSAGE);

/** A tier's name. Whether the config has it is the caller's check (`unknownTierMessage`). */
export const tierNameSchema = z.string().regex(TIER_NAME_PATTERN, TIER_NAME_MESSAGE);

/** The message of a tier the config does not have, listing the ones it has. */
export function unknownTierMessage(tier: string, tiers: ReadonlySet<string>): string {
  const shown =
    TIER_NAME_PATTERN.test(tier) && !holdsKeyMaterial(tier) ? `"${tier}"` : '(a name that is not shown)';
  return `${shown} is not a configured tier (${[...tiers].join(', ')})`;
}

/** A company's standing. */
export const companyStatusSchema = z.enum(['active', 'pending', 'suspended']);

/** A key's SHA-256 as stored: 64 lowercase hex digits. */
export const hashSchema = z.string().regex(HASH_PATTERN, 'must be 64 lowercase hex digits (SHA-256)');

/** Scopes (`null` = every route) and rate-limit windows (`null` = the tier's, or none for a key). */
export { scopeListSchema as scopesSchema, windowListSchema as limitsSchema };

/** One field's rule as a predicate, for records read back from a store (no zod on that path). */
type Rule = (v: unknown) => boolean;
const nullOr =
  (rule: Rule): Rule =>
  (v) =>
    v === null || v === undefined || rule(v);
const str =
  (test: (v: string) => boolean): Rule =>
  (v) =>
    typeof v === 'string' && test(v);
const schemaRule =
  (schema: z.ZodTypeAny): Rule =>
  (v) =>
    schema.safeParse(v).success;

/** The rules above as predicates: the same primitives as the schemas, about 100 times cheaper. */
const isId = str((v) => ID_PATTERN.test(v) && !holdsKeyMaterial(v));
const isDisplayTextValue = str((v) => {
  const t = v.trim();
  return t.length >= 1 && t.length <= 200 && !holdsKeyMaterial(t) && isDisplayText(t);
});
const isTimestamp = str((v) => parseInstant(v) !== null);
const isScopes = nullOr(schemaRule(scopeListSchema));
const isLimits = nullOr(schemaRule(windowListSchema));

/**
 * A key record as a store holds it (`KeyRecord` of store/types.ts): every field by its rule. An
 * empty `prefix` means "not known" (a key file entry may leave it out); a field a store of one's
 * own leaves out counts as null, and fields the gateway does not know are not its business.
 */
const KEY_RECORD_RULES: Readonly<Record<string, Rule>> = {
  id: isId,
  companyId: isId,
  hash: str((v) => HASH_PATTERN.test(v)),
  prefix: str((v) => v === '' || KEY_DISPLAY_PREFIX.test(v) || LEGACY_DISPLAY_PREFIX.test(v)),
  label: nullOr(isDisplayTextValue),
  environment: nullOr(str((v) => ENVIRONMENT_PATTERN.test(v))),
  createdAt: isTimestamp,
  expiresAt: nullOr(isTimestamp),
  revokedAt: nullOr(isTimestamp),
  disabledAt: nullOr(isTimestamp),
  lastUsedAt: nullOr(isTimestamp),
  exposedAt: nullOr(isTimestamp),
  rotatedTo: nullOr(isId),
  scopes: isScopes,
  limits: isLimits,
};

/** A company as a store holds it (`Company` of store/types.ts). */
const COMPANY_RECORD_RULES: Readonly<Record<string, Rule>> = {
  id: isId,
  name: isDisplayTextValue,
  tier: str((v) => TIER_NAME_PATTERN.test(v)),
  status: (v) => companyStatusSchema.options.includes(v as never),
  apiAccess: (v) => typeof v === 'boolean',
  createdAt: isTimestamp,
  updatedAt: isTimestamp,
  scopes: isScopes,
  limits: isLimits,
};

function failing(rules: Readonly<Record<string, Rule>>, record: object): string[] {
  const r = record as Record<string, unknown>;
  return Object.keys(rules).filter((f) => !rules[f]!(r[f]));
}

/**
 * The fields of a key record read back from a store that break their rule, `[]` when it is
 * sound: names only, never values (a value that breaks a rule may be a key). A `prefix` that names
 * another environment than the record's breaks it too.
 *
 * @example
 * findKeyRecordProblems({ ...record, id: key }); // ['id']
 */
export function findKeyRecordProblems(record: object): string[] {
  const bad = failing(KEY_RECORD_RULES, record);
  const { prefix, environment } = record as Record<string, unknown>;
  if (!bad.includes('prefix') && typeof prefix === 'string')
    if (findPrefixProblem(prefix, typeof environment === 'string' ? environment : null)) bad.push('prefix');
  return bad;
}

/** The same for a company record. */
export function findCompanyRecordProblems(record: object): string[] {
  return failing(COMPANY_RECORD_RULES, record);
}

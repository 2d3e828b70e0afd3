import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import {
  ENVIRONMENT_MESSAGE,
  KEY_MATERIAL_MESSAGE,
  PREFIX_MESSAGE,
  TIER_NAME_MESSAGE,
} from '../../src/config/fields.js';
import { INSTANT_MESSAGE } from '../../src/time.js';

/**
 * The worst values for each field of a company or a key, and the one message every way in must
 * answer with (src/config/fields.ts: one rule per field, INVARIANTS 15). Entry points run this
 * table through their own input: the admin API, the CLI, the key file, `apply -f`, and the
 * records a store hands back.
 */

/** A real key of the gateway's format: the worst thing to find in an id, a name or a label. */
export const PASTED_KEY = generateApiKey('live');
const body = PASTED_KEY.slice('nk_live_'.length);

/** Where a value goes: a company field or a key field. */
export type FieldPlace = 'company' | 'key';

export interface FieldCase {
  what: string;
  place: FieldPlace;
  field: string;
  value: unknown;
  /** The message the rule answers with, wherever the value came in. */
  message: string;
}

export const FIELD_CASES: readonly FieldCase[] = [
  { what: 'a key as a key id', place: 'key', field: 'id', value: PASTED_KEY, message: KEY_MATERIAL_MESSAGE },
  {
    what: 'a key hash as a key id',
    place: 'key',
    field: 'id',
    value: hashApiKey(PASTED_KEY),
    message: KEY_MATERIAL_MESSAGE,
  },
  {
    what: "a key's secret body as a company id",
    place: 'company',
    field: 'id',
    value: body,
    message: KEY_MATERIAL_MESSAGE,
  },
  {
    what: 'a key in a company name',
    place: 'company',
    field: 'name',
    value: `Acme ${PASTED_KEY}`,
    message: KEY_MATERIAL_MESSAGE,
  },
  {
    what: 'a key in upper case in a label',
    place: 'key',
    field: 'label',
    value: `backup ${PASTED_KEY.toUpperCase()}`,
    message: KEY_MATERIAL_MESSAGE,
  },
  {
    what: 'a 32-character token in a label',
    place: 'key',
    field: 'label',
    value: 'ci 8f14e45fceea167a5a36dedd4bea2543',
    message: KEY_MATERIAL_MESSAGE,
  },
  {
    what: 'a prefix of another environment',
    place: 'key',
    field: 'prefix',
    value: 'nk_test_AbC123',
    message: "names environment test, but the key's environment is live",
  },
  { what: 'a key as its prefix', place: 'key', field: 'prefix', value: PASTED_KEY, message: PREFIX_MESSAGE },
  { what: 'free text as a prefix', place: 'key', field: 'prefix', value: 'primary', message: PREFIX_MESSAGE },
  {
    what: 'free text as an environment',
    place: 'key',
    field: 'environment',
    value: 'Production EU',
    message: ENVIRONMENT_MESSAGE,
  },
  {
    what: 'February 30',
    place: 'key',
    field: 'expiresAt',
    value: '2027-02-30T00:00:00Z',
    message: INSTANT_MESSAGE,
  },
  {
    what: 'hour 24',
    place: 'key',
    field: 'createdAt',
    value: '2026-01-01T24:00:00Z',
    message: INSTANT_MESSAGE,
  },
  {
    what: 'month 13',
    place: 'key',
    field: 'revokedAt',
    value: '2026-13-01T00:00:00Z',
    message: INSTANT_MESSAGE,
  },
  {
    what: 'a time with an offset',
    place: 'key',
    field: 'expiresAt',
    value: '2027-01-01T00:00:00+02:00',
    message: 'must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ',
  },
  {
    what: 'a tier that is no tier name',
    place: 'company',
    field: 'tier',
    value: 'Gold Plan',
    message: TIER_NAME_MESSAGE,
  },
];

/** A key file of one company `acme` (tier free) with one key, with `c` and `k` laid over them. */
export function keyFileWith(c: Record<string, unknown> = {}, k: Record<string, unknown> = {}): string {
  const key = { id: 'k1', hash: hashApiKey(generateApiKey('live')), environment: 'live', ...k };
  // JSON is YAML: the values reach the parser exactly as given.
  return JSON.stringify({ companies: [{ id: 'acme', tier: 'free', ...c, keys: [key] }] }) + '\n';
}

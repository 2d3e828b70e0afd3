import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { displayPrefixOf, generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import type { z } from 'zod';
import {
  environmentOfPrefix,
  environmentSchema,
  findCompanyRecordProblems,
  findKeyRecordProblems,
  findPrefixProblem,
  holdsKeyMaterial,
  idSchema,
  labelSchema,
  nameSchema,
  prefixSchema,
  tierNameSchema,
  timestampSchema,
  unknownTierMessage,
} from '../../../src/config/fields.js';
import { FIELD_CASES } from '../../helpers/field-cases.js';

const env = fc.stringMatching(/^[a-z][a-z0-9]{1,15}$/);

test('holdsKeyMaterial: any key, in any case, inside any text; its body, its hash', () => {
  fc.assert(
    fc.property(env, fc.string(), fc.string(), fc.boolean(), (e, before, after, upper) => {
      const key = generateApiKey(e);
      const shown = upper ? key.toUpperCase() : key;
      assert.ok(holdsKeyMaterial(before + shown + after));
      assert.ok(holdsKeyMaterial(key.slice(e.length + 4)), 'the secret body alone');
      assert.ok(holdsKeyMaterial(hashApiKey(key)));
    }),
    { numRuns: 300 },
  );
});

test('holdsKeyMaterial: ordinary ids, names and labels pass, long words of letters too', () => {
  for (const ok of [
    'acme',
    'key_Q2hhbmdlTWVBZnRlclVzZQ',
    'Acme Corp — Zürich 東京',
    'nk_live_AbC123',
    '123e4567-e89b-12d3-a456-426614174000',
    'Donaudampfschifffahrtsgesellschaftskapitaen',
    'ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH',
  ])
    assert.equal(holdsKeyMaterial(ok), false, ok);
  for (const bad of [
    'ci 8f14e45fceea167a5a36dedd4bea2543',
    'x'.repeat(20) + '1'.repeat(12),
    '1'.repeat(32),
    'abcdefghijklmnopqrstuvwxyzABCDEFGH',
  ])
    assert.equal(holdsKeyMaterial(bad), true, bad);
});

test('ids and labels: the rule every way in applies (key material, shape, trimming)', () => {
  const key = generateApiKey('live');
  assert.equal(idSchema.safeParse('acme-1').success, true);
  for (const bad of [key, hashApiKey(key), '-acme', 'a b', 'x'.repeat(65)])
    assert.equal(idSchema.safeParse(bad).success, false, bad);
  assert.equal(labelSchema.parse('  primary  '), 'primary');
  for (const bad of ['', '   ', `backup ${key}`, 'a\u202eb', 'a\nb'])
    assert.equal(labelSchema.safeParse(bad).success, false, JSON.stringify(bad));
});

test('prefix: the display shape of the key format, naming the key’s environment', () => {
  fc.assert(
    fc.property(env, (e) => {
      const prefix = displayPrefixOf(generateApiKey(e));
      assert.equal(prefixSchema.safeParse(prefix).success, true);
      assert.equal(environmentOfPrefix(prefix), e);
      assert.equal(findPrefixProblem(prefix, e), null);
      assert.equal(findPrefixProblem(prefix, null), null);
      const other = e === 'zz' ? 'yy' : 'zz';
      assert.match(findPrefixProblem(prefix, other) ?? '', new RegExp(`names environment ${e}`));
    }),
    { numRuns: 200 },
  );
  // Legacy keys imported by hash: 4 characters, never nk_.
  assert.equal(prefixSchema.safeParse('sk_l').success, true);
  assert.equal(environmentOfPrefix('sk_l'), null);
  for (const bad of ['nk_l', 'nk_live_AbC12', 'nk_live_AbC1234', 'primary', 'a b', generateApiKey('live')])
    assert.equal(prefixSchema.safeParse(bad).success, false, bad);
});

test('timestamps: a string in the one shape that names an instant; never a Date', () => {
  assert.equal(timestampSchema.safeParse('2028-02-29T23:59:59Z').success, true);
  for (const bad of [
    '2027-02-29T00:00:00Z',
    '2027-02-30T00:00:00Z',
    '2027-13-01T00:00:00Z',
    '2027-01-01T24:00:00Z',
    '2027-01-01T00:00:60Z',
    '2027-01-01T00:00:00.000Z',
    '2027-01-01',
    new Date('2027-01-01T00:00:00Z'),
    1798761600,
  ])
    assert.equal(timestampSchema.safeParse(bad).success, false, String(bad));
});

test('record schemas: the fields that break a rule, by name only', () => {
  const key = generateApiKey('live');
  const at = '2026-01-01T00:00:00Z';
  const rec = {
    id: 'k1',
    companyId: 'acme',
    hash: hashApiKey(key),
    prefix: displayPrefixOf(key),
    label: null,
    environment: 'live',
    createdAt: at,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
  };
  assert.deepEqual(findKeyRecordProblems(rec), []);
  assert.deepEqual(findKeyRecordProblems({ ...rec, prefix: '' }), [], 'unknown prefix');
  assert.deepEqual(
    findKeyRecordProblems({ ...rec, id: key, label: key, environment: 'test', createdAt: '' }),
    ['id', 'label', 'createdAt', 'prefix'],
  );
  const company = {
    id: 'acme',
    name: 'Acme',
    tier: 'free',
    status: 'active',
    apiAccess: true,
    createdAt: at,
    updatedAt: at,
    scopes: null,
    limits: null,
  };
  assert.deepEqual(findCompanyRecordProblems(company), []);
  assert.deepEqual(findCompanyRecordProblems({ ...company, tier: key, name: '' }), ['name', 'tier']);
  assert.equal(unknownTierMessage('gold', new Set(['free'])), '"gold" is not a configured tier (free)');
  assert.equal(
    unknownTierMessage('a1'.repeat(16), new Set(['free'])),
    '(a name that is not shown) is not a configured tier (free)',
  );
});

test('the record checks (predicates, for records read back) agree with the input schemas, value by value', () => {
  const key = generateApiKey('live');
  const at = '2026-01-01T00:00:00Z';
  const rec = {
    id: 'k1',
    companyId: 'acme',
    hash: hashApiKey(key),
    prefix: '',
    label: null,
    environment: null,
    createdAt: at,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
  };
  const company = {
    id: 'acme',
    name: 'Acme',
    tier: 'free',
    status: 'active',
    apiAccess: true,
    createdAt: at,
    updatedAt: at,
  };
  const keyFields: [string, z.ZodTypeAny][] = [
    ['id', idSchema],
    ['companyId', idSchema],
    ['rotatedTo', idSchema],
    ['label', labelSchema],
    ['prefix', prefixSchema],
    ['environment', environmentSchema],
    ['createdAt', timestampSchema],
    ['expiresAt', timestampSchema],
    ['revokedAt', timestampSchema],
  ];
  const companyFields: [string, z.ZodTypeAny][] = [
    ['id', idSchema],
    ['name', nameSchema],
    ['tier', tierNameSchema],
    ['createdAt', timestampSchema],
  ];
  const values: unknown[] = [
    ...FIELD_CASES.map((c) => c.value),
    'acme',
    ' Acme ',
    'Zürich 東京',
    'live',
    'nk_live_AbC123',
    'sk_l',
    '2026-01-01T00:00:00Z',
    '',
    '   ',
    'a\u202eb',
    7,
    true,
    new Date(),
  ];
  for (const v of values) {
    for (const [f, schema] of keyFields) {
      if (f === 'prefix' && v === '') continue; // a stored empty prefix means "not known"
      const bad = findKeyRecordProblems({ ...rec, [f]: v }).includes(f);
      assert.equal(!bad, schema.safeParse(v).success, `key ${f} = ${JSON.stringify(v)}`);
    }
    for (const [f, schema] of companyFields) {
      const bad = findCompanyRecordProblems({ ...company, [f]: v }).includes(f);
      assert.equal(!bad, schema.safeParse(v).success, `company ${f} = ${JSON.stringify(v)}`);
    }
  }
});

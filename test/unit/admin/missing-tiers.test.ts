import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { findMissingTiers, missingTierAdvice } from '../../../src/admin/missing-tiers.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { Company, KeyStore } from '../../../src/store/types.js';

const company = (id: string, tier: string): Company => ({
  id,
  name: id,
  tier,
  status: 'active',
  apiAccess: true,
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
  scopes: null,
  limits: null,
});

test('every company on a tier the config lacks, by tier; names that break their rule are not shown', async () => {
  const store = new MemoryKeyStore();
  const key = generateApiKey('live');
  for (const c of [
    company('zeta', 'gold'),
    company('acme', 'gold'),
    company('ok', 'free'),
    company('b', 'platinum'),
    company(key, 'gold'), // a hand-edited record: its id is never printed
    company('c', key.toLowerCase()),
  ])
    await store.createCompany(c);
  const found = await findMissingTiers(store, new Set(['free']));
  assert.deepEqual(found, [
    { tier: '(not shown)', companies: ['c'] },
    { tier: 'gold', companies: ['(not shown)', 'acme', 'zeta'] },
    { tier: 'platinum', companies: ['b'] },
  ]);
  assert.ok(!JSON.stringify(found).includes(key.slice(8)));
  assert.deepEqual(
    await findMissingTiers(store, new Set(['free', 'gold', 'platinum', key.toLowerCase()])),
    [],
  );
  assert.match(
    missingTierAdvice(new Set(['free', 'standard'])),
    /move each company to a configured tier \(free, standard\)/,
  );
});

test('a store that cannot be read rejects (the caller says the check was not made)', async () => {
  const down = { listCompanies: () => Promise.reject(new Error('ECONNREFUSED')) } as unknown as KeyStore;
  await assert.rejects(findMissingTiers(down, new Set(['free'])), /ECONNREFUSED/);
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import {
  applyKeyFile,
  exportState,
  formatPlan,
  planApply,
  type ApplyPlan,
  type StoreState,
} from '../../../src/admin/apply.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { Company, KeyRecord } from '../../../src/store/types.js';

const company = (id: string, over: Partial<Company> = {}): Company => ({
  id,
  name: id,
  tier: 'free',
  status: 'active',
  apiAccess: true,
  scopes: null,
  limits: null,
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
  ...over,
});
const key = (id: string, hash: string, over: Partial<KeyRecord> = {}): KeyRecord => ({
  id,
  companyId: 'a',
  hash: hash.repeat(64).slice(0, 64),
  prefix: 'nk_live_x',
  label: null,
  environment: 'live',
  createdAt: '2026-01-01T00:00:00Z',
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  exposedAt: null,
  rotatedTo: null,
  scopes: null,
  limits: null,
  ...over,
});

test('fields the records gain (scopes, limits) are compared and changed like the others', () => {
  const current: StoreState = { companies: [company('a')], keys: [key('k1', 'a')] };
  const desired = {
    companies: [{ ...company('a'), scopes: [{ route: '/notify/v1' }] } as Company],
    keys: [{ ...key('k1', 'a'), limits: [{ points: 1, duration: 1 }] } as KeyRecord],
  };
  const plan = planApply(current, desired, { prune: false });
  assert.deepEqual(
    plan.changes.map((c) => [c.op, c.kind, c.id, 'diff' in c ? Object.keys(c.diff) : []]),
    [
      ['update', 'company', 'a', ['scopes']],
      ['update', 'key', 'k1', ['limits']],
    ],
  );
  // Key order inside a value does not count as a change.
  const same = planApply(
    { companies: [{ ...company('a'), x: { p: 1, q: 2 } } as Company], keys: [] },
    { companies: [{ ...company('a'), x: { q: 2, p: 1 } } as Company], keys: [] },
    { prune: false },
  );
  assert.equal(same.changes.length, 0);
});

test('revocation and expiry only move earlier; the rest is a note', () => {
  const current: StoreState = {
    companies: [company('a')],
    keys: [
      key('k1', 'a', { revokedAt: '2026-02-01T00:00:00Z' }),
      key('k2', 'b', { revokedAt: '2026-02-01T00:00:00Z' }),
      key('k3', 'c', { expiresAt: '2026-02-01T00:00:00Z' }),
    ],
  };
  const desired: StoreState = {
    companies: [company('a')],
    keys: [
      key('k1', 'a'),
      key('k2', 'b', { revokedAt: '2026-01-15T00:00:00Z' }),
      key('k3', 'c', { expiresAt: '2027-01-01T00:00:00Z' }),
    ],
  };
  const plan = planApply(current, desired, { prune: true });
  assert.deepEqual(
    plan.changes.map((c) => [c.op, c.id]),
    [['update', 'k2']],
  );
  assert.equal(plan.notes.length, 2);
  assert.match(plan.notes[0]!, /k1: revoked at .* revocation is final, kept/);
  assert.match(plan.notes[1]!, /k3: expires at/);
});

test('conflicts are reported, not applied; prune skips keys already revoked', () => {
  const current: StoreState = {
    companies: [company('a'), company('gone', { status: 'suspended', apiAccess: false })],
    keys: [
      key('k1', 'a'),
      key('k2', 'b', { companyId: 'other' }),
      key('k9', 'e', { revokedAt: '2026-01-01T00:00:00Z' }),
    ],
  };
  const desired: StoreState = {
    companies: [company('a')],
    keys: [key('k1', 'd'), key('k2', 'b')],
  };
  const plan = planApply(current, desired, { prune: true });
  assert.deepEqual(
    plan.changes.map((c) => [c.op, c.kind, c.id]),
    [['disable', 'key', 'k1']],
  );
  assert.match(plan.notes.join('\n'), /k1: the id is taken/);
  assert.match(plan.notes.join('\n'), /k2: belongs to company other/);
  assert.match(
    formatPlan(plan, true),
    /disabling key k1 \(company a\) \(not in the file\): disabled \(undone by declaring it again\)\n[\s\S]*Disabled: 1\n {2}Revoked: 0\n$/,
  );
});

test('export: key-file shape, no gateway-only fields, no nulls', () => {
  const text = exportState({
    companies: [company('a', { name: 'A' })],
    keys: [key('k1', 'a', { lastUsedAt: '2026-01-02T00:00:00Z', label: 'x' })],
  });
  assert.deepEqual(parse(text), {
    companies: [
      {
        id: 'a',
        name: 'A',
        tier: 'free',
        status: 'active',
        apiAccess: true,
        keys: [
          {
            id: 'k1',
            hash: 'a'.repeat(64),
            prefix: 'nk_live_x',
            label: 'x',
            environment: 'live',
            createdAt: '2026-01-01T00:00:00Z',
          },
        ],
      },
    ],
  });
});

describe('prune: suspend and disable by default, revoke only when asked', () => {
  const current: StoreState = {
    companies: [company('a'), company('gone')],
    keys: [
      key('k1', 'a'),
      key('k2', 'b'),
      key('g1', 'c', { companyId: 'gone' }),
      key('g2', 'd', { companyId: 'gone', disabledAt: '2026-01-02T00:00:00Z' }),
    ],
  };
  const desired: StoreState = { companies: [company('a')], keys: [key('k1', 'a')] };
  const ops = (plan: ApplyPlan) => plan.changes.map((c) => [c.op, c.id, 'diff' in c ? c.diff : null]);

  test('without prune nothing left out is touched', () => {
    assert.deepEqual(planApply(current, desired, { prune: false }).changes, []);
    assert.deepEqual(planApply(current, desired, { prune: 'off' }).changes, []);
  });

  test('prune (true or disable): the company suspended, its keys and the left-out key disabled, an already disabled key left alone', () => {
    for (const prune of [true, 'disable'] as const) {
      assert.deepEqual(ops(planApply(current, desired, { prune })), [
        [
          'suspend',
          'gone',
          { status: { from: 'active', to: 'suspended' }, apiAccess: { from: true, to: false } },
        ],
        ['disable', 'k2', { disabledAt: { from: null, to: 'now' } }],
        ['disable', 'g1', { disabledAt: { from: null, to: 'now' } }],
      ]);
    }
  });

  test('revoke: the keys are revoked instead, the disabled one too (final)', () => {
    assert.deepEqual(
      ops(planApply(current, desired, { prune: 'revoke' })).map(([op, id]) => [op, id]),
      [
        ['suspend', 'gone'],
        ['revoke', 'k2'],
        ['revoke', 'g1'],
        ['revoke', 'g2'],
      ],
    );
    assert.match(
      formatPlan(planApply(current, desired, { prune: 'revoke' }), true),
      /^revoking key k2 \(company a\) \(not in the file\): revoked \(final\)$/m,
    );
  });

  test('declaring a disabled key and a suspended company again undoes the prune', () => {
    const pruned: StoreState = {
      companies: [company('a', { status: 'suspended', apiAccess: false })],
      keys: [key('k1', 'a', { disabledAt: '2026-01-02T00:00:00Z' })],
    };
    assert.deepEqual(ops(planApply(pruned, desired, { prune: true })), [
      ['update', 'a', { status: { from: 'suspended', to: 'active' }, apiAccess: { from: false, to: true } }],
      ['update', 'k1', { disabledAt: { from: '2026-01-02T00:00:00Z', to: null } }],
    ]);
  });
});

describe('applyKeyFile and prune', () => {
  const fileOf = (companies: Record<string, string[]>) =>
    'companies:\n' +
    Object.entries(companies)
      .map(
        ([id, keys]) =>
          `  - id: ${id}\n    tier: free\n    keys:\n` +
          (keys.length
            ? keys.map((k) => `      - { id: ${k}, hash: ${k[0]!.repeat(64)} }\n`).join('')
            : '      []\n'),
      )
      .join('');
  async function storeWith(companies: Record<string, string[]>): Promise<MemoryKeyStore> {
    const store = new MemoryKeyStore();
    for (const [id, keys] of Object.entries(companies)) {
      await store.createCompany(company(id));
      for (const k of keys)
        assert.deepEqual(await store.createKey(key(k, k[0]!, { companyId: id }), 0, '2026-01-01T00:00:00Z'), {
          ok: true,
        });
    }
    return store;
  }
  const base = (store: MemoryKeyStore, over: Partial<Parameters<typeof applyKeyFile>[1]> = {}) => ({
    store,
    tiers: new Set(['free']),
    maxActiveKeys: 2,
    actor: 'test',
    audit: async () => undefined,
    prune: true as const,
    dryRun: false,
    ...over,
  });

  test('a plan that prunes runs only when confirmed; not confirmed, or no confirm: nothing changes', async () => {
    const store = await storeWith({ a: ['a1'], b: ['b1'] });
    const text = fileOf({ a: ['a1'] });
    for (const confirm of [undefined, async () => false]) {
      const r = await applyKeyFile(text, base(store, confirm ? { confirm } : {}));
      assert.ok(r.ok);
      assert.equal(r.applied, false);
      assert.equal((await store.getCompany('b'))?.status, 'active');
      assert.equal((await store.getKey('b1'))?.disabledAt ?? null, null);
    }
    let shown: ApplyPlan | undefined;
    const r = await applyKeyFile(text, base(store, { confirm: async (p) => ((shown = p), true) }));
    assert.ok(r.ok && r.applied);
    assert.deepEqual(shown, r.plan);
    assert.equal((await store.getCompany('b'))?.status, 'suspended');
    assert.notEqual((await store.getKey('b1'))?.disabledAt ?? null, null);
    assert.equal((await store.getKey('b1'))?.revokedAt, null, 'disabled, not revoked');
  });

  test('check-and-set: a store that changes while the confirmation is asked for runs nothing and answers the current plan', async () => {
    const store = await storeWith({ a: ['a1'], b: ['b1'] });
    const r = await applyKeyFile(
      fileOf({ a: ['a1'] }),
      base(store, {
        confirm: async () => {
          // Someone else, meanwhile: a company the file does not hold either.
          await store.createCompany(company('c'));
          return true;
        },
      }),
    );
    assert.ok(r.ok);
    assert.equal(r.applied, false);
    assert.equal(r.stale, true);
    assert.deepEqual(
      r.plan.changes.map((c) => [c.op, c.id]),
      [
        ['suspend', 'b'],
        ['suspend', 'c'],
        ['disable', 'b1'],
      ],
    );
    for (const id of ['b', 'c'])
      assert.equal((await store.getCompany(id))?.status, 'active', `${id} untouched`);
    assert.equal((await store.getKey('b1'))?.disabledAt ?? null, null);
  });

  test('new keys that would not fit beside keys prune only disables: refused with the way out, nothing changed; --prune-revoke makes room', async () => {
    const store = await storeWith({ a: ['a1', 'b1'] });
    const text = fileOf({ a: ['a1', 'c1'] });
    const r = await applyKeyFile(text, base(store, { confirm: async () => true }));
    assert.ok(!r.ok);
    assert.match(
      r.problems.join(),
      /company a: 1 new key\(s\) would not fit under keys.maxActiveKeys \(2\).*--prune-revoke/,
    );
    assert.equal((await store.getKey('b1'))?.disabledAt ?? null, null);
    assert.equal(await store.getKey('c1'), null);
    const dry = await applyKeyFile(text, base(store, { dryRun: true }));
    assert.ok(!dry.ok, 'the dry run says so too');
    const revoke = await applyKeyFile(text, base(store, { prune: 'revoke', confirm: async () => true }));
    assert.ok(revoke.ok && revoke.applied);
    assert.deepEqual(revoke.failures, []);
    assert.notEqual((await store.getKey('b1'))?.revokedAt, null);
    assert.notEqual(await store.getKey('c1'), null);
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { exportState, formatPlan, planApply, type StoreState } from '../../../src/admin/apply.js';
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
    [['delete', 'key', 'k1']],
  );
  assert.match(plan.notes.join('\n'), /k1: the id is taken/);
  assert.match(plan.notes.join('\n'), /k2: belongs to company other/);
  assert.match(formatPlan(plan, true), /deleting key k1 \(company a\): revoke\n[\s\S]*Deleted: 1\n$/);
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

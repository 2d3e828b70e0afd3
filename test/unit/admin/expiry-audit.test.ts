import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createExpiryAuditor } from '../../../src/admin/expiry-audit.js';
import { AdminService } from '../../../src/admin/service.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { AuditEntry, KeyRecord } from '../../../src/store/types.js';

function record(id: string): KeyRecord {
  return {
    id,
    companyId: 'acme',
    hash: id.padEnd(64, '0'),
    prefix: `nk_live_${id}`,
    label: null,
    environment: 'live',
    createdAt: '2026-01-01T00:00:00Z',
    expiresAt: '2026-01-02T00:00:00Z',
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
  };
}

function setup(maxEntries?: number) {
  const store = new MemoryKeyStore();
  const logged: AuditEntry[] = [];
  const service = new AdminService({
    store,
    tiers: new Set(['free']),
    maxActiveKeys: 0,
    rotationAgeDays: 90,
    onAudit: (e) => logged.push(e),
    now: () => Date.parse('2026-01-03T00:00:00Z'),
  });
  const onKeyExpired = createExpiryAuditor({ auditor: service, ...(maxEntries ? { maxEntries } : {}) });
  return { store, logged, onKeyExpired };
}

describe('createExpiryAuditor', () => {
  test('writes one key.expired entry per key, with the key id, prefix and expiry, never the hash', async () => {
    const t = setup();
    t.onKeyExpired(record('k1'));
    t.onKeyExpired(record('k1'));
    t.onKeyExpired(record('k2'));
    t.onKeyExpired(record('k1'));
    assert.deepEqual(t.logged, [
      {
        at: '2026-01-03T00:00:00Z',
        event: 'key.expired',
        companyId: 'acme',
        keyId: 'k1',
        keyPrefix: 'nk_live_k1',
        actor: 'gateway',
        details: { expiresAt: '2026-01-02T00:00:00Z' },
      },
      {
        at: '2026-01-03T00:00:00Z',
        event: 'key.expired',
        companyId: 'acme',
        keyId: 'k2',
        keyPrefix: 'nk_live_k2',
        actor: 'gateway',
        details: { expiresAt: '2026-01-02T00:00:00Z' },
      },
    ]);
    const stored = await t.store.readAudit({ limit: 10 });
    assert.deepEqual(stored.map((e) => e.keyId).sort(), ['k1', 'k2']);
    assert.ok(!JSON.stringify(stored).includes(record('k1').hash));
  });

  test('memory is bounded: a key pushed out of the LRU is audited again', () => {
    const t = setup(2);
    for (const id of ['k1', 'k2', 'k3', 'k1']) t.onKeyExpired(record(id));
    assert.deepEqual(
      t.logged.map((e) => e.keyId),
      ['k1', 'k2', 'k3', 'k1'],
    );
  });
});

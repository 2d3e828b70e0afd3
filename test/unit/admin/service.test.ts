import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AdminService } from '../../../src/admin/service.js';
import { hashApiKey } from '../../../src/auth/api-key.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { AuditEntry } from '../../../src/store/types.js';

function setup() {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const audit: AuditEntry[] = [];
  const store = new MemoryKeyStore();
  const svc = new AdminService({
    store,
    tiers: new Set(['free', 'standard']),
    maxActiveKeys: 2,
    rotationAgeDays: 90,
    onAudit: (e) => audit.push(e),
    now: () => now,
  });
  return { svc, store, audit, advance: (ms: number) => (now += ms) };
}

describe('AdminService', () => {
  test('keys past the rotation age are marked rotationDue; revoked ones are not', async () => {
    const { svc, advance } = setup();
    assert.ok((await svc.createCompany({ id: 'c' })).ok);
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    const due = async () => {
      const list = await svc.listKeys('c');
      assert.ok(list.ok);
      return [list.value[0]!.rotationDue, list.value[0]!.status];
    };
    assert.deepEqual(await due(), [false, 'active']);
    advance(91 * 86_400_000);
    assert.deepEqual(await due(), [true, 'active']);
    await svc.revokeKey(k.value.id);
    assert.deepEqual(await due(), [false, 'revoked']);
  });

  test('a grace period is rounded up to the next whole second, never down', async () => {
    const { svc, advance } = setup();
    await svc.createCompany({ id: 'c' });
    advance(999); // 00:00:00.999: flooring would end a 1 s grace at 00:00:01, 1 ms after the call
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    const r = await svc.rotateKey(k.value.id, { gracePeriodSeconds: 1 });
    assert.ok(r.ok);
    assert.equal(r.value.oldKeyRevokesAt, '2026-01-01T00:00:02Z');
    const status = async () => {
      const v = await svc.getKey(k.value.id);
      assert.ok(v.ok);
      return v.value.status;
    };
    advance(1000); // 00:00:01.999: a full second after the call, still inside the grace period
    assert.equal(await status(), 'revoking');
    advance(1); // 00:00:02.000
    assert.equal(await status(), 'revoked');
  });

  test('a zero grace period revokes at once, also in the middle of a second', async () => {
    const { svc, advance } = setup();
    await svc.createCompany({ id: 'c' });
    advance(500); // 00:00:00.500: rounding up would keep the old key working for another 0.5 s
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    const r = await svc.rotateKey(k.value.id, { gracePeriodSeconds: 0 });
    assert.ok(r.ok);
    assert.equal(r.value.oldKeyRevokesAt, '2026-01-01T00:00:00Z');
    const old = await svc.getKey(k.value.id);
    assert.ok(old.ok);
    assert.equal(old.value.status, 'revoked');
  });

  test('rotation with a grace period: the old key is "revoking", then "revoked" by time alone', async () => {
    const { svc, advance, store } = setup();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', { label: 'primary' });
    assert.ok(k.ok);
    const r = await svc.rotateKey(k.value.id, { gracePeriodSeconds: 60 });
    assert.ok(r.ok);
    assert.equal(r.value.label, 'primary', 'the new key keeps the label');
    assert.equal(r.value.oldKeyRevokesAt, '2026-01-01T00:01:00Z');
    let old = await svc.getKey(k.value.id);
    assert.ok(old.ok && old.value.status === 'revoking' && old.value.rotatedTo === r.value.id);
    advance(61_000);
    old = await svc.getKey(k.value.id);
    assert.ok(old.ok && old.value.status === 'revoked');
    // The stored record holds the hash of the new key, never the key.
    const rec = await store.getKey(r.value.id);
    assert.equal(rec?.hash, hashApiKey(r.value.key));
    assert.ok(!JSON.stringify(rec).includes(r.value.key));
  });

  test('bad input changes nothing; every change is audited without keys', async () => {
    const { svc, audit, store } = setup();
    assert.equal((await svc.createCompany({ id: 'c', tier: 'gold' })).ok, false);
    assert.deepEqual(await store.listCompanies(), []);
    await svc.createCompany({ id: 'c', tier: 'free' });
    const bad = await svc.updateCompany('c', { status: 'gone' });
    assert.ok(!bad.ok && bad.status === 400);
    assert.equal((await store.getCompany('c'))?.status, 'active');
    const up = await svc.updateCompany('c', { tier: 'standard' });
    assert.ok(up.ok);
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    await svc.revokeKey(k.value.id);
    await svc.revokeKey(k.value.id); // a second revoke is a no-op, not a second event
    assert.deepEqual(
      audit.map((e) => e.event),
      ['company.created', 'company.updated', 'key.created', 'key.revoked'],
    );
    assert.deepEqual(audit[1]!.details, { tier: { from: 'free', to: 'standard' } });
    assert.ok(!JSON.stringify(audit).includes(k.value.key));
    assert.ok(audit.every((e) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(e.at)));
  });

  test('the file store answers writes with a clear 409', async () => {
    const { FileKeyStore } = await import('../../../src/store/file-store.js');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'ng-svc-'));
    writeFileSync(join(dir, 'k.yaml'), 'companies: [{ id: c, tier: free }]\n');
    const store = new FileKeyStore({
      path: join(dir, 'k.yaml'),
      knownTiers: new Set(['free']),
      watchIntervalMs: 0,
    });
    const svc = new AdminService({ store, tiers: new Set(['free']), maxActiveKeys: 2, rotationAgeDays: 90 });
    const r = await svc.createKey('c', {});
    assert.ok(!r.ok && r.status === 409 && /read-only/.test(r.details));
    const u = await svc.updateCompany('c', { status: 'suspended' });
    assert.ok(!u.ok && u.status === 409);
    await store.close();
  });
});

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { AdminService, type AdminFailure, type AdminResult } from '../../../src/admin/service.js';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { AuditEntry, Invalidation } from '../../../src/store/types.js';
import { INSTANT_MESSAGE } from '../../../src/time.js';
import { ProbeKeyStore } from '../../helpers/probe-store.js';

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

/** The service over a real memory store seen through a probe, with the invalidations it published. */
function probed() {
  let now = Date.parse('2026-01-01T00:00:00.250Z');
  const audit: AuditEntry[] = [];
  const published: Invalidation[] = [];
  const store = new ProbeKeyStore(new MemoryKeyStore());
  store.subscribe((m) => published.push(m));
  const svc = new AdminService({
    store,
    tiers: new Set(['free', 'standard']),
    maxActiveKeys: 2,
    rotationAgeDays: 90,
    onAudit: (e) => audit.push(e),
    now: () => now,
  });
  return { svc, store, audit, published, advance: (ms: number) => (now += ms) };
}

/** The failure's registry code, status and wording, or the value when it succeeded. */
function failure<T>(r: AdminResult<T>) {
  assert.equal(r.ok, false, 'expected a failure');
  const f = r as AdminFailure;
  return { code: f.code, status: f.status, error: f.error, details: f.details };
}

describe('AdminService: answers, audit and invalidations, field by field', () => {
  test('a company gets the documented defaults and a created event with its settings', async () => {
    const { svc, audit } = probed();
    const r = await svc.createCompany({ id: 'acme' });
    assert.deepEqual(r, {
      ok: true,
      value: {
        id: 'acme',
        name: 'acme',
        tier: 'free',
        status: 'active',
        apiAccess: true,
        createdAt: '2026-01-01T00:00:00Z',
        updatedAt: '2026-01-01T00:00:00Z',
        scopes: null,
        limits: null,
      },
    });
    const named = await svc.createCompany(
      { id: 'b', name: ' Bee ', tier: 'standard', status: 'pending', apiAccess: false },
      'ops',
    );
    assert.ok(named.ok);
    assert.equal(named.value.name, 'Bee');
    assert.deepEqual(
      audit.map((e) => [e.event, e.companyId, e.actor, e.details]),
      [
        ['company.created', 'acme', 'admin', { tier: 'free', status: 'active', apiAccess: true }],
        ['company.created', 'b', 'ops', { tier: 'standard', status: 'pending', apiAccess: false }],
      ],
    );
    assert.deepEqual(failure(await svc.createCompany({ id: 'acme' })), {
      code: 'ADMIN_DUPLICATE_COMPANY',
      status: 409,
      error: 'Conflict',
      details: 'company acme already exists',
    });
    assert.equal(audit.length, 2, 'a refused create is not audited');
  });

  test('input errors name the field, the unknown fields, and the configured tiers', async () => {
    const { svc } = probed();
    assert.deepEqual(failure(await svc.createCompany({ id: 'c', tier: 'gold' })), {
      code: 'ADMIN_INVALID_REQUEST',
      status: 400,
      error: 'Bad Request',
      details: 'tier: "gold" is not a configured tier (free, standard)',
    });
    assert.match(
      failure(await svc.createCompany({ id: 'c', color: 1, size: 2 })).details,
      /^unknown field\(s\): color, size$/,
    );
    assert.match(failure(await svc.createCompany({ id: '-bad' })).details, /^id: must be 1-64 letters/);
    assert.match(failure(await svc.createCompany({})).details, /^id: Required$/);
    await svc.createCompany({ id: 'c' });
    assert.equal(
      failure(await svc.updateCompany('c', {})).details,
      'at least one of name, tier, status, apiAccess, scopes, limits is required',
    );
    assert.equal(
      failure(await svc.updateCompany('c', { tier: 'gold' })).details,
      'tier: "gold" is not a configured tier (free, standard)',
    );
    assert.equal(
      failure(await svc.createKey('c', { expiresAt: '2027-02-30T00:00:00Z' })).details,
      `expiresAt: ${INSTANT_MESSAGE}`,
    );
    assert.equal(
      failure(await svc.createKey('c', { expiresAt: '2027-01-01' })).details,
      // zod runs the refinement after a failed regex too: both reasons are listed.
      `expiresAt: must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ; expiresAt: ${INSTANT_MESSAGE}`,
    );
    assert.equal(
      failure(await svc.createKey('c', { expiresAt: '2025-12-31T23:59:59Z' })).details,
      'expiresAt: must be in the future',
    );
    assert.match(
      failure(await svc.createKey('c', { environment: 'LIVE' })).details,
      /^environment: must be 2-16/,
    );
    assert.match(
      failure(await svc.rotateKey('key_x', { gracePeriodSeconds: -1 })).details,
      /^gracePeriodSeconds: /,
    );
    assert.match(
      failure(await svc.rotateKey('key_x', { gracePeriodSeconds: 90 * 86_400 + 1 })).details,
      /^gracePeriodSeconds: /,
    );
    assert.match(
      failure(await svc.rotateKey('key_x', { gracePeriodSeconds: 1.5 })).details,
      /^gracePeriodSeconds: /,
    );
  });

  test('unknown ids are 404; the id is echoed only when it is a plain id, never a pasted key', async () => {
    const { svc } = probed();
    const key = generateApiKey('live');
    const notFound = (details: string) => ({
      code: 'ADMIN_UNKNOWN_ID',
      status: 404,
      error: 'Not Found',
      details,
    });
    assert.deepEqual(failure(await svc.getCompany('nope')), notFound('company nope not found'));
    assert.deepEqual(failure(await svc.getCompany(key)), notFound('company not found'));
    assert.deepEqual(failure(await svc.getCompany('a b')), notFound('company not found'));
    assert.deepEqual(failure(await svc.getKey('key_1')), notFound('key key_1 not found'));
    assert.deepEqual(failure(await svc.revokeKey(key)), notFound('key not found'));
    assert.deepEqual(failure(await svc.rotateKey('key_1', {})), notFound('key key_1 not found'));
    assert.deepEqual(failure(await svc.listKeys('nope')), notFound('company nope not found'));
    assert.deepEqual(failure(await svc.createKey('nope', {})), notFound('company nope not found'));
    assert.deepEqual(
      failure(await svc.updateCompany('nope', { tier: 'free' })),
      notFound('company nope not found'),
    );
  });

  test('an update reports exactly what changed, and invalidates the company everywhere', async () => {
    const { svc, audit, published } = probed();
    await svc.createCompany({ id: 'c', name: 'Old' });
    published.length = 0;
    const r = await svc.updateCompany('c', { name: 'Old', status: 'suspended', apiAccess: true }, 'ops');
    assert.ok(r.ok);
    assert.equal(r.value.status, 'suspended');
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'company.updated',
      companyId: 'c',
      actor: 'ops',
      details: { status: { from: 'active', to: 'suspended' } },
    });
    assert.deepEqual(published, [{ kind: 'company', id: 'c' }]);
    assert.deepEqual((await svc.listCompanies()).ok && (await svc.listCompanies()), {
      ok: true,
      value: [await svc.getCompany('c').then((g) => (g.ok ? g.value : null))],
    });
  });

  test('a created key: the answer, the stored record, the audit event and the invalidation agree', async () => {
    const { svc, store, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    published.length = 0;
    const r = await svc.createKey(
      'c',
      { label: ' ci ', environment: 'test', expiresAt: '2026-06-01T00:00:00Z' },
      'ops',
    );
    assert.ok(r.ok);
    const rec = await store.inner.getKey(r.value.id);
    assert.ok(rec);
    assert.deepEqual(r.value, {
      id: rec.id,
      key: r.value.key,
      prefix: rec.prefix,
      companyId: 'c',
      label: 'ci',
      environment: 'test',
      createdAt: '2026-01-01T00:00:00Z',
      expiresAt: '2026-06-01T00:00:00Z',
    });
    assert.match(r.value.key, /^nk_test_/);
    assert.equal(rec.hash, hashApiKey(r.value.key));
    assert.deepEqual(published, [{ kind: 'key', hash: rec.hash }]);
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'key.created',
      companyId: 'c',
      keyId: rec.id,
      keyPrefix: rec.prefix,
      actor: 'ops',
    });
    const plain = await svc.createKey('c', undefined);
    assert.ok(plain.ok);
    assert.deepEqual(
      [plain.value.environment, plain.value.label, plain.value.expiresAt],
      ['live', null, null],
    );
    assert.deepEqual(failure(await svc.createKey('c', {})), {
      code: 'ADMIN_KEY_CAP_REACHED',
      status: 409,
      error: 'Conflict',
      details: 'company c already has 2 active keys (keys.maxActiveKeys); revoke one first',
    });
  });

  test('revocation: the view, one audit event, and an invalidation on every call', async () => {
    const { svc, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', { label: 'l' });
    assert.ok(k.ok);
    published.length = 0;
    const r = await svc.revokeKey(k.value.id, 'ops', 'leaked');
    assert.ok(r.ok);
    assert.deepEqual(r.value, {
      id: k.value.id,
      companyId: 'c',
      prefix: k.value.prefix,
      label: 'l',
      environment: 'live',
      status: 'revoked',
      createdAt: '2026-01-01T00:00:00Z',
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: '2026-01-01T00:00:00Z',
      exposedAt: null,
      rotatedTo: null,
      scopes: null,
      limits: null,
      rotationDue: false,
    });
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'key.revoked',
      companyId: 'c',
      keyId: k.value.id,
      keyPrefix: k.value.prefix,
      actor: 'ops',
      details: { reason: 'leaked' },
    });
    const events = audit.length;
    assert.ok((await svc.revokeKey(k.value.id)).ok);
    assert.equal(audit.length, events, 'a repeated revocation is not a second event');
    const hash = hashApiKey(k.value.key);
    assert.deepEqual(published, [
      { kind: 'key', hash },
      { kind: 'key', hash },
    ]);
    assert.deepEqual(failure(await svc.rotateKey(k.value.id, {})), {
      code: 'ADMIN_KEY_INACTIVE',
      status: 409,
      error: 'Conflict',
      details: `key ${k.value.id} is no longer active; create a new key instead`,
    });
  });

  test('rotation without a grace period: the old key works 7 more days, points at the new one, both are announced', async () => {
    const { svc, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {
      environment: 'test',
      label: 'a',
      expiresAt: '2026-06-01T00:00:00Z',
    });
    assert.ok(k.ok);
    published.length = 0;
    const r = await svc.rotateKey(k.value.id, undefined, 'ops');
    assert.ok(r.ok);
    // 7 days from 00:00:00.250, rounded up to the second: never shorter than asked.
    const ends = '2026-01-08T00:00:01Z';
    assert.deepEqual(
      [r.value.environment, r.value.label, r.value.expiresAt, r.value.replaces, r.value.oldKeyRevokesAt],
      ['test', 'a', '2026-06-01T00:00:00Z', k.value.id, ends],
    );
    const old = await svc.getKey(k.value.id);
    assert.ok(old.ok);
    assert.deepEqual(
      [old.value.status, old.value.rotatedTo, old.value.revokedAt],
      ['revoking', r.value.id, ends],
    );
    assert.deepEqual(published, [
      { kind: 'key', hash: hashApiKey(r.value.key) },
      { kind: 'key', hash: hashApiKey(k.value.key) },
    ]);
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'key.rotated',
      companyId: 'c',
      keyId: k.value.id,
      keyPrefix: k.value.prefix,
      actor: 'ops',
      details: { newKeyId: r.value.id, newKeyPrefix: r.value.prefix, oldKeyRevokesAt: ends },
    });
    // A key is rotated once: the second rotation names the successor and changes nothing.
    assert.deepEqual(failure(await svc.rotateKey(k.value.id, { gracePeriodSeconds: 0 })), {
      code: 'ADMIN_KEY_INACTIVE',
      status: 409,
      error: 'Conflict',
      details: `key ${k.value.id} was rotated to ${r.value.id}, and stops working at ${ends}; rotate ${r.value.id} instead`,
    });
    assert.equal((await svc.getKey(k.value.id)).ok && (await svc.getKey(k.value.id)).ok, true);
  });

  test('the cap of 2 with a live and a test key: each rotates, creates stay refused until the grace periods end', async () => {
    const { svc, advance } = probed();
    await svc.createCompany({ id: 'c' });
    const live = await svc.createKey('c', { environment: 'live' });
    const test = await svc.createKey('c', { environment: 'test' });
    assert.ok(live.ok && test.ok);
    assert.equal(failure(await svc.createKey('c', {})).code, 'ADMIN_KEY_CAP_REACHED');
    const live2 = await svc.rotateKey(live.value.id, {});
    assert.ok(live2.ok, 'rotation works at the cap');
    const test2 = await svc.rotateKey(test.value.id, { gracePeriodSeconds: 3600 });
    assert.ok(test2.ok, 'so does the second one');
    const live3 = await svc.rotateKey(live2.value.id, {});
    assert.ok(live3.ok, "and a rotation of a successor during its predecessor's grace period");
    // Four keys work now (two on their way out), but no create gets past the cap.
    assert.equal(failure(await svc.createKey('c', {})).code, 'ADMIN_KEY_CAP_REACHED');
    const working = async () =>
      ((await svc.listKeys('c')) as { ok: true; value: { status: string }[] }).value.filter(
        (k) => k.status === 'active' || k.status === 'revoking',
      ).length;
    assert.equal(await working(), 5);
    advance(7 * 86_400_000 + 2000); // every grace period has ended
    assert.equal(await working(), 2, 'the cap holds once the grace periods have ended');
    assert.equal(failure(await svc.createKey('c', {})).code, 'ADMIN_KEY_CAP_REACHED');
  });

  test('a key past its expiry is "expired" and never rotation-due', async () => {
    const { svc, advance } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', { expiresAt: '2026-01-02T00:00:00Z' });
    assert.ok(k.ok);
    advance(100 * 86_400_000);
    const v = await svc.getKey(k.value.id);
    assert.ok(v.ok);
    assert.deepEqual([v.value.status, v.value.rotationDue], ['expired', false]);
    assert.equal(failure(await svc.rotateKey(k.value.id, {})).code, 'ADMIN_KEY_INACTIVE');
  });

  test('rotation is due strictly after the rotation age', async () => {
    const { svc, advance } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    advance(90 * 86_400_000 - 250); // exactly 90 days after createdAt (whole seconds)
    let v = await svc.getKey(k.value.id);
    assert.ok(v.ok && v.value.rotationDue === false);
    advance(1);
    v = await svc.getKey(k.value.id);
    assert.ok(v.ok && v.value.rotationDue === true);
  });

  test('an exposed key is flagged once, audited each time, and revoked only when the policy says so', async () => {
    const { svc, store, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    published.length = 0;
    const rec = (await store.inner.getKey(k.value.id))!;
    await svc.markExposed(rec, false);
    const flagged = (await store.inner.getKey(k.value.id))!;
    assert.deepEqual([flagged.exposedAt, flagged.revokedAt], ['2026-01-01T00:00:00Z', null]);
    assert.deepEqual(published, [{ kind: 'key', hash: rec.hash }]);
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'key.exposed',
      companyId: 'c',
      keyId: rec.id,
      keyPrefix: rec.prefix,
      actor: 'gateway',
      details: { revoke: false },
    });
    const updates = store.count('updateKey');
    await svc.markExposed(flagged, true);
    assert.equal(store.count('updateKey'), updates + 1, 'flagged already: only the revocation writes');
    assert.deepEqual(
      audit.slice(-2).map((e) => [e.event, e.actor, e.details]),
      [
        ['key.exposed', 'gateway', { revoke: true }],
        ['key.revoked', 'gateway', { reason: 'exposed in a URL' }],
      ],
    );
    assert.ok((await store.inner.getKey(k.value.id))!.revokedAt);
  });

  test('the audit limit: 100 by default, capped at 1000, anything but a whole number >= 1 refused; filtered by company', async () => {
    const { svc, store } = probed();
    await svc.createCompany({ id: 'a' });
    await svc.createCompany({ id: 'b' });
    const limits: number[] = [];
    const read = store.inner.readAudit.bind(store.inner);
    store.inner.readAudit = (o) => {
      limits.push(o.limit);
      return read(o);
    };
    for (const limit of [undefined, 1, 5000, '7']) assert.ok((await svc.readAudit({ limit })).ok);
    assert.deepEqual(limits, [100, 1, 1000, 7]);
    for (const limit of [0, -5, 2.9, Number.NaN, 'abc', '', '1e3', ['1', '2'], null]) {
      const r = await svc.readAudit({ limit });
      assert.ok(!r.ok && r.status === 400, JSON.stringify(limit));
      assert.match(r.details, /^limit: /);
    }
    assert.equal(limits.length, 4, 'a refused limit reads nothing');
    const only = await svc.readAudit({ companyId: 'b' });
    assert.ok(only.ok);
    assert.deepEqual(
      only.value.map((e) => e.companyId),
      ['b'],
    );
    const all = await svc.readAudit({ companyId: '' });
    assert.ok(all.ok && all.value.length === 2);
  });

  test('a failing audit store does not fail the change; other store failures are not turned into values', async () => {
    const { svc, store, audit } = probed();
    store.fail('appendAudit');
    assert.ok((await svc.createCompany({ id: 'c' })).ok);
    assert.equal(audit.length, 1, 'still logged');
    const boom = new Error('disk on fire');
    store.fail('createCompany', boom);
    await assert.rejects(svc.createCompany({ id: 'd' }), (err) => err === boom);
  });

  test('the remaining input rules: statuses, trimmed names and labels, default actors and reason', async () => {
    const { svc, store, audit } = probed();
    const s = await svc.createCompany({ id: 's', status: 'suspended' });
    assert.ok(s.ok && s.value.status === 'suspended');
    for (const status of ['active', 'pending'] as const) {
      const u = await svc.updateCompany('s', { status });
      assert.ok(u.ok && u.value.status === status, status);
    }
    const named = await svc.updateCompany('s', { name: '  New  ' });
    assert.ok(named.ok && named.value.name === 'New');
    assert.match(failure(await svc.updateCompany('s', { name: '   ' })).details, /^name: /);
    const k = await svc.createKey('s', {});
    assert.ok(k.ok);
    assert.match(failure(await svc.rotateKey(k.value.id, { label: ' ' })).details, /^label: /);
    assert.match(failure(await svc.rotateKey(k.value.id, { label: 'x'.repeat(201) })).details, /^label: /);
    const r = await svc.rotateKey(k.value.id, { label: ' two ' });
    assert.ok(r.ok && r.value.label === 'two');
    await svc.revokeKey(r.value.id);
    assert.deepEqual(
      audit.map((e) => [e.event, e.actor]),
      [
        ['company.created', 'admin'],
        ['company.updated', 'admin'],
        ['company.updated', 'admin'],
        ['company.updated', 'admin'],
        ['key.created', 'admin'],
        ['key.rotated', 'admin'],
        ['key.revoked', 'admin'],
      ],
    );
    assert.deepEqual(audit.at(-1)!.details, { reason: 'revoked' });
    // A key imported without an environment (legacy) rotates into a `live` key.
    const legacy = {
      ...(await store.inner.getKey(k.value.id))!,
      id: 'key_legacy',
      hash: 'f'.repeat(64),
      environment: null,
    };
    await svc.revokeKey(k.value.id);
    assert.ok((await store.inner.createKey(legacy, 2, '2026-01-01T00:00:00Z')).ok);
    const fromLegacy = await svc.rotateKey('key_legacy', {});
    assert.ok(
      fromLegacy.ok && fromLegacy.value.environment === 'live' && fromLegacy.value.key.startsWith('nk_live_'),
    );
  });

  test('the read-only file store: 409 for every write, 404 for an unknown key first', async () => {
    const { FileKeyStore } = await import('../../../src/store/file-store.js');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'ng-svc-'));
    const key = generateApiKey('live');
    writeFileSync(
      join(dir, 'k.yaml'),
      `companies: [{ id: c, tier: free, keys: [{ id: key_1, hash: ${hashApiKey(key)} }] }]\n`,
    );
    const store = new FileKeyStore({
      path: join(dir, 'k.yaml'),
      knownTiers: new Set(['free']),
      watchIntervalMs: 0,
    });
    const svc = new AdminService({ store, tiers: new Set(['free']), maxActiveKeys: 2, rotationAgeDays: 90 });
    try {
      assert.equal(failure(await svc.createCompany({ id: 'd' })).code, 'ADMIN_READ_ONLY_STORE');
      assert.equal(failure(await svc.revokeKey('key_1')).code, 'ADMIN_READ_ONLY_STORE');
      assert.equal(failure(await svc.revokeKey('key_2')).code, 'ADMIN_UNKNOWN_ID');
      assert.equal(
        failure(await svc.updateKey('key_1', { limits: [{ points: 1, duration: 1 }] })).code,
        'ADMIN_READ_ONLY_STORE',
      );
    } finally {
      await store.close();
    }
  });
});

describe('AdminService: a write that fails with a store outage may land later', () => {
  const timedOut = () => new Error('Command timed out');
  const LIMITS = [{ points: 5, duration: 60 }];
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
  function outage() {
    const audit: AuditEntry[] = [];
    const published: Invalidation[] = [];
    const store = new ProbeKeyStore(new MemoryKeyStore());
    store.subscribe((m) => published.push(m));
    const svc = new AdminService({
      store,
      tiers: new Set(['free']),
      maxActiveKeys: 5,
      rotationAgeDays: 90,
      onAudit: (e) => audit.push(e),
      reconcile: { intervalMs: 20, forMs: 300 },
    });
    return { svc, store, audit, published };
  }

  test('a key update that lands after its outage is audited late and published', async () => {
    const { svc, store, audit, published } = outage();
    await svc.createCompany({ id: 'acme' });
    const k = await svc.createKey('acme', {});
    assert.ok(k.ok);
    const hash = (await store.getKey(k.value.id))!.hash;
    store.fail('updateKey', timedOut());
    published.length = 0;
    await assert.rejects(svc.updateKey(k.value.id, { limits: LIMITS }), /timed out/);
    assert.deepEqual(published, [{ kind: 'key', hash }], 'published at once, best effort');
    store.heal();
    await store.inner.updateKey(k.value.id, { limits: LIMITS }); // the timed-out write runs now
    await wait(100);
    const late = audit.filter((e) => e.event === 'key.updated');
    assert.deepEqual(
      late.map((e) => e.details),
      [{ limits: { to: LIMITS }, late: true }],
    );
    assert.equal(published.length, 2);
  });

  test('a write that never lands: nothing audited, and the re-reads stop after forMs', async () => {
    const { svc, store, audit } = outage();
    await svc.createCompany({ id: 'acme' });
    store.fail('updateCompany', timedOut());
    await assert.rejects(svc.updateCompany('acme', { status: 'suspended' }), /timed out/);
    await wait(400);
    const reads = store.count('getCompany');
    await wait(100);
    assert.equal(store.count('getCompany'), reads, 'still re-reading after forMs');
    assert.ok(reads >= 5 && reads <= 20, `${reads} re-reads`);
    assert.deepEqual(
      audit.map((e) => e.event),
      ['company.created'],
    );
  });

  test('a rotation whose claim fails stores nothing; one whose new key fails can be retried', async () => {
    const { svc, store } = outage();
    await svc.createCompany({ id: 'acme' });
    const k = await svc.createKey('acme', {});
    assert.ok(k.ok);
    store.fail('updateKey', timedOut());
    await assert.rejects(svc.rotateKey(k.value.id, {}), /timed out/);
    store.heal();
    assert.deepEqual(
      (await store.listKeys('acme')).map((x) => [x.id, x.rotatedTo, x.revokedAt]),
      [[k.value.id, null, null]],
      'the old key is as it was, no new key',
    );
    // The claim lands, the new key does not: the old key's revocation stays scheduled (final; a
    // minute away at least, whatever the grace period), the claim is given back, so a retry works.
    store.fail('createKey', timedOut());
    await assert.rejects(svc.rotateKey(k.value.id, { gracePeriodSeconds: 0 }), /timed out/);
    store.heal();
    const claimed = (await store.getKey(k.value.id))!;
    assert.equal(claimed.rotatedTo, null, 'the claim was given back');
    assert.ok(Date.parse(claimed.revokedAt!) >= Date.now() + 55_000, 'the old key still works a minute');
    const retry = await svc.rotateKey(k.value.id, { gracePeriodSeconds: 3600 });
    assert.ok(retry.ok, JSON.stringify(retry));
    assert.equal(retry.value.oldKeyRevokesAt, claimed.revokedAt, 'the earlier end stays');
    assert.equal((await store.getKey(k.value.id))!.rotatedTo, retry.value.id);
    // Now the successor works: a third rotation of the old key is refused and changes nothing.
    assert.equal((await svc.rotateKey(k.value.id, {})).ok, false);
    assert.equal((await store.getKey(k.value.id))!.rotatedTo, retry.value.id);
  });
});

describe('AdminService: input rules seen in the answers', () => {
  const ROUTES = [{ prefix: '/notify', methods: ['POST'] }, { prefix: '/status' }];
  function routed() {
    const audit: AuditEntry[] = [];
    const store = new ProbeKeyStore(new MemoryKeyStore());
    const svc = new AdminService({
      store,
      tiers: new Set(['free', 'standard']),
      routes: ROUTES,
      maxActiveKeys: 2,
      rotationAgeDays: 90,
      onAudit: (e) => audit.push(e),
      now: () => Date.parse('2026-01-01T00:00:00Z'),
    });
    return { svc, store, audit };
  }
  const BAD_SCOPES = [{ route: '/nope' }, { route: '/notify', methods: ['GET'] }];
  const BAD_SCOPES_DETAILS =
    'scopes.0.route: not a configured route prefix (/notify, /status); scopes.1.methods.0: the route does not forward GET';

  test('scopes must name configured routes and methods they forward, on companies and keys', async () => {
    const { svc, store } = routed();
    assert.deepEqual(failure(await svc.createCompany({ id: 'c', scopes: BAD_SCOPES })), {
      code: 'ADMIN_INVALID_REQUEST',
      status: 400,
      error: 'Bad Request',
      details: BAD_SCOPES_DETAILS,
    });
    assert.equal(await store.inner.getCompany('c'), null, 'a refused create stores nothing');
    const good = [{ route: '/notify', methods: ['POST'] }, { route: '/status' }];
    const c = await svc.createCompany({ id: 'c', scopes: good });
    assert.ok(c.ok);
    assert.deepEqual(c.value.scopes, good);
    assert.equal(failure(await svc.updateCompany('c', { scopes: BAD_SCOPES })).details, BAD_SCOPES_DETAILS);
    assert.deepEqual((await store.inner.getCompany('c'))!.scopes, good);
    // No scopes in the patch: nothing to check against the routes.
    assert.ok((await svc.updateCompany('c', { status: 'suspended' })).ok);
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    const writes = store.count('updateKey');
    assert.equal(
      failure(await svc.updateKey(k.value.id, { scopes: BAD_SCOPES })).details,
      BAD_SCOPES_DETAILS,
    );
    assert.equal(store.count('updateKey'), writes, 'a refused patch writes nothing');
    assert.ok((await svc.updateKey(k.value.id, { limits: [{ points: 5, duration: 60 }] })).ok);
  });

  test('without configured routes any scope route is accepted', async () => {
    const { svc } = probed();
    const c = await svc.createCompany({ id: 'c', scopes: BAD_SCOPES });
    assert.ok(c.ok);
    assert.deepEqual(c.value.scopes, BAD_SCOPES);
  });

  test('zod messages: enum options listed, nested paths joined with dots, names not shown when odd', async () => {
    const { svc } = probed();
    assert.equal(
      failure(await svc.createCompany({ id: 'c', status: 'gone', limits: [{ points: 0, duration: 60 }] }))
        .details,
      'status: must be one of active, pending, suspended; limits.0.points: Number must be greater than or equal to 1',
    );
    assert.equal(
      failure(await svc.createCompany({ id: 'c', tier: 'a b' })).details,
      'tier: must be 1-32 lowercase letters, digits, "_" or "-"',
    );
    assert.equal(
      failure(await svc.createCompany({ id: 'c', tier: 'gold', 'a b': 1, 'x;': 2 })).details,
      'unknown field(s): (a name that is not shown), (a name that is not shown)',
    );
  });

  test('the audit limit takes a string of several digits, and refuses a one-element list', async () => {
    const { svc, store } = probed();
    const limits: number[] = [];
    const read = store.inner.readAudit.bind(store.inner);
    store.inner.readAudit = (o) => {
      limits.push(o.limit);
      return read(o);
    };
    assert.ok((await svc.readAudit({ limit: '25' })).ok);
    assert.ok((await svc.readAudit({ limit: '1000000' })).ok);
    assert.equal(failure(await svc.readAudit({ limit: ['5'] })).status, 400);
    assert.deepEqual(limits, [25, 1000]);
  });

  test('without an audit hook, changes are still audited in the store', async () => {
    const store = new MemoryKeyStore();
    const svc = new AdminService({ store, tiers: new Set(['free']), maxActiveKeys: 2, rotationAgeDays: 90 });
    assert.ok((await svc.createCompany({ id: 'c' })).ok);
    assert.deepEqual(
      (await store.readAudit({ limit: 10 })).map((e) => [e.event, e.companyId]),
      [['company.created', 'c']],
    );
  });
});

describe('AdminService: key PATCH and rotation carry the restrictions', () => {
  const LIMITS = [{ points: 5, duration: 60 }];
  const SCOPES = [{ route: '/notify', methods: ['POST'] }];

  test('a key PATCH: the view, one audit event with before and after, an invalidation', async () => {
    const { svc, store, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', { label: 'l' });
    assert.ok(k.ok);
    published.length = 0;
    const r = await svc.updateKey(k.value.id, { scopes: SCOPES, limits: LIMITS });
    assert.deepEqual(r, {
      ok: true,
      value: {
        id: k.value.id,
        companyId: 'c',
        prefix: k.value.prefix,
        label: 'l',
        environment: 'live',
        status: 'active',
        createdAt: '2026-01-01T00:00:00Z',
        lastUsedAt: null,
        expiresAt: null,
        revokedAt: null,
        exposedAt: null,
        rotatedTo: null,
        scopes: SCOPES,
        limits: LIMITS,
        rotationDue: false,
      },
    });
    assert.deepEqual((await store.inner.getKey(k.value.id))!.limits, LIMITS);
    assert.deepEqual(audit.at(-1), {
      at: '2026-01-01T00:00:00Z',
      event: 'key.updated',
      companyId: 'c',
      keyId: k.value.id,
      keyPrefix: k.value.prefix,
      actor: 'admin',
      details: { scopes: { from: null, to: SCOPES }, limits: { from: null, to: LIMITS } },
    });
    assert.deepEqual(published, [{ kind: 'key', hash: hashApiKey(k.value.key) }]);
  });

  test('a key PATCH: bad input, an unknown key (no write attempted), a rotated key (409)', async () => {
    const { svc, store, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    assert.equal(
      failure(await svc.updateKey(k.value.id, {})).details,
      'at least one of scopes, limits is required',
    );
    assert.equal(
      failure(await svc.updateKey(k.value.id, { label: 'x' })).details,
      'unknown field(s): label; at least one of scopes, limits is required',
    );
    assert.equal(store.count('updateKey'), 0);
    assert.deepEqual(failure(await svc.updateKey('key_nope', { limits: LIMITS })), {
      code: 'ADMIN_UNKNOWN_ID',
      status: 404,
      error: 'Not Found',
      details: 'key key_nope not found',
    });
    assert.equal(store.count('updateKey'), 0, 'an unknown key is not written to');
    const r = await svc.rotateKey(k.value.id, {});
    assert.ok(r.ok);
    const events = audit.length;
    published.length = 0;
    assert.deepEqual(failure(await svc.updateKey(k.value.id, { limits: LIMITS }, 'ops')), {
      code: 'ADMIN_KEY_INACTIVE',
      status: 409,
      error: 'Conflict',
      details: `key ${k.value.id} was rotated to ${r.value.id}, which took over its scopes and limits; change that key instead, and revoke this one to end its grace period now`,
    });
    assert.equal((await store.inner.getKey(k.value.id))!.limits, null, 'nothing written');
    assert.equal(audit.length, events, 'nothing audited');
    assert.deepEqual(published, [], 'nothing published');
  });

  test('a key that vanishes between the read and the write is a 404 for PATCH and DELETE', async () => {
    for (const op of ['update', 'revoke'] as const) {
      const { svc, store } = probed();
      await svc.createCompany({ id: 'c' });
      const k = await svc.createKey('c', {});
      assert.ok(k.ok);
      const release = store.hold('getKey');
      const answer =
        op === 'update' ? svc.updateKey(k.value.id, { limits: LIMITS }) : svc.revokeKey(k.value.id);
      // The file store's reload replaces every record at once: the key is gone.
      (store.inner as MemoryKeyStore).replaceContents([(await store.inner.getCompany('c'))!], []);
      release();
      assert.deepEqual(failure(await answer), {
        code: 'ADMIN_UNKNOWN_ID',
        status: 404,
        error: 'Not Found',
        details: `key ${k.value.id} not found`,
      });
    }
  });

  test("a rotation gives the new key the old key's scopes, limits and expiry", async () => {
    const { svc, store } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', { expiresAt: '2026-06-01T00:00:00Z' });
    assert.ok(k.ok);
    assert.ok((await svc.updateKey(k.value.id, { scopes: SCOPES, limits: LIMITS })).ok);
    const r = await svc.rotateKey(k.value.id, {});
    assert.ok(r.ok);
    const rec = (await store.inner.getKey(r.value.id))!;
    assert.deepEqual(
      [rec.scopes, rec.limits, rec.expiresAt, rec.revokedAt],
      [SCOPES, LIMITS, '2026-06-01T00:00:00Z', null],
    );
  });

  test("a PATCH that lands between the rotation's read and its claim is handed over to the new key", async () => {
    const { svc, store, audit, published } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    published.length = 0;
    const release = store.hold('getKey');
    const rotation = svc.rotateKey(k.value.id, {}, 'ops');
    // The rotation has read the old key (no restrictions); a PATCH and an earlier expiry land now.
    await store.inner.updateKey(k.value.id, {
      scopes: SCOPES,
      limits: LIMITS,
      expiresAt: '2026-03-01T00:00:00Z',
    });
    release();
    const r = await rotation;
    assert.ok(r.ok);
    const rec = (await store.inner.getKey(r.value.id))!;
    assert.deepEqual(
      [rec.scopes, rec.limits, rec.expiresAt, rec.revokedAt],
      [SCOPES, LIMITS, '2026-03-01T00:00:00Z', null],
    );
    assert.deepEqual(published, [
      { kind: 'key', hash: rec.hash }, // created with what the claim saw: no correction needed
      { kind: 'key', hash: hashApiKey(k.value.key) },
    ]);
    assert.deepEqual(
      audit.slice(-1).map((e) => [e.event, e.actor, e.keyId]),
      [['key.rotated', 'ops', k.value.id]],
    );
  });

  test("a PATCH that lands between the rotation's claim and its new key is refused; the new key is never wider", async () => {
    const { svc, store } = probed();
    await svc.createCompany({ id: 'c' });
    const k = await svc.createKey('c', {});
    assert.ok(k.ok);
    assert.ok((await svc.updateKey(k.value.id, { limits: LIMITS })).ok);
    const release = store.hold('createKey');
    const rotation = svc.rotateKey(k.value.id, {}, 'ops');
    while (store.count('createKey') < 2) await new Promise((r) => setImmediate(r));
    const patch = await svc.updateKey(k.value.id, { limits: null, scopes: null });
    assert.equal(failure(patch).status, 409);
    release();
    const r = await rotation;
    assert.ok(r.ok);
    assert.deepEqual((await store.inner.getKey(r.value.id))?.limits, LIMITS);
    assert.deepEqual((await store.inner.getKey(k.value.id))?.limits, LIMITS);
  });
});

describe('AdminService: late landings after an outage, tick by tick (mocked clock and timers)', () => {
  const T0 = Date.parse('2026-01-01T00:00:00.250Z');
  const AT = '2026-01-01T00:00:00Z';
  const LIMITS = [{ points: 5, duration: 60 }];
  const SCOPES = [{ route: '/notify' }];
  const timedOut = () => new Error('Command timed out');
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 }));
  afterEach(() => mock.timers.reset());
  /** Advances the clock by `ms` and lets the re-read that fired run to its end. */
  async function tick(ms = 100): Promise<void> {
    mock.timers.tick(ms);
    await new Promise((r) => setImmediate(r));
  }
  // forMs well past the last tick of a test: a re-read that goes on after settling shows.
  function late(reconcile: { intervalMs: number; forMs: number } | null = { intervalMs: 100, forMs: 2000 }) {
    const audit: AuditEntry[] = [];
    const published: Invalidation[] = [];
    const store = new ProbeKeyStore(new MemoryKeyStore());
    store.subscribe((m) => published.push(m));
    const svc = new AdminService({
      store,
      tiers: new Set(['free', 'standard']),
      maxActiveKeys: 3,
      rotationAgeDays: 90,
      onAudit: (e) => audit.push(e),
      now: () => Date.now(),
      ...(reconcile ? { reconcile } : {}),
    });
    return { svc, store, audit, published };
  }
  async function keyOf(svc: AdminService, companyId = 'c') {
    if (!(await svc.getCompany(companyId)).ok) await svc.createCompany({ id: companyId });
    const k = await svc.createKey(companyId, {});
    assert.ok(k.ok);
    return { ...k.value, hash: hashApiKey(k.value.key) };
  }

  test('a company create that lands after a first empty re-read is audited once, late, with its settings', async () => {
    const { svc, store, audit, published } = late();
    const land = store.defer('createCompany', timedOut());
    await assert.rejects(
      svc.createCompany({ id: 'acme', tier: 'standard', scopes: SCOPES, limits: LIMITS }, 'ops'),
      /timed out/,
    );
    assert.deepEqual(published, [{ kind: 'company', id: 'acme' }], 'published at once');
    await tick();
    assert.deepEqual([store.count('getCompany'), audit.length], [1, 0], 'not there yet: wait');
    store.heal();
    assert.deepEqual(await land(), [true]);
    await tick();
    assert.deepEqual(audit, [
      {
        at: AT,
        event: 'company.created',
        companyId: 'acme',
        actor: 'ops',
        details: {
          tier: 'standard',
          status: 'active',
          apiAccess: true,
          scopes: SCOPES,
          limits: LIMITS,
          late: true,
        },
      },
    ]);
    await tick();
    await tick();
    assert.deepEqual([store.count('getCompany'), audit.length], [2, 1], 'settled: no more re-reads');
  });

  test("a company create that finds someone else's company (another time or another tier) audits nothing", async () => {
    const { svc, store, audit } = late();
    const land = store.defer('createCompany', timedOut());
    await assert.rejects(svc.createCompany({ id: 'a' }), /timed out/);
    await assert.rejects(svc.createCompany({ id: 'b' }), /timed out/);
    store.heal();
    const theirs = (id: string, tier: string, createdAt: string) => ({
      id,
      name: id,
      tier,
      status: 'active' as const,
      apiAccess: true,
      createdAt,
      updatedAt: createdAt,
      scopes: null,
      limits: null,
    });
    await store.inner.createCompany(theirs('a', 'free', '2025-12-31T23:59:59Z'));
    await store.inner.createCompany(theirs('b', 'standard', AT));
    assert.deepEqual(await land(), [false, false], 'ours found them taken');
    await tick();
    await tick();
    assert.deepEqual(audit, []);
    assert.equal(store.count('getCompany'), 2, 'each settled at its first look');
  });

  test('a company update lands late: audited once with what landed, published again; none before it lands', async () => {
    const { svc, store, audit, published } = late();
    await svc.createCompany({ id: 'acme', name: 'Acme' });
    published.length = 0;
    const land = store.defer('updateCompany', timedOut());
    // name already holds its patched value: only the whole patch shows that the write landed.
    await assert.rejects(
      svc.updateCompany('acme', { name: 'Acme', status: 'suspended' }, 'ops'),
      /timed out/,
    );
    assert.deepEqual(published, [{ kind: 'company', id: 'acme' }]);
    await tick();
    await tick();
    assert.deepEqual(
      audit.map((e) => e.event),
      ['company.created'],
    );
    store.heal();
    await land();
    await tick();
    assert.deepEqual(audit.at(-1), {
      at: AT,
      event: 'company.updated',
      companyId: 'acme',
      actor: 'ops',
      details: { name: { to: 'Acme' }, status: { to: 'suspended' }, late: true },
    });
    assert.deepEqual(published, [
      { kind: 'company', id: 'acme' },
      { kind: 'company', id: 'acme' },
    ]);
    const reads = store.count('getCompany');
    await tick();
    assert.deepEqual([store.count('getCompany'), audit.length], [reads, 2]);
  });

  test('a company update of an unknown company settles at its first re-read', async () => {
    const { svc, store, audit } = late();
    store.fail('updateCompany', timedOut());
    await assert.rejects(svc.updateCompany('ghost', { status: 'suspended' }), /timed out/);
    await tick();
    await tick();
    assert.deepEqual([store.count('getCompany'), audit], [1, []]);
  });

  test('re-reads that fail (the store still down) are retried at the next tick', async () => {
    const { svc, store, audit } = late();
    await svc.createCompany({ id: 'acme' });
    const land = store.defer('updateCompany', timedOut());
    store.fail('getCompany', timedOut());
    await assert.rejects(svc.updateCompany('acme', { status: 'suspended' }), /timed out/);
    await tick();
    store.heal();
    await land();
    await tick();
    assert.deepEqual(
      audit.map((e) => [e.event, e.details]),
      [
        ['company.created', { tier: 'free', status: 'active', apiAccess: true }],
        ['company.updated', { status: { to: 'suspended' }, late: true }],
      ],
    );
  });

  test('re-reads: every intervalMs until forMs have passed, exactly', async () => {
    const { svc, store } = late({ intervalMs: 100, forMs: 300 });
    await svc.createCompany({ id: 'acme' });
    store.fail('updateCompany', timedOut());
    await assert.rejects(svc.updateCompany('acme', { status: 'suspended' }), /timed out/);
    for (let i = 0; i < 8; i++) await tick();
    assert.equal(store.count('getCompany'), 3, 'at 100, 200 and 300 ms');
  });

  test('re-reads by default: every second for 30 s', async () => {
    const { svc, store } = late(null);
    await svc.createCompany({ id: 'acme' });
    store.fail('updateCompany', timedOut());
    await assert.rejects(svc.updateCompany('acme', { status: 'suspended' }), /timed out/);
    await tick(999);
    assert.equal(store.count('getCompany'), 0);
    await tick(1);
    assert.equal(store.count('getCompany'), 1);
    for (let i = 0; i < 40; i++) await tick(1000);
    assert.equal(store.count('getCompany'), 30);
  });

  test('a revocation that lands late is audited once and published; none before it lands', async () => {
    const { svc, store, audit, published } = late();
    const k = await keyOf(svc);
    published.length = 0;
    const land = store.defer('updateKey', timedOut());
    await assert.rejects(svc.revokeKey(k.id, 'ops', 'leaked'), /timed out/);
    assert.deepEqual(published, [{ kind: 'key', hash: k.hash }], 'published at once');
    const reads = store.count('getKey');
    await tick();
    await tick();
    assert.equal(store.count('getKey'), reads + 2);
    assert.deepEqual(published.length, 1, 'not landed: nothing more');
    assert.equal(audit.at(-1)!.event, 'key.created');
    store.heal();
    await land();
    await tick();
    assert.deepEqual(audit.at(-1), {
      at: AT,
      event: 'key.revoked',
      companyId: 'c',
      keyId: k.id,
      keyPrefix: k.prefix,
      actor: 'ops',
      details: { reason: 'leaked', late: true },
    });
    assert.deepEqual(published, [
      { kind: 'key', hash: k.hash },
      { kind: 'key', hash: k.hash },
    ]);
    await tick();
    assert.deepEqual([store.count('getKey'), audit.length], [reads + 3, 3]);
  });

  test('a revocation of a key in its grace period lands late: audited only once it has landed', async () => {
    const { svc, store, audit } = late();
    const k = await keyOf(svc);
    assert.ok((await svc.rotateKey(k.id, { gracePeriodSeconds: 60 })).ok);
    const land = store.defer('updateKey', timedOut());
    await assert.rejects(svc.revokeKey(k.id), /timed out/);
    await tick();
    assert.equal(audit.at(-1)!.event, 'key.rotated', 'still revoking at a later time: not ours');
    store.heal();
    await land();
    await tick();
    assert.deepEqual(
      [audit.at(-1)!.event, audit.at(-1)!.details],
      ['key.revoked', { reason: 'revoked', late: true }],
    );
    assert.equal((await store.inner.getKey(k.id))!.revokedAt, AT);
  });

  test('a repeated revocation that times out is published again once the key reads revoked, not audited', async () => {
    const { svc, store, audit, published } = late();
    const k = await keyOf(svc);
    assert.ok((await svc.revokeKey(k.id)).ok);
    mock.timers.tick(1000); // a second later: a landing would keep the earlier time
    const events = audit.length;
    published.length = 0;
    store.fail('updateKey', timedOut());
    await assert.rejects(svc.revokeKey(k.id), /timed out/);
    const reads = store.count('getKey');
    await tick();
    await tick();
    assert.equal(audit.length, events);
    assert.deepEqual(published, [
      { kind: 'key', hash: k.hash },
      { kind: 'key', hash: k.hash },
    ]);
    assert.equal(store.count('getKey'), reads + 1, 'settled at the first look');
  });

  test('a key that vanishes while a late write is awaited settles at the next re-read', async () => {
    for (const op of ['update', 'revoke'] as const) {
      const { svc, store, audit } = late();
      const k = await keyOf(svc);
      store.fail('updateKey', timedOut());
      await assert.rejects(
        op === 'update' ? svc.updateKey(k.id, { limits: LIMITS }) : svc.revokeKey(k.id),
        /timed out/,
      );
      (store.inner as MemoryKeyStore).replaceContents([(await store.inner.getCompany('c'))!], []);
      const reads = store.count('getKey');
      await tick();
      await tick();
      assert.equal(store.count('getKey'), reads + 1, op);
      assert.equal(audit.at(-1)!.event, 'key.created', op);
    }
  });

  test('a key PATCH lands late: audited once with what landed, published; none before it lands', async () => {
    const { svc, store, audit, published } = late();
    const k = await keyOf(svc);
    published.length = 0;
    const land = store.defer('updateKey', timedOut());
    // limits is already null: only the whole patch shows that the write landed.
    await assert.rejects(svc.updateKey(k.id, { limits: null, scopes: SCOPES }), /timed out/);
    await tick();
    await tick();
    assert.equal(audit.at(-1)!.event, 'key.created');
    store.heal();
    await land();
    await tick();
    assert.deepEqual(audit.at(-1), {
      at: AT,
      event: 'key.updated',
      companyId: 'c',
      keyId: k.id,
      keyPrefix: k.prefix,
      actor: 'admin',
      details: { limits: { to: null }, scopes: { to: SCOPES }, late: true },
    });
    assert.deepEqual(published, [
      { kind: 'key', hash: k.hash },
      { kind: 'key', hash: k.hash },
    ]);
    const reads = store.count('getKey');
    await tick();
    assert.deepEqual([store.count('getKey'), audit.length], [reads, 3]);
  });

  test('a key create that lands late: the key, never delivered, is revoked; both events audited, by the caller', async () => {
    const { svc, store, audit, published } = late();
    await svc.createCompany({ id: 'c' });
    published.length = 0;
    const land = store.defer('createKey', timedOut());
    await assert.rejects(svc.createKey('c', {}, 'ops'), /timed out/);
    await tick();
    assert.equal(store.count('updateKey'), 0, 'nothing to revoke yet');
    store.heal();
    await land();
    const [stored] = await store.inner.listKeys('c');
    assert.ok(stored && stored.revokedAt === null);
    assert.deepEqual(published, [{ kind: 'key', hash: stored.hash }], 'published at once');
    await tick();
    const late_ = { companyId: 'c', keyId: stored.id, keyPrefix: stored.prefix, actor: 'ops' };
    assert.deepEqual(audit.slice(1), [
      { at: AT, event: 'key.created', ...late_, details: { late: true } },
      {
        at: AT,
        event: 'key.revoked',
        ...late_,
        details: { reason: 'stored after a store outage; the key was never delivered', late: true },
      },
    ]);
    assert.equal((await store.inner.getKey(stored.id))!.revokedAt, AT);
    assert.deepEqual(published, [
      { kind: 'key', hash: stored.hash },
      { kind: 'key', hash: stored.hash },
    ]);
    await tick();
    assert.equal(audit.length, 3);
  });

  test("a rotation whose new key's write times out and lands later: the new key is revoked once it shows up", async () => {
    const { svc, store, audit } = late();
    const k = await keyOf(svc);
    const land = store.defer('createKey', timedOut());
    await assert.rejects(svc.rotateKey(k.id, {}, 'ops'), /timed out/);
    store.heal();
    await tick();
    await land(); // the timed-out write runs now
    const fresh = (await store.inner.listKeys('c')).find((x) => x.id !== k.id)!;
    assert.equal(fresh.revokedAt, null);
    await tick();
    assert.equal((await store.inner.getKey(fresh.id))!.revokedAt, AT);
    assert.deepEqual(
      audit.filter((e) => e.keyId === fresh.id).map((e) => [e.event, e.actor, e.details]),
      [
        ['key.created', 'ops', { late: true }],
        [
          'key.revoked',
          'ops',
          { reason: 'stored after a store outage; the key was never delivered', late: true },
        ],
      ],
    );
  });

  test('a rotation claim that times out and lands later is audited late and published', async () => {
    const { svc, store, audit, published } = late();
    const k = await keyOf(svc);
    const land = store.defer('updateKey', timedOut());
    published.length = 0;
    await assert.rejects(svc.rotateKey(k.id, {}, 'ops'), /timed out/);
    store.heal();
    await tick();
    assert.equal(audit.filter((e) => e.event === 'key.rotated').length, 0);
    await land();
    await tick();
    const old = (await store.inner.getKey(k.id))!;
    assert.ok(old.revokedAt, 'the claim landed');
    assert.equal(old.rotatedTo, null, 'and was given back: no new key stands behind it');
    assert.deepEqual(
      audit
        .filter((e) => e.event === 'key.rotated')
        .map((e) => [e.keyId, e.details?.late, e.details?.newKeyStored]),
      [[k.id, true, false]],
    );
    assert.ok(published.filter((m) => m.kind === 'key' && m.hash === old.hash).length >= 2);
    // Its successor never came to be: the rotation can be made again.
    assert.ok((await svc.rotateKey(k.id, {})).ok);
  });

  test('a write that fails with an error that is no outage is not re-read or published', async () => {
    const { svc, store, published } = late();
    await svc.createCompany({ id: 'acme' });
    published.length = 0;
    const boom = new Error('ERR script bug');
    store.fail('updateCompany', boom);
    await assert.rejects(svc.updateCompany('acme', { status: 'suspended' }), (err) => err === boom);
    await tick();
    await tick();
    assert.deepEqual([store.count('getCompany'), published], [0, []]);
  });

  test('a rotation write that fails with an error that is no outage leaves nothing in the background', async () => {
    for (const step of ['updateKey', 'createKey'] as const) {
      const { svc, store, published } = late();
      const k = await keyOf(svc);
      const boom = new Error('ERR script bug');
      store.fail(step, boom);
      await assert.rejects(svc.rotateKey(k.id, {}), (err) => err === boom);
      const [reads, sent] = [store.count('getKey'), published.length];
      await tick();
      await tick();
      assert.deepEqual([store.count('getKey'), published.length], [reads, sent], step);
    }
  });
});

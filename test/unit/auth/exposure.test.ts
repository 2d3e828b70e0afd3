import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AdminService } from '../../../src/admin/service.js';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { createExposedKeyHandler } from '../../../src/auth/exposure.js';
import { createRedisClient, waitForReady } from '../../../src/redis/connection.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import { RedisKeyStore } from '../../../src/store/redis-store.js';
import type { AuditEntry } from '../../../src/store/types.js';
import { createCompanyAndKey } from '../../helpers/admin.js';
import { startRedis } from '../../helpers/redis.js';

// Runs on the memory store; the one test of a failing store uses a real redis-server on loopback
// (test/helpers/redis.ts) and stops it.

const keyFormat = { maxLength: 128, acceptLegacy: false };

async function setup(revoke = false) {
  const store = new MemoryKeyStore();
  const audit: AuditEntry[] = [];
  const service = new AdminService({
    store,
    tiers: new Set(['free']),
    maxActiveKeys: 0,
    rotationAgeDays: 90,
    onAudit: (e) => audit.push(e),
  });
  const created = await createCompanyAndKey(service, 'acme', { tier: 'free' });
  const errors: unknown[] = [];
  const onKeyInUrl = createExposedKeyHandler({
    store,
    recorder: service,
    keyFormat,
    revoke,
    onError: (err) => errors.push(err),
  });
  const exposures = () => audit.filter((e) => e.event === 'key.exposed');
  return { store, service, audit, exposures, errors, onKeyInUrl, key: created };
}

describe('createExposedKeyHandler', () => {
  test('flags the active key found among the URL candidates, skipping empty and malformed ones', async () => {
    const t = await setup();
    await t.onKeyInUrl(['', 'not-a-key', 'nk_live_short', t.key.key]);
    const rec = await t.store.getKey(t.key.id);
    assert.ok(rec?.exposedAt, 'exposedAt is set');
    assert.equal(rec.revokedAt, null, 'the flag policy does not revoke');
    assert.deepEqual(
      t.exposures().map((e) => [e.keyId, e.actor, e.details]),
      [[t.key.id, 'gateway', { revoke: false }]],
    );
    assert.deepEqual(t.errors, []);
    assert.ok(!JSON.stringify(t.audit).includes(t.key.key), 'the key is not in the audit trail');
  });

  test('with the revoke policy the exposed key is revoked', async () => {
    const t = await setup(true);
    await t.onKeyInUrl([t.key.key]);
    const rec = await t.store.getKey(t.key.id);
    assert.ok(rec?.exposedAt && rec.revokedAt, 'flagged and revoked');
    assert.deepEqual(
      t.audit.map((e) => e.event).filter((e) => e.startsWith('key.') && e !== 'key.created'),
      ['key.exposed', 'key.revoked'],
    );
  });

  test('only the first well-formed candidate is looked up', async () => {
    const t = await setup();
    // A well-formed key that is not stored comes first: the real key after it is not read.
    await t.onKeyInUrl([generateApiKey('live'), t.key.key]);
    assert.equal((await t.store.getKey(t.key.id))?.exposedAt, null);
    assert.deepEqual(t.exposures(), []);
  });

  test('a revoked key, an unknown key and no candidate change nothing', async () => {
    const t = await setup();
    assert.ok((await t.service.revokeKey(t.key.id)).ok);
    await t.onKeyInUrl([t.key.key]);
    await t.onKeyInUrl([generateApiKey('live')]);
    await t.onKeyInUrl([]);
    await t.onKeyInUrl(['', '%']);
    assert.equal((await t.store.getKey(t.key.id))?.exposedAt, null);
    assert.deepEqual(t.exposures(), []);
    assert.deepEqual(t.errors, []);
  });

  test('a failing store goes to onError and the returned promise still resolves', async () => {
    const redis = await startRedis();
    const cfg = { url: redis.url, keyPrefix: 'ex:', commandTimeoutMs: 300, connectTimeoutMs: 1000 };
    const client = createRedisClient(cfg);
    const subscriber = createRedisClient(cfg);
    // The outage below is deliberate: without listeners ioredis prints every connection error.
    for (const c of [client, subscriber]) c.on('error', () => undefined);
    const store = new RedisKeyStore(client, subscriber, 'ex:');
    try {
      assert.ok(await waitForReady(client, 3000));
      const service = new AdminService({
        store,
        tiers: new Set(['free']),
        maxActiveKeys: 0,
        rotationAgeDays: 90,
      });
      const created = await createCompanyAndKey(service, 'acme', { tier: 'free' });
      const errors: unknown[] = [];
      const onKeyInUrl = createExposedKeyHandler({
        store,
        recorder: service,
        keyFormat,
        revoke: false,
        onError: (err) => errors.push(err),
      });
      await redis.kill();
      await onKeyInUrl([created.key]);
      assert.equal(errors.length, 1);
      assert.ok(errors[0] instanceof Error);
      assert.ok(!String(errors[0].message).includes(created.key), 'the error does not carry the key');
    } finally {
      await store.close();
      await redis.stop();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createReadinessCheck } from '../../../src/observability/readiness.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../../src/redis/connection.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import { RedisKeyStore } from '../../../src/store/redis-store.js';
import { eventually } from '../../helpers/http.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// Readiness is about Redis going away, so the Redis section starts its own redis-server on
// loopback (test/helpers/redis.ts) and kills it; the rest needs no network.

describe('createReadinessCheck', () => {
  test('a reachable store and no limiter Redis: ready', async () => {
    const ready = createReadinessCheck({ store: new MemoryKeyStore() });
    assert.deepEqual(await ready(), { ok: true, checks: { store: 'ok', rateLimiter: 'ok' } });
  });

  describe('with Redis (store and limiter)', () => {
    let redis: TestRedis;
    let limiterRedis: RedisClient;
    let store: RedisKeyStore;

    before(async () => {
      redis = await startRedis();
      const cfg = { url: redis.url, keyPrefix: 'rd:', commandTimeoutMs: 300, connectTimeoutMs: 1000 };
      const client = createRedisClient(cfg);
      const subscriber = createRedisClient(cfg);
      limiterRedis = createRedisClient(cfg, 'limiter');
      // The outage below is deliberate: without listeners ioredis prints every connection error.
      for (const c of [client, subscriber, limiterRedis]) c.on('error', () => undefined);
      assert.ok(await waitForReady(client, 3000));
      assert.ok(await waitForReady(limiterRedis, 3000));
      store = new RedisKeyStore(client, subscriber, 'rd:');
    });
    after(async () => {
      await store?.close();
      limiterRedis?.disconnect();
      await redis?.stop();
    });

    test('ready while Redis answers, not ready while it is gone, ready again after it returns', async () => {
      const ready = createReadinessCheck({ store, limiterRedis });
      assert.deepEqual(await ready(), { ok: true, checks: { store: 'ok', rateLimiter: 'ok' } });

      await redis.kill();
      // Each client notices the lost connection on its own: wait until both checks report it.
      await eventually(
        async () => {
          const r = await ready();
          return r.checks.store !== 'ok' && r.checks.rateLimiter !== 'ok';
        },
        5000,
        50,
      );
      const down = await ready();
      assert.equal(down.ok, false);
      assert.equal(down.checks.store, 'unavailable');
      assert.match(down.checks.rateLimiter!, /^redis (?!ready$)\w+$/);

      await redis.restart();
      await eventually(async () => (await ready()).ok, 10_000, 50);
      assert.deepEqual(await ready(), { ok: true, checks: { store: 'ok', rateLimiter: 'ok' } });
    });
  });
});

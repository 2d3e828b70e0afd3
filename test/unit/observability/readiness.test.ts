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

const READY = { ok: true, status: 'ready', checks: { store: 'ok', rateLimiter: 'ok' }, degraded: [] };

describe('createReadinessCheck', () => {
  test('a reachable store and no limiter Redis: ready', async () => {
    const ready = createReadinessCheck({ store: new MemoryKeyStore() });
    assert.deepEqual(await ready(), READY);
  });

  test('drain(): draining (not ready) from then on, whatever the checks say', async () => {
    const ready = createReadinessCheck({ store: new MemoryKeyStore() });
    ready.drain();
    assert.deepEqual(await ready(), { ...READY, ok: false, status: 'draining' });
  });

  test('starting until the store answered once or started() says so; a later outage is degraded', async () => {
    let up = false;
    const store = { ping: async () => (up ? undefined : Promise.reject(new Error('down'))) };
    const ready = createReadinessCheck({ store, started: () => false });
    const starting = await ready();
    assert.equal(starting.ok, false);
    assert.equal(starting.status, 'starting');
    assert.deepEqual(starting.degraded, ['store']);
    up = true;
    assert.deepEqual(await ready(), READY);
    up = false;
    assert.deepEqual(await ready(), {
      ok: true,
      status: 'degraded',
      checks: { store: 'unavailable', rateLimiter: 'ok' },
      degraded: ['store'],
    });
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

    test('Redis paused: degraded (200) under insurance, not ready under closed', async () => {
      const insurance = createReadinessCheck({ store, limiterRedis, failurePolicy: 'insurance' });
      const closed = createReadinessCheck({ store, limiterRedis, failurePolicy: 'closed' });
      assert.deepEqual(await closed(), READY);
      redis.pause();
      try {
        const r = await insurance();
        assert.equal(r.ok, true);
        assert.equal(r.status, 'degraded');
        assert.equal(r.checks.store, 'unavailable');
        assert.ok(r.degraded.includes('store'));
        // A hung Redis keeps its connection `ready`: only a PING shows the limiter cannot count,
        // and under `closed` every request would be refused.
        const c = await closed();
        assert.equal(c.ok, false);
        assert.equal(c.status, 'not ready');
        assert.equal(c.checks.rateLimiter, 'redis unavailable');
      } finally {
        redis.resume();
      }
      await eventually(async () => (await insurance()).status === 'ready', 5000, 50);
      await eventually(async () => (await closed()).status === 'ready', 5000, 50);
    });

    test('Redis gone: degraded under insurance, not ready under closed; ready again after it returns', async () => {
      const insurance = createReadinessCheck({ store, limiterRedis, failurePolicy: 'insurance' });
      const closed = createReadinessCheck({ store, limiterRedis, failurePolicy: 'closed' });
      assert.deepEqual(await insurance(), READY);

      await redis.kill();
      // Each client notices the lost connection on its own: wait until both checks report it.
      await eventually(
        async () => {
          const r = await insurance();
          return r.checks.store !== 'ok' && r.checks.rateLimiter !== 'ok';
        },
        5000,
        50,
      );
      const down = await insurance();
      assert.equal(down.ok, true);
      assert.equal(down.status, 'degraded');
      assert.deepEqual(down.degraded, ['store', 'rateLimiter']);
      assert.equal(down.checks.store, 'unavailable');
      assert.match(down.checks.rateLimiter!, /^redis (?!ready$)\w+$/);
      const cannotServe = await closed();
      assert.equal(cannotServe.ok, false);
      assert.equal(cannotServe.status, 'not ready');

      await redis.restart();
      await eventually(async () => (await insurance()).status === 'ready', 10_000, 50);
      assert.deepEqual(await closed(), READY);
    });
  });

  test('a route without a healthy upstream target: degraded, still ready', async () => {
    let down: string[] = [];
    const ready = createReadinessCheck({ store: { ping: async () => undefined }, upstreams: () => down });
    assert.deepEqual(await ready(), READY);
    down = ['/notify/v1'];
    assert.deepEqual(await ready(), {
      ok: true,
      status: 'degraded',
      checks: { store: 'ok', rateLimiter: 'ok', upstreams: 'no healthy target: /notify/v1' },
      degraded: ['upstreams'],
    });
  });
});

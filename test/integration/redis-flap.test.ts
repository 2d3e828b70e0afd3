import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { eventually } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => redis?.stop());

test('a Redis that drops the subscriber right after each reconnect causes no unhandled rejection', async () => {
  // ioredis re-subscribes on `ready` without a catch; a connection lost at that moment was an
  // unhandled rejection, which ends a Node process (seen once in the SIGSTOP hardening test).
  const rejections: unknown[] = [];
  const onRejection = (err: unknown) => rejections.push(err);
  process.on('unhandledRejection', onRejection);
  const cfg = { url: redis.url, keyPrefix: 'flap:', commandTimeoutMs: 300, connectTimeoutMs: 1000 };
  const client = createRedisClient(cfg);
  const subscriber = createRedisClient(cfg);
  const store = new RedisKeyStore(client, subscriber, 'flap:', { heartbeatMs: 100 });
  const received: string[] = [];
  store.subscribe((msg) => {
    if (msg.kind === 'company') received.push(msg.id);
  });
  try {
    assert.ok(await waitForReady(subscriber, 3000));
    for (let i = 0; i < 15; i++) {
      // Kill the server the moment the subscriber is ready again: the re-subscription is in flight.
      const ready = new Promise<void>((resolve) => subscriber.once('ready', () => resolve()));
      await redis.restart();
      await ready;
      await redis.kill();
    }
    await redis.restart();
    assert.ok(await waitForReady(subscriber, 5000), 'the subscriber comes back by itself');
    // Until the re-subscription is in place and delivers (published straight to the channel, so
    // the store's local delivery cannot answer): every rejection of the loop has surfaced by then.
    const probe = JSON.stringify({ kind: 'company', id: 'probe' });
    await eventually(
      async () => {
        await client.publish('flap:invalidate', probe).catch(() => 0);
        return received.includes('probe');
      },
      5000,
      50,
    );
    assert.deepEqual(rejections.map(String), []);
  } finally {
    process.off('unhandledRejection', onRejection);
    await store.close();
  }
});

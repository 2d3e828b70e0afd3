import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { emptyCounts, hourStart, hourTag } from '../../../src/usage/counts.js';
import { RedisUsageStore } from '../../../src/usage/redis-usage-store.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

let redis: TestRedis;
let client: Redis;
before(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
after(async () => {
  client.disconnect();
  await redis.stop();
});

// Hours near now: hashes of hours older than the retention would expire at once.
const H2 = hourStart(Date.now());
const H1 = H2 - 3_600_000;

test('one flush is one pipeline: HINCRBY of the non-zero counters and EXPIREAT per hash', async () => {
  let pipelines = 0;
  const original = client.pipeline.bind(client);
  client.pipeline = ((...args: Parameters<Redis['pipeline']>) => {
    pipelines++;
    return original(...args);
  }) as Redis['pipeline'];
  const store = new RedisUsageStore(client, 'ng:', 35);
  await store.add([
    { companyId: 'a', hour: H1, counts: { ...emptyCounts(), allowed: 3, upstream2xx: 3 } },
    { companyId: 'a', hour: H2, counts: { ...emptyCounts(), rateLimited: 2 } },
    { companyId: 'b', hour: H2, counts: { ...emptyCounts(), allowed: 1, upstream5xx: 1 } },
  ]);
  assert.equal(pipelines, 1);
  client.pipeline = original;
  assert.deepEqual(await client.hgetall(`ng:u:a:${hourTag(H2)}`), { rateLimited: '2' });
  assert.deepEqual(await client.hgetall(`ng:u:a:${hourTag(H1)}`), { allowed: '3', upstream2xx: '3' });
  // The same instant from every instance: the end of the hour plus the retention.
  const expected = (H2 + 3_600_000) / 1000 + 35 * 86_400 - Date.now() / 1000;
  const ttl = await client.ttl(`ng:u:b:${hourTag(H2)}`); // TTL, not EXPIRETIME: Redis 6.2 has no EXPIRETIME
  assert.ok(Math.abs(ttl - expected) <= 5, `ttl ${ttl}, expected about ${expected}`);
  // A second instance's flush adds to the same hashes.
  await new RedisUsageStore(client, 'ng:', 35).add([
    { companyId: 'a', hour: H2, counts: { ...emptyCounts(), rateLimited: 1, allowed: 1 } },
  ]);
  const read = await store.readHours('a', [H1, H2, H2 + 3_600_000]);
  assert.deepEqual(read.get(H2), { ...emptyCounts(), rateLimited: 3, allowed: 1 });
  assert.deepEqual(read.get(H1), { ...emptyCounts(), allowed: 3, upstream2xx: 3 });
  assert.equal(read.has(H2 + 3_600_000), false);
});

test('an outage rejects the flush (the recorder keeps the counts)', async () => {
  const dead = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  dead.on('error', () => undefined);
  const store = new RedisUsageStore(dead, 'ng:', 35);
  await assert.rejects(store.add([{ companyId: 'a', hour: H1, counts: { ...emptyCounts(), allowed: 1 } }]));
  dead.disconnect();
});

test("a key's share lives in its company's hash (no key of its own); each read sees only its fields", async () => {
  const store = new RedisUsageStore(client, 'kq:', 35);
  await store.add([
    {
      companyId: 'c',
      hour: H2,
      counts: { ...emptyCounts(), allowed: 3, upstream2xx: 3 },
      keys: new Map([
        ['k-1', { ...emptyCounts(), allowed: 2, upstream2xx: 2 }],
        ['k-2', { ...emptyCounts(), allowed: 1, upstream2xx: 1 }],
      ]),
    },
  ]);
  assert.deepEqual(await client.keys('kq:*'), [`kq:u:c:${hourTag(H2)}`]);
  assert.deepEqual((await store.readHours('c', [H2])).get(H2), {
    ...emptyCounts(),
    allowed: 3,
    upstream2xx: 3,
  });
  assert.deepEqual((await store.readHours('c', [H2], 'k-1')).get(H2), {
    ...emptyCounts(),
    allowed: 2,
    upstream2xx: 2,
  });
  assert.equal((await store.readHours('c', [H2], 'k-9')).size, 0);
});

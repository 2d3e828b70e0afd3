import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LeaseLimiter, type LeaseLimiterOptions } from '../../src/ratelimit/lease-limiter.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../src/redis/connection.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

// Several LeaseLimiter instances, each on its own Redis connection (as separate gateway processes
// would be), sharing one real redis-server.
describe('LeaseLimiter on a real Redis, several instances', () => {
  let redis: TestRedis;
  const clients: RedisClient[] = [];
  let seq = 0;

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await redis?.stop();
  });

  async function client(): Promise<RedisClient> {
    const c = createRedisClient({
      url: redis.url,
      keyPrefix: 'gw:',
      commandTimeoutMs: 1000,
      connectTimeoutMs: 2000,
    });
    clients.push(c);
    assert.ok(await waitForReady(c, 5000), 'redis client did not become ready');
    return c;
  }

  /** `n` instances of one tier, each with its own connection; a fresh counter key prefix per call. */
  async function instances(
    n: number,
    opts: Omit<LeaseLimiterOptions, 'redis' | 'keyPrefix'>,
  ): Promise<LeaseLimiter[]> {
    const keyPrefix = `gw:rl:t${++seq}`;
    return Promise.all(
      Array.from({ length: n }, async () => new LeaseLimiter({ ...opts, redis: await client(), keyPrefix })),
    );
  }

  test('never over the limit under concurrent load; under-admission at the first refusal ≤ (instances − 1) × lease', async () => {
    const N = 4;
    const opts = { points: 5000, duration: 60, maxLease: 50, divisor: 16 };
    const lease = LeaseLimiter.leaseSize(opts.points, opts.maxLease, opts.divisor);
    assert.equal(lease, 50);
    const ls = await instances(N, opts);
    let admitted = 0;
    let refusedSeen = false;
    // Uneven load (instance i runs 5 × (i + 1) workers), all until the first refusal anywhere.
    // Bounded: a limiter that never refuses must fail the test, not hang it.
    let attempts = 0;
    const worker = async (l: LeaseLimiter) => {
      while (!refusedSeen && attempts++ < 2 * opts.points) {
        const d = await l.consume('acme');
        if (d.allowed) admitted++;
        else refusedSeen = true;
      }
    };
    await Promise.all(ls.flatMap((l, i) => Array.from({ length: 5 * (i + 1) }, () => worker(l))));
    assert.ok(admitted <= opts.points, `admitted ${admitted} > ${opts.points}`);
    assert.ok(
      admitted >= opts.points - (N - 1) * lease,
      `admitted ${admitted} at the first refusal: under-admission over the bound ${(N - 1) * lease}`,
    );
    // Every instance keeps asking: the leases still held are spent, and not one point more.
    const rest = await Promise.all(
      ls.flatMap((l) => Array.from({ length: 2 * lease }, () => l.consume('acme'))),
    );
    admitted += rest.filter((d) => d.allowed).length;
    assert.equal(admitted, opts.points);
  });

  test('small limits are exact: the lease shrinks to one point (3N concurrent → exactly N)', async () => {
    const ls = await instances(3, { points: 30, duration: 60, maxLease: 100, divisor: 64 });
    const all = await Promise.all(Array.from({ length: 90 }, (_, i) => ls[i % 3]!.consume('acme')));
    assert.equal(all.filter((d) => d.allowed).length, 30);
    for (const d of all.filter((x) => !x.allowed)) assert.ok(d.msBeforeNext > 0);
  });

  test('a lease dies with its window: it is never spent in the next one', async () => {
    const [a, b] = await instances(2, { points: 100, duration: 1, maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume('acme')).allowed, true); // a now holds 49 unused points
    await new Promise((r) => setTimeout(r, 1100));
    // The next window: b takes all of it.
    const next = await Promise.all(Array.from({ length: 120 }, () => b!.consume('acme')));
    assert.equal(next.filter((d) => d.allowed).length, 100);
    // a's 49 points belonged to the last window: spending them now would exceed this one.
    assert.equal((await a!.consume('acme')).allowed, false);
  });

  test('close() gives the unused lease back to the same window', async () => {
    const [a, b] = await instances(2, { points: 100, duration: 60, maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume('acme')).allowed, true);
    await a!.close();
    const all = await Promise.all(Array.from({ length: 120 }, () => b!.consume('acme')));
    assert.equal(all.filter((d) => d.allowed).length, 99);
  });

  test('a held lease keeps serving while Redis is down; then the limiter rejects', async () => {
    const own = await startRedis();
    try {
      const c = createRedisClient({
        url: own.url,
        keyPrefix: 'gw:',
        commandTimeoutMs: 500,
        connectTimeoutMs: 500,
      });
      clients.push(c);
      assert.ok(await waitForReady(c, 5000));
      const l = new LeaseLimiter({
        redis: c,
        keyPrefix: 'gw:rl:down',
        points: 1000,
        duration: 60,
        maxLease: 10,
        divisor: 1,
      });
      assert.equal((await l.consume('acme')).allowed, true);
      await own.kill();
      for (let i = 0; i < 9; i++) assert.equal((await l.consume('acme')).allowed, true);
      await assert.rejects(l.consume('acme'));
    } finally {
      await own.stop();
    }
  });
});

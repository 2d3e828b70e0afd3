import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LeaseLimiter, type LeaseDecision, type LeaseWindow } from '../../src/ratelimit/lease-limiter.js';
import { TierRateLimiter, type RateDecision } from '../../src/ratelimit/tier-limiter.js';
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

  /** Windows of one fresh subject (one hash tag), counted under fresh keys. */
  function windows(...ws: [points: number, duration: number][]): LeaseWindow[] {
    const tag = `t${++seq}`;
    return ws.map(([points, duration]) => ({ key: `gw:rl:{${tag}}:c${duration}`, points, duration }));
  }

  interface Instance {
    consume(): Promise<LeaseDecision>;
    close(): Promise<void>;
  }

  /** `n` instances, each with its own connection, all counting `ws` for one subject. */
  async function instances(
    n: number,
    ws: LeaseWindow[],
    lease: { maxLease: number; divisor: number },
  ): Promise<Instance[]> {
    return Promise.all(
      Array.from({ length: n }, async () => {
        const l = new LeaseLimiter({ ...lease, redis: await client() });
        return { consume: () => l.consume('acme', ws), close: () => l.close() };
      }),
    );
  }

  /** `total` concurrent requests spread over the instances; the number admitted. */
  async function burst(ls: Instance[], total: number): Promise<{ admitted: number; all: LeaseDecision[] }> {
    const all = await Promise.all(Array.from({ length: total }, (_, i) => ls[i % ls.length]!.consume()));
    return { admitted: all.filter((d) => d.allowed).length, all };
  }

  const counter = async (c: RedisClient, w: LeaseWindow) => Number((await c.get(w.key)) ?? 0);

  test('never over the limit under concurrent load; under-admission at the first refusal ≤ (instances − 1) × lease', async () => {
    const N = 4;
    const points = 5000;
    const lease = { maxLease: 50, divisor: 16 };
    assert.equal(LeaseLimiter.leaseSize(points, lease.maxLease, lease.divisor), 50);
    // Two windows; the 60 s one binds, the 120 s one has room: the lease is the smaller of both.
    const ls = await instances(N, windows([points, 60], [4 * points, 120]), lease);
    let admitted = 0;
    let refusedSeen = false;
    // Uneven load (instance i runs 5 × (i + 1) workers), all until the first refusal anywhere.
    // Bounded: a limiter that never refuses must fail the test, not hang it.
    let attempts = 0;
    const worker = async (l: Instance) => {
      while (!refusedSeen && attempts++ < 2 * points) {
        const d = await l.consume();
        if (d.allowed) admitted++;
        else refusedSeen = true;
      }
    };
    await Promise.all(ls.flatMap((l, i) => Array.from({ length: 5 * (i + 1) }, () => worker(l))));
    assert.ok(admitted <= points, `admitted ${admitted} > ${points}`);
    assert.ok(
      admitted >= points - (N - 1) * 50,
      `admitted ${admitted} at the first refusal: under-admission over the bound ${(N - 1) * 50}`,
    );
    // Every instance keeps asking: the leases still held are spent, and not one point more.
    const rest = await Promise.all(ls.flatMap((l) => Array.from({ length: 100 }, () => l.consume())));
    admitted += rest.filter((d) => d.allowed).length;
    assert.equal(admitted, points);
  });

  test('small limits are exact: the lease shrinks to one point (3N concurrent → exactly N)', async () => {
    const ls = await instances(3, windows([30, 60]), { maxLease: 100, divisor: 64 });
    const { admitted, all } = await burst(ls, 90);
    assert.equal(admitted, 30);
    for (const d of all.filter((x) => !x.allowed)) {
      assert.equal(d.refusedBy, 0);
      assert.ok(d.windows[0]!.msBeforeReset > 0);
    }
  });

  test('each window is exact: a 1 s window binds (2N concurrent → exactly N), then the 60 s one', async () => {
    // A 1 s window may roll over during a burst on a loaded machine: then the burst is retried.
    for (let attempt = 1; ; attempt++) {
      const ws = windows([20, 1], [25, 60]);
      const ls = await instances(3, ws, { maxLease: 100, divisor: 64 });
      const started = Date.now();
      const first = await burst(ls, 40);
      if (Date.now() - started > 500 && attempt < 3) continue;
      assert.equal(first.admitted, 20);
      for (const d of first.all.filter((x) => !x.allowed))
        assert.equal(d.refusedBy, 0, 'the 1 s window refused');
      // The refusals took nothing from the 60 s window: 20 used, not 40.
      assert.equal(await counter(clients[0]!, ws[1]!), 20);
      await new Promise((r) => setTimeout(r, 1100));
      // Next second: the 60 s window has 5 left, which binds now (10 concurrent → exactly 5).
      const second = await burst(ls, 10);
      assert.equal(second.admitted, 5);
      for (const d of second.all.filter((x) => !x.allowed)) {
        assert.equal(d.refusedBy, 1, 'the 60 s window refused');
        assert.ok(d.windows[1]!.msBeforeReset > 50_000, 'Retry-After is that of the 60 s window');
      }
      // The 1 s window counted only what all windows admitted.
      assert.equal(await counter(clients[0]!, ws[0]!), 5);
      return;
    }
  });

  test('a lease ends with its shortest window and gives its rest back to the longer ones', async () => {
    const ws = windows([1000, 1], [10_000, 60]);
    const [a] = await instances(1, ws, { maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume()).allowed, true); // a holds 49 unused points of both windows
    assert.equal(await counter(clients.at(-1)!, ws[1]!), 50);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await a!.consume()).allowed, true); // a new lease of 50; the 49 went back first
    assert.equal(await counter(clients.at(-1)!, ws[1]!), 1 + 50);
    assert.equal(await counter(clients.at(-1)!, ws[0]!), 50);
  });

  test('a lease dies with its window: it is never spent in the next one', async () => {
    const [a, b] = await instances(2, windows([100, 1]), { maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume()).allowed, true); // a now holds 49 unused points
    await new Promise((r) => setTimeout(r, 1100));
    // The next window: b takes all of it.
    const next = await Promise.all(Array.from({ length: 120 }, () => b!.consume()));
    assert.equal(next.filter((d) => d.allowed).length, 100);
    // a's 49 points belonged to the last window: spending them now would exceed this one.
    assert.equal((await a!.consume()).allowed, false);
  });

  test('close() gives the unused lease back to every window it came from', async () => {
    const ws = windows([100, 60], [1000, 120]);
    const [a, b] = await instances(2, ws, { maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume()).allowed, true);
    await a!.close();
    assert.equal(await counter(clients.at(-1)!, ws[1]!), 1);
    const all = await Promise.all(Array.from({ length: 120 }, () => b!.consume()));
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
      const l = new LeaseLimiter({ redis: c, maxLease: 10, divisor: 1 });
      const w = [{ key: 'gw:rl:{down}:c60', points: 1000, duration: 60 }];
      assert.equal((await l.consume('acme', w)).allowed, true);
      await own.kill();
      for (let i = 0; i < 9; i++) assert.equal((await l.consume('acme', w)).allowed, true);
      await assert.rejects(l.consume('acme', w));
    } finally {
      await own.stop();
    }
  });

  test("per company and per key across 3 instances: a key's stricter window and the company's are each exact", async () => {
    const limiters = await Promise.all(
      Array.from(
        { length: 3 },
        async () =>
          new TierRateLimiter({
            tiers: [{ name: 'std', windows: [{ points: 1_000, duration: 60 }] }],
            redis: await client(),
            keyPrefix: 'gw:',
            failurePolicy: 'closed',
            lease: { maxSize: 100, divisor: 64 },
          }),
      ),
    );
    const co = `co${++seq}`;
    const company = { companyLimits: [{ points: 20, duration: 60 }] };
    const strict = { ...company, keyId: 'k1', keyLimits: [{ points: 6, duration: 30 }] };
    const fire = (n: number, extra: object): Promise<RateDecision[]> =>
      Promise.all(Array.from({ length: n }, (_, i) => limiters[i % 3]!.consume(co, 'std', extra)));
    // Key k1: 2N concurrent → exactly its own 6.
    const k1 = await fire(12, strict);
    assert.equal(k1.filter((d) => d.allowed).length, 6);
    for (const d of k1.filter((x) => !x.allowed)) {
      assert.deepEqual([d.limit, d.remaining], [6, 0]);
      assert.equal(d.windows.find((w) => w.owner === 'key')?.points, 6);
    }
    // Another key of the company, without windows of its own: the company's 20 − 6 = 14.
    const k2 = await fire(28, { ...company, keyId: 'k2' });
    assert.equal(k2.filter((d) => d.allowed).length, 14);
    for (const d of k2.filter((x) => !x.allowed)) assert.deepEqual([d.limit, d.remaining], [20, 0]);
    // The company is full: a key with room in its own window is refused by the company's.
    const k3 = await limiters[0]!.consume(co, 'std', { ...strict, keyId: 'k3' });
    assert.equal(k3.allowed, false);
    assert.equal(k3.limit, 20);
    assert.ok(k3.resetSeconds > 30, 'Retry-After is that of the 60 s window');
    await Promise.all(limiters.map((l) => l.close()));
  });
});

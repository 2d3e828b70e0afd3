import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LeaseLimiter, type LeaseDecision, type LeaseWindow } from '../../src/ratelimit/lease-limiter.js';
import { TierRateLimiter, type RateDecision } from '../../src/ratelimit/tier-limiter.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../src/redis/connection.js';
import { eventually } from '../helpers/http.js';
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

  /** A client of a test's own Redis with short timeouts, so that stopping that Redis is seen soon. */
  async function quickClient(own: TestRedis): Promise<RedisClient> {
    const c = createRedisClient({
      url: own.url,
      keyPrefix: 'gw:',
      commandTimeoutMs: 500,
      connectTimeoutMs: 500,
    });
    clients.push(c);
    assert.ok(await waitForReady(c, 5000));
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

  /** Until Redis's window of `w` has ended (its counter expired on Redis's clock), polled. */
  const windowEnded = (c: RedisClient, w: LeaseWindow) =>
    eventually(async () => (await c.exists(w.key)) === 0, 5000, 20);

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
      await windowEnded(clients[0]!, ws[0]!);
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
    await windowEnded(clients.at(-1)!, ws[0]!);
    assert.equal((await a!.consume()).allowed, true); // a new lease of 50; the 49 went back first
    assert.equal(await counter(clients.at(-1)!, ws[1]!), 1 + 50);
    assert.equal(await counter(clients.at(-1)!, ws[0]!), 50);
  });

  test('a lease dies with its window: it is never spent in the next one', async () => {
    const ws = windows([100, 1]);
    const [a, b] = await instances(2, ws, { maxLease: 50, divisor: 1 });
    assert.equal((await a!.consume()).allowed, true); // a now holds 49 unused points
    await windowEnded(clients.at(-1)!, ws[0]!);
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
      const c = await quickClient(own);
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

  // One instance with a manual clock (`now`): a lease's local end, its reset times and the moment a
  // refusal is asked again are then exact, while Redis keeps its own (real) clock and windows.
  async function manual(lease: { maxLease: number; divisor: number }, c?: RedisClient) {
    const clock = { t: 1_000_000 };
    const l = new LeaseLimiter({ ...lease, redis: c ?? (await client()), now: () => clock.t });
    return { l, clock };
  }

  test('options are checked; the lease size is floor(points / divisor) clamped to [1, maxLease]', async () => {
    const c = await client();
    for (const bad of [{ maxLease: 0 }, { maxLease: 1.5 }])
      assert.throws(() => new LeaseLimiter({ redis: c, divisor: 1, ...bad }), {
        name: 'TypeError',
        message: 'maxLease must be an integer >= 1',
      });
    for (const bad of [{ divisor: 0 }, { divisor: 2.5 }])
      assert.throws(() => new LeaseLimiter({ redis: c, maxLease: 1, ...bad }), {
        name: 'TypeError',
        message: 'divisor must be an integer >= 1',
      });
    // The smallest options are valid: one point per Redis call.
    const one = new LeaseLimiter({ redis: c, maxLease: 1, divisor: 1 });
    await assert.rejects(one.consume('acme', []), {
      name: 'TypeError',
      message: 'at least one window is needed',
    });
    const ws = windows([5, 60]);
    assert.equal((await one.consume('acme', ws)).allowed, true);
    assert.equal(await counter(c, ws[0]!), 1);
    assert.equal(LeaseLimiter.leaseSize(30, 100, 64), 1);
    assert.equal(LeaseLimiter.leaseSize(640, 100, 64), 10);
    assert.equal(LeaseLimiter.leaseSize(100_000, 100, 64), 100);
  });

  test('one take serves a lease locally: admitted, remaining and reset are exact', async () => {
    const { l, clock } = await manual({ maxLease: 10, divisor: 2 });
    const c = clients.at(-1)!;
    const ws = windows([100, 60], [1000, 120]);
    const first = await l.consume('acme', ws);
    assert.equal(first.allowed, true);
    assert.equal(first.refusedBy, -1);
    // min(floor(100 / 2), floor(1000 / 2), 10) = 10 taken from both windows; 9 left locally.
    assert.deepEqual(
      first.windows.map((w) => [w.points, w.duration, w.remaining]),
      [
        [100, 60, 90 + 9],
        [1000, 120, 990 + 9],
      ],
    );
    const [r60, r120] = first.windows.map((w) => w.msBeforeReset) as [number, number];
    assert.ok(r60 > 50_000 && r60 <= 60_000, `reset of the 60 s window: ${r60}`);
    assert.ok(r120 > 110_000 && r120 <= 120_000, `reset of the 120 s window: ${r120}`);
    for (let i = 8; i >= 0; i--) {
      clock.t += 1000;
      const d = await l.consume('acme', ws);
      assert.equal(d.allowed, true);
      assert.deepEqual(
        d.windows.map((w) => w.remaining),
        [90 + i, 990 + i],
      );
      // Local time: the same window ends, 1 s nearer.
      assert.deepEqual(
        d.windows.map((w) => w.msBeforeReset),
        [r60 - 1000 * (9 - i), r120 - 1000 * (9 - i)],
      );
    }
    // Ten requests, one Redis call.
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [10, 10]);
    // The eleventh takes the next lease.
    assert.equal((await l.consume('acme', ws)).allowed, true);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [20, 20]);
  });

  test('concurrent requests of one subject share one Redis call', async () => {
    const { l } = await manual({ maxLease: 10, divisor: 1 });
    const ws = windows([1000, 60]);
    const all = await Promise.all(Array.from({ length: 10 }, () => l.consume('acme', ws)));
    assert.equal(all.filter((d) => d.allowed).length, 10);
    assert.equal(await counter(clients.at(-1)!, ws[0]!), 10);
  });

  test('a lease ends exactly at its shortest window’s local end; its rest goes back with the next take', async () => {
    const { l, clock } = await manual({ maxLease: 10, divisor: 1 });
    const c = clients.at(-1)!;
    const ws = windows([100, 60], [1000, 120]);
    const first = await l.consume('acme', ws);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [10, 10]);
    // The lease's end, locally; Redis's windows (on its own clock) are still the same ones, so the 9
    // unused points go back to both before the next lease of 10 is taken.
    clock.t += first.windows[0]!.msBeforeReset;
    const next = await l.consume('acme', ws);
    assert.equal(next.allowed, true);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [1 + 10, 1 + 10]);
    assert.deepEqual(
      next.windows.map((w) => w.remaining),
      [89 + 9, 989 + 9],
    );
    // Once more: the carry went back once, so only this lease's 9 go back now.
    clock.t += next.windows[0]!.msBeforeReset;
    assert.equal((await l.consume('acme', ws)).allowed, true);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [2 + 10, 2 + 10]);
  });

  test('a refusal is answered locally until the refusing window ends, even with Redis down', async () => {
    const own = await startRedis();
    try {
      const c = await quickClient(own);
      const { l, clock } = await manual({ maxLease: 1, divisor: 1 }, c);
      // The 2 s window has room; the 60 s one is full after 3.
      const ws = windows([100, 2], [3, 60]);
      for (let i = 0; i < 3; i++) assert.equal((await l.consume('acme', ws)).allowed, true);
      const refused = await l.consume('acme', ws);
      assert.equal(refused.allowed, false);
      assert.equal(refused.refusedBy, 1);
      assert.deepEqual(
        refused.windows.map((w) => w.remaining),
        [97, 0],
      );
      const until = refused.windows[1]!.msBeforeReset;
      assert.ok(until > 50_000 && until <= 60_000, `reset of the 60 s window: ${until}`);
      // The refusal took nothing.
      assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [3, 3]);
      await own.kill();
      // Until the client has seen the connection go, so that the limiter's own check answers.
      await eventually(async () => c.status !== 'ready', 5000);
      // The 2 s window has ended locally: its reset is 0, never negative; the refusal still holds.
      clock.t += 5000;
      const later = await l.consume('acme', ws);
      assert.equal(later.allowed, false);
      assert.equal(later.refusedBy, 1);
      assert.deepEqual(
        later.windows.map((w) => w.msBeforeReset),
        [0, until - 5000],
      );
      clock.t += until - 5000 - 1;
      assert.equal((await l.consume('acme', ws)).allowed, false);
      // The 60 s window has ended: Redis must be asked, and it is down.
      clock.t += 1;
      await assert.rejects(l.consume('acme', ws), { message: /^Redis is not ready \(\w+\)$/ });
    } finally {
      await own.stop();
    }
  });

  test('the refusing window is the full one that resets last; one window full takes nothing from the others', async () => {
    const { l } = await manual({ maxLease: 1, divisor: 1 });
    const c = clients.at(-1)!;
    const ws = windows([2, 60], [5, 30], [2, 120]);
    for (let i = 0; i < 2; i++) assert.equal((await l.consume('acme', ws)).allowed, true);
    const d = await l.consume('acme', ws);
    assert.equal(d.allowed, false);
    // The 60 s and the 120 s windows are full: Retry-After is the 120 s one's.
    assert.equal(d.refusedBy, 2);
    assert.ok(d.windows[2]!.msBeforeReset > 110_000);
    assert.equal(await counter(c, ws[1]!), 2);
  });

  test('a grant is floor(free / divisor) of the window with least room, never below 1 point', async () => {
    const { l } = await manual({ maxLease: 100, divisor: 4 });
    const c = clients.at(-1)!;
    const ws = windows([1000, 60], [30, 120]);
    // The counters after each take: the grants 7, 5, 4, 3, 2, 2, then 1 each (floor(3 / 4) = 0 is
    // raised to 1), the 30 s window binding throughout; then refusals.
    const seen: number[] = [];
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      if ((await l.consume('acme', ws)).allowed) admitted++;
      const used = await counter(c, ws[1]!);
      if (seen.at(-1) !== used) seen.push(used);
    }
    assert.equal(admitted, 30);
    assert.deepEqual(seen, [7, 12, 16, 19, 21, 23, 24, 25, 26, 27, 28, 29, 30]);
    assert.equal(await counter(c, ws[0]!), 30);
  });

  test('a counter left without expiry gets its window again', async () => {
    const { l } = await manual({ maxLease: 5, divisor: 1 });
    const c = clients.at(-1)!;
    const ws = windows([100, 60]);
    await c.set(ws[0]!.key, '40');
    const d = await l.consume('acme', ws);
    assert.equal(d.allowed, true);
    assert.equal(await counter(c, ws[0]!), 45);
    const pttl = await c.pttl(ws[0]!.key);
    assert.ok(pttl > 50_000 && pttl <= 60_000, `pttl ${pttl}`);
    assert.ok(d.windows[0]!.msBeforeReset > 50_000 && d.windows[0]!.msBeforeReset <= 60_000);
    assert.equal(d.windows[0]!.remaining, 55 + 4);
  });

  test('a changed limit starts a new lease: other points, duration, key or windows', async () => {
    const { l } = await manual({ maxLease: 10, divisor: 1 });
    const c = clients.at(-1)!;
    const [w] = windows([100, 60]);
    assert.equal((await l.consume('acme', [w!])).allowed, true); // 9 left in the lease
    // Lowered to 5: the window already holds 10, so the old lease must not serve.
    const lower = await l.consume('acme', [{ ...w!, points: 5 }]);
    assert.equal(lower.allowed, false);
    assert.equal(await counter(c, w!), 10);
    // Another duration over the same counter: a new take.
    assert.equal((await l.consume('acme', [{ ...w!, duration: 120 }])).allowed, true);
    assert.equal(await counter(c, w!), 20);
    // Another key: counted there.
    const [other] = windows([100, 60]);
    assert.equal((await l.consume('acme', [{ ...other!, duration: 120 }])).allowed, true);
    assert.equal(await counter(c, other!), 10);
    // Two windows, then the second one's duration only: a new take from both.
    const pair = windows([100, 60], [1000, 120]);
    assert.equal((await l.consume('pair', pair)).allowed, true);
    assert.equal((await l.consume('pair', [pair[0]!, { ...pair[1]!, duration: 240 }])).allowed, true);
    assert.deepEqual([await counter(c, pair[0]!), await counter(c, pair[1]!)], [20, 20]);
    // A window added: a take from both.
    const [added] = windows([100, 30]);
    assert.equal((await l.consume('acme', [{ ...other!, duration: 120 }, added!])).allowed, true);
    assert.deepEqual([await counter(c, other!), await counter(c, added!)], [20, 10]);
  });

  test('close() gives back to the windows still running only, once; afterwards leases are single points', async () => {
    const { l, clock } = await manual({ maxLease: 10, divisor: 1 });
    const c = clients.at(-1)!;
    const ws = windows([100, 60], [1000, 120]);
    const first = await l.consume('acme', ws);
    // The 60 s window has ended locally (a lease is never spent past it), the 120 s one runs on:
    // the 9 unused points go back to it alone.
    clock.t += first.windows[0]!.msBeforeReset;
    await l.close();
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [10, 1]);
    // Nothing is left to give back a second time.
    await l.close();
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [10, 1]);
    // After close, each request takes one point: nothing would be given back any more.
    assert.equal((await l.consume('acme', ws)).allowed, true);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [11, 2]);
    assert.equal((await l.consume('acme', ws)).allowed, true);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [12, 3]);
  });

  test('a take that fails keeps its carry: close() gives it back to the windows still running', async () => {
    const { l, clock } = await manual({ maxLease: 10, divisor: 1 });
    const c = clients.at(-1)!;
    const ws = windows([100, 60], [1000, 120]);
    const first = await l.consume('acme', ws);
    clock.t += first.windows[0]!.msBeforeReset;
    // The lease has ended locally: its 9 points are to go back with the next take. That take fails
    // (a script error: the 60 s counter is no longer a number) before it changes anything.
    await c.del(ws[0]!.key);
    await c.hset(ws[0]!.key, 'x', '1');
    await assert.rejects(l.consume('acme', ws), /WRONGTYPE/);
    assert.equal(await counter(c, ws[1]!), 10);
    // The 9 are still this instance's to give back: to the 120 s window, the one still running.
    await l.close();
    assert.equal(await counter(c, ws[1]!), 1);
  });

  test('memory stays bounded: at 10,000 subjects, leases whose windows have all ended are dropped', async () => {
    // Its own connection with a longer command timeout: 10,000 calls on a loaded machine.
    const c = createRedisClient({
      url: redis.url,
      keyPrefix: 'gw:',
      commandTimeoutMs: 20_000,
      connectTimeoutMs: 2000,
    });
    clients.push(c);
    assert.ok(await waitForReady(c, 5000));
    const { l, clock } = await manual({ maxLease: 2, divisor: 1 }, c);
    const held = (): number => (l as unknown as { leases: Map<string, unknown> }).leases.size;
    const [long] = windows([1000, 600]);
    assert.equal((await l.consume('keep', [long!])).allowed, true); // one point left, for 600 s
    // Its 60 s window ends with the others, its 600 s one does not: kept too.
    const mixed = windows([1000, 600], [5, 60]);
    assert.equal((await l.consume('mixed', mixed)).allowed, true);
    const tag = `sweep${++seq}`;
    // 9,998 more subjects, 1,000 at a time.
    for (let from = 0; from < 9_998; from += 1_000) {
      const ds = await Promise.all(
        Array.from({ length: Math.min(1_000, 9_998 - from) }, (_, i) =>
          l.consume(`s${from + i}`, [{ key: `gw:rl:{${tag}-${from + i}}:c60`, points: 5, duration: 60 }]),
        ),
      );
      assert.ok(ds.every((d) => d.allowed));
    }
    assert.equal(held(), 10_000);
    // Every 60 s window has ended locally; the 600 s one has not.
    clock.t += 61_000;
    assert.equal((await l.consume('new', windows([5, 60]))).allowed, true);
    assert.equal(held(), 3);
    // Kept, 'mixed' still gives its unused point back with its next take (a dropped lease would not):
    // 2 − 1 + 2.
    assert.equal((await l.consume('mixed', mixed)).allowed, true);
    assert.equal(await counter(c, mixed[0]!), 3);
    // And 'keep' still serves its point locally.
    assert.equal((await l.consume('keep', [long!])).allowed, true);
    assert.equal(await counter(c, long!), 2);
  });

  test('settle adds what a process admitted elsewhere once: a total per process and window, never twice', async () => {
    const c = await client();
    const l = new LeaseLimiter({ redis: c, maxLease: 1, divisor: 1 });
    const [w] = windows([20, 60]);
    for (let i = 0; i < 3; i++) assert.equal((await l.consume('acme', [w!])).allowed, true);
    const ttl = await c.pttl(w!.key);
    const settle = (id: string, total: number) => l.settle(id, [{ key: w!.key, msLeft: 30_000, total }]);
    await settle('p1', 4);
    assert.equal(await counter(c, w!), 3 + 4);
    await settle('p1', 4); // retried, or a call that timed out and ran late
    assert.equal(await counter(c, w!), 7);
    await settle('p1', 6); // two more since: only the difference
    assert.equal(await counter(c, w!), 9);
    await settle('p1', 5); // an older call arriving after a newer one
    assert.equal(await counter(c, w!), 9);
    await settle('p2', 2); // another process: its own total
    assert.equal(await counter(c, w!), 11);
    // The running window keeps its end (not the insurance's 30 s), and the record goes with it.
    const [after, record] = [await c.pttl(w!.key), await c.pttl(`${w!.key}:ins`)];
    assert.ok(after <= ttl && after > 50_000, `counter ttl ${after}`);
    assert.ok(record > 0 && record <= after, `record ttl ${record}`);
    // Redis admits only what is left: 20 − 11.
    const rest = await Promise.all(Array.from({ length: 12 }, () => l.consume('acme', [w!])));
    assert.equal(rest.filter((d) => d.allowed).length, 9);
  });

  test("settle into a window Redis no longer has starts it with the insurance window's length", async () => {
    const c = await client();
    const l = new LeaseLimiter({ redis: c, maxLease: 1, divisor: 1 });
    const ws = windows([10, 60], [5, 2]);
    await l.settle('p1', [
      { key: ws[0]!.key, msLeft: 40_000, total: 6 },
      { key: ws[1]!.key, msLeft: 1200, total: 3 },
    ]);
    assert.deepEqual([await counter(c, ws[0]!), await counter(c, ws[1]!)], [6, 3]);
    const [long, short] = [await c.pttl(ws[0]!.key), await c.pttl(ws[1]!.key)];
    assert.ok(long > 35_000 && long <= 40_000, `${long}`);
    assert.ok(short > 0 && short <= 1200, `${short}`);
    // A take counts in those windows: 2 left in the short one.
    const ds = await Promise.all(Array.from({ length: 4 }, () => l.consume('acme', ws)));
    assert.equal(ds.filter((d) => d.allowed).length, 2);
    await l.settle('p1', []); // nothing to write: no call
  });

  test('a lease held across an outage is spent after it; the settled admissions count beside it', async () => {
    const [a, b] = await Promise.all([client(), client()]);
    const la = new LeaseLimiter({ redis: a, maxLease: 10, divisor: 1 });
    const lb = new LeaseLimiter({ redis: b, maxLease: 1, divisor: 1 });
    const ws = windows([30, 60]);
    assert.equal((await la.consume('acme', ws)).allowed, true); // a holds 9 more, counted in Redis
    // b's insurance admitted 15 while b could not reach Redis; it writes them now.
    await lb.settle('b', [{ key: ws[0]!.key, msLeft: 50_000, total: 15 }]);
    assert.equal(await counter(b, ws[0]!), 10 + 15);
    // a spends its lease locally (already counted), b gets the 5 left: 1 + 9 + 15 + 5 = 30.
    for (let i = 0; i < 9; i++) assert.equal((await la.consume('acme', ws)).allowed, true);
    const rest = await Promise.all(Array.from({ length: 8 }, () => lb.consume('acme', ws)));
    assert.equal(rest.filter((d) => d.allowed).length, 5);
    assert.equal((await la.consume('acme', ws)).allowed, false);
  });

  test('settle rejects at once while the client is not ready (the caller keeps its debts)', async () => {
    const own = await startRedis();
    try {
      const c = await quickClient(own);
      const l = new LeaseLimiter({ redis: c, maxLease: 1, divisor: 1 });
      await own.kill();
      await eventually(async () => c.status !== 'ready', 5000);
      await assert.rejects(l.settle('p1', [{ key: 'gw:rl:{x}:c60', msLeft: 1000, total: 1 }]), {
        message: /^Redis is not ready \(\w+\)$/,
      });
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

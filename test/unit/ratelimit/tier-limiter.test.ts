import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GatewayConfig } from '../../../src/config/schema.js';
import { performance } from 'node:perf_hooks';
import { GatewayError } from '../../../src/errors.js';
import { CAP_MS } from '../../../src/ratelimit/insurance.js';
import {
  AuthFailureLimiter,
  TierRateLimiter,
  type FailurePolicy,
  type RateDecision,
} from '../../../src/ratelimit/tier-limiter.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../../src/redis/connection.js';
import { eventually } from '../../helpers/http.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// The limiter is the one unit whose whole point is its Redis behaviour, so these tests drive a real
// redis-server on loopback (test/helpers/redis.ts) and cause failures the way production sees them:
// SIGSTOP (a hung server: commands time out) and SIGKILL (connection refused).

const TIER = { name: 'small', points: 3, duration: 60 };
const COMMAND_TIMEOUT_MS = 200;

let redis: TestRedis;
let client: RedisClient;
let seq = 0;
/** A company id no other test has counted against. */
const fresh = () => `co-${++seq}`;

function limiter(failurePolicy: FailurePolicy, errors: unknown[] = []): TierRateLimiter {
  return new TierRateLimiter({
    tiers: [TIER],
    redis: client,
    keyPrefix: 'ng-test:',
    failurePolicy,
    onStoreError: (err) => errors.push(err),
  });
}

async function consumeN(l: TierRateLimiter, companyId: string, n: number): Promise<RateDecision[]> {
  const out: RateDecision[] = [];
  for (let i = 0; i < n; i++) out.push(await l.consume(companyId, TIER.name));
  return out;
}

const allowed = (ds: RateDecision[]) => ds.map((d) => d.allowed);
const sources = (ds: RateDecision[]) => [...new Set(ds.map((d) => d.source))];

/** Waits until `key`'s counter in Redis satisfies `ok` (Redis may still be reconnecting). */
async function counterUntil(key: string, ok: (n: number) => boolean): Promise<void> {
  await eventually(async () => ok(Number(await client.get(key).catch(() => NaN))), 5000, 20);
}

/** Waits until the limiter counts in Redis again (the client reconnects on its own). */
async function primaryAgain(l: TierRateLimiter): Promise<void> {
  await eventually(async () => (await l.consume(fresh(), TIER.name)).source === 'primary', 5000, 50);
}

before(async () => {
  redis = await startRedis();
  client = createRedisClient({
    url: redis.url,
    keyPrefix: 'ng-test:',
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    connectTimeoutMs: 500,
  } as GatewayConfig['store']['redis']);
  client.on('error', () => undefined); // expected while the server is stopped
  assert.ok(await waitForReady(client, 5000), 'test Redis reachable');
});
after(async () => {
  redis?.resume();
  client?.disconnect();
  await redis?.stop();
});

describe('TierRateLimiter with Redis up', () => {
  test('exactly `points` requests pass in a window, then refusals with the reset time', async () => {
    const l = limiter('closed');
    const co = fresh();
    const ds = await consumeN(l, co, TIER.points + 2);
    assert.deepEqual(allowed(ds), [true, true, true, false, false]);
    assert.deepEqual(
      ds.map((d) => d.remaining),
      [2, 1, 0, 0, 0],
    );
    assert.deepEqual(sources(ds), ['primary']);
    for (const d of ds) {
      assert.equal(d.limit, TIER.points);
      assert.ok(d.resetSeconds >= TIER.duration - 2 && d.resetSeconds <= TIER.duration, `${d.resetSeconds}`);
    }
    // Counts are per company.
    assert.equal((await l.consume(fresh(), TIER.name)).allowed, true);
  });

  test('the count lives in Redis: two instances share it exactly, also when racing', async () => {
    const a = limiter('insurance');
    const b = limiter('insurance');
    const co = fresh();
    const ds = await Promise.all(
      Array.from({ length: 4 * TIER.points }, (_, i) => (i % 2 ? a : b).consume(co, TIER.name)),
    );
    assert.equal(ds.filter((d) => d.allowed).length, TIER.points);
    assert.deepEqual(sources(ds), ['primary']);
  });

  test('a company\'s window is counted under "<prefix>rl:{<company>}:c<seconds>"; a new tier applies to what was used', async () => {
    const big = { name: 'big', points: 10, duration: 60 };
    const l = new TierRateLimiter({
      tiers: [TIER, big],
      redis: client,
      keyPrefix: 'ng-test:',
      failurePolicy: 'closed',
    });
    const co = fresh();
    await consumeN(l, co, TIER.points + 1);
    // Moved to a bigger tier in the same window: the 3 already used count against its 10.
    const other = await l.consume(co, big.name);
    assert.deepEqual([other.allowed, other.remaining], [true, big.points - TIER.points - 1]);
    // The client adds its own prefix to every command, the limiter's key includes it once more.
    // One hash tag per company: every counter of a request is in one Cluster slot.
    assert.equal(await client.exists(`ng-test:rl:{${co}}:c60`), 1);
  });

  test('an unknown tier is an INTERNAL error, not a pass', async () => {
    await assert.rejects(
      limiter('open').consume(fresh(), 'nope'),
      (err: unknown) =>
        err instanceof GatewayError &&
        err.code === 'INTERNAL' &&
        /tier "nope" is not configured/.test(err.message),
    );
    // The same limiter serves a configured tier, so the rejection above is about the name.
    assert.equal((await limiter('open').consume(fresh(), TIER.name)).allowed, true);
  });
});

describe('TierRateLimiter when Redis fails', () => {
  test('insurance (Redis hung): what Redis admitted counts, the rest of the share in memory until the window ends', async () => {
    const errors: unknown[] = [];
    const l = limiter('insurance', errors);
    const co = fresh();
    assert.equal((await l.consume(co, TIER.name)).source, 'primary');
    redis.pause();
    let ds: RateDecision[];
    try {
      ds = await consumeN(l, co, TIER.points);
    } finally {
      redis.resume();
    }
    // One instance (the default): its share is the whole limit, and the request admitted through
    // Redis before the hang is part of it: 1 + 2, never 1 + 3.
    assert.deepEqual(allowed(ds), [true, true, false]);
    assert.deepEqual(sources(ds), ['insurance']);
    assert.deepEqual(
      ds.map((d) => d.remaining),
      [1, 0, 0],
    );
    assert.ok(ds[2]!.resetSeconds >= TIER.duration - 2 && ds[2]!.resetSeconds <= TIER.duration);
    // One failed call is reported; the company then stays on the insurance (Redis not asked).
    assert.equal(errors.length, 1);
    await primaryAgain(l);
    // Back on Redis, with exact counts.
    const next = await consumeN(l, fresh(), TIER.points + 1);
    assert.deepEqual(allowed(next), [true, true, true, false]);
    assert.deepEqual(sources(next), ['primary']);
    // The two insurance admissions are written to Redis as soon as it answers: its counter holds
    // all three (and the point the timed-out call took when Redis resumed, never spent), and
    // nothing more is admitted in this window, however the company is asked.
    const counter = async () => Number(await client.get(`ng-test:rl:{${co}}:c60`));
    await counterUntil(`ng-test:rl:{${co}}:c60`, (n) => n >= 3);
    const before = await counter();
    const back = await consumeN(l, co, 2);
    assert.deepEqual(allowed(back), [false, false]);
    assert.equal(await counter(), before, 'the refusals took nothing');
    assert.equal(errors.length, 1, 'writing the admissions is not a request: no error reported');
  });

  test("insurance → Redis: what one instance's insurance admitted, another instance's Redis counts", async () => {
    const co = fresh();
    const make = () =>
      new TierRateLimiter({
        tiers: [TIER],
        redis: client,
        keyPrefix: 'ng-test:',
        failurePolicy: 'insurance',
        instances: 2,
      });
    const [a, b] = [make(), make()];
    // The company's 10/60 s and 1000/3600 s windows and key k1's own 4/60 s: share 5, 500 and 2.
    const extra = {
      companyLimits: [
        { points: 10, duration: 60 },
        { points: 1000, duration: 3600 },
      ],
      keyId: 'k1',
      keyLimits: [{ points: 4, duration: 60 }],
    };
    // Gone (not hung: no call of a's runs late when it is back), then back empty.
    await redis.kill();
    let ds: RateDecision[];
    try {
      ds = await Promise.all(Array.from({ length: 4 }, () => a.consume(co, TIER.name, extra)));
    } finally {
      await redis.restart();
    }
    assert.deepEqual(allowed(ds).sort(), [false, false, true, true], 'the key window binds: 2 of 4');
    // Every window, the longest too, and the key's: Redis counts what the insurance admitted.
    const counters = ['c60', 'c3600', 'k:k1:60'].map((c) => `ng-test:rl:{${co}}:${c}`);
    for (const k of counters) await counterUntil(k, (n) => n === 2);
    // b never saw Redis fail: through Redis, the key has 4 − 2 left, the company 10 − 2.
    const key = await Promise.all(Array.from({ length: 4 }, () => b.consume(co, TIER.name, extra)));
    assert.equal(key.filter((d) => d.allowed).length, 2);
    const company = await Promise.all(
      Array.from({ length: 10 }, () => b.consume(co, TIER.name, { ...extra, keyId: 'k2', keyLimits: null })),
    );
    assert.equal(company.filter((d) => d.allowed).length, 10 - 4);
    assert.deepEqual(sources([...key, ...company]), ['primary']);
    await a.close();
  });

  test('caps: an instance back on Redis admits at most its share while another one is not back yet', async () => {
    const co = fresh();
    const key = `ng-test:rl:{${co}}:c60`;
    const own = createRedisClient({
      url: redis.url,
      keyPrefix: 'ng-test:',
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      connectTimeoutMs: 500,
    } as GatewayConfig['store']['redis']);
    own.on('error', () => undefined);
    assert.ok(await waitForReady(own, 5000));
    const clock = { t: performance.now() };
    const tier = { name: 'ten', points: 10, duration: 60 };
    const opts = { tiers: [tier], keyPrefix: 'ng-test:', failurePolicy: 'insurance' as const, instances: 2 };
    const a = new TierRateLimiter({ ...opts, redis: client, now: () => clock.t });
    const b = new TierRateLimiter({ ...opts, redis: own });
    try {
      // Gone (not hung, so no call runs late), then back empty.
      await redis.kill();
      try {
        const six = async (l: TierRateLimiter) => {
          const out: RateDecision[] = [];
          for (let i = 0; i < 6; i++) out.push(await l.consume(co, tier.name));
          return out;
        };
        const [da, db] = await Promise.all([six(a), six(b)]);
        assert.deepEqual([allowed(da).filter(Boolean).length, allowed(db).filter(Boolean).length], [5, 5]);
        // b is cut off from Redis: its 5 stay unknown to Redis until it reconnects.
        own.disconnect();
      } finally {
        await redis.restart();
      }
      await counterUntil(key, (n) => n === 5);
      // a is back, and Redis would admit 5 more: a admits none, its share is used.
      const capped = await Promise.all([1, 2, 3].map(() => a.consume(co, tier.name)));
      assert.deepEqual(allowed(capped), [false, false, false]);
      assert.deepEqual(sources(capped), ['insurance']);
      assert.equal(await client.get(key), '5', 'not asked');
      await own.connect();
      await counterUntil(key, (n) => n === 10);
      // After CAP_MS Redis alone decides: it knows all ten.
      clock.t += CAP_MS;
      const later = await a.consume(co, tier.name);
      assert.deepEqual([later.allowed, later.source], [false, 'primary']);
    } finally {
      own.disconnect();
    }
  });

  test('insurance share: floor(points / instances) per instance, counted with what Redis admitted', async () => {
    const co = fresh();
    const tier = { name: 'mid', points: 7, duration: 60 };
    const make = () =>
      new TierRateLimiter({
        tiers: [tier],
        redis: client,
        keyPrefix: 'ng-test:',
        failurePolicy: 'insurance',
        instances: 2,
      });
    const [a, b] = [make(), make()];
    // Through Redis: a admits 2, b admits 1 (3 of 7).
    for (const l of [a, a, b]) assert.equal((await l.consume(co, tier.name)).allowed, true);
    redis.pause();
    let da: RateDecision[];
    let db: RateDecision[];
    try {
      [da, db] = await Promise.all([
        Promise.all(Array.from({ length: 5 }, () => a.consume(co, tier.name))),
        Promise.all(Array.from({ length: 5 }, () => b.consume(co, tier.name))),
      ]);
    } finally {
      redis.resume();
    }
    // Share floor(7 / 2) = 3 each: a has 1 left, b has 2; 3 + 3 = 6 ≤ 7 in all.
    assert.equal(da.filter((d) => d.allowed).length, 1);
    assert.equal(db.filter((d) => d.allowed).length, 2);
    assert.deepEqual(sources([...da, ...db]), ['insurance']);
    assert.ok(da.every((d) => d.limit === tier.points));
    await eventually(async () => (await a.consume(fresh(), tier.name)).source === 'primary', 5000, 50);
  });

  test('insurance with more instances than points refuses (429, never over the limit)', async () => {
    const l = new TierRateLimiter({
      tiers: [TIER],
      redis: client,
      keyPrefix: 'ng-test:',
      failurePolicy: 'insurance',
      instances: TIER.points + 1,
    });
    redis.pause();
    let d: RateDecision;
    try {
      d = await l.consume(fresh(), TIER.name);
    } finally {
      redis.resume();
    }
    assert.equal(d.allowed, false);
    assert.equal(d.source, 'insurance');
    await primaryAgain(l);
  });

  test('insurance over several windows: each counts, a refusal by one takes nothing from the others', async () => {
    const l = limiter('insurance');
    const co = fresh();
    const extra = {
      companyLimits: [{ points: 5, duration: 60 }],
      keyId: 'k',
      keyLimits: [{ points: 2, duration: 30 }],
    };
    redis.pause();
    const ds: RateDecision[] = [];
    try {
      for (let i = 0; i < 3; i++) ds.push(await l.consume(co, TIER.name, extra));
      // Another key of the company: the company's 5 − 2 = 3 (the key's refusal took none of them).
      for (let i = 0; i < 4; i++)
        ds.push(await l.consume(co, TIER.name, { ...extra, keyId: 'k2', keyLimits: null }));
    } finally {
      redis.resume();
    }
    assert.deepEqual(allowed(ds), [true, true, false, true, true, true, false]);
    assert.deepEqual(sources(ds), ['insurance']);
    assert.deepEqual([ds[2]!.limit, ds[6]!.limit], [2, 5]);
    await primaryAgain(l);
  });

  test('open (Redis gone): every request passes with a full budget, then exact counts on recovery', async () => {
    const errors: unknown[] = [];
    const l = limiter('open', errors);
    const co = fresh();
    await redis.kill();
    let ds: RateDecision[];
    try {
      ds = await consumeN(l, co, 3 * TIER.points);
      // Reporting the failure is optional: without a hook the policy applies all the same.
      const quiet = new TierRateLimiter({
        tiers: [TIER],
        redis: client,
        keyPrefix: 'ng-test:',
        failurePolicy: 'open',
      });
      assert.equal((await quiet.consume(fresh(), TIER.name)).source, 'open');
    } finally {
      await redis.restart();
    }
    assert.ok(allowed(ds).every(Boolean));
    assert.deepEqual(sources(ds), ['open']);
    for (const d of ds) {
      assert.equal(d.remaining, TIER.points);
      assert.equal(d.resetSeconds, TIER.duration);
    }
    assert.equal(errors.length, 3 * TIER.points);
    await primaryAgain(l);
    // The restarted Redis is empty: a fresh window with the exact limit.
    assert.deepEqual(allowed(await consumeN(l, co, TIER.points + 1)), [true, true, true, false]);
  });

  test('closed (Redis hung): 503 RATE_LIMITER_UNAVAILABLE within the command timeout, then passes again', async () => {
    const l = limiter('closed');
    const co = fresh();
    redis.pause();
    const started = Date.now();
    try {
      await assert.rejects(
        l.consume(co, TIER.name),
        (err: unknown) =>
          err instanceof GatewayError &&
          err.code === 'RATE_LIMITER_UNAVAILABLE' &&
          err.status === 503 &&
          err.cause instanceof Error, // the Redis failure stays attached for the log
      );
    } finally {
      redis.resume();
    }
    // Bounded by the command timeout, with a generous margin for a loaded machine.
    assert.ok(Date.now() - started < COMMAND_TIMEOUT_MS + 2000, `${Date.now() - started} ms`);
    await primaryAgain(l);
    assert.deepEqual(allowed(await consumeN(l, fresh(), TIER.points + 1)), [true, true, true, false]);
    // The refused request's command may have run when Redis resumed (see the insurance test): it
    // can cost the company one request of the window, never grant one more.
    const ds = await consumeN(l, co, TIER.points);
    assert.ok(ds.filter((d) => d.allowed).length >= TIER.points - 1, JSON.stringify(allowed(ds)));
    assert.equal((await l.consume(co, TIER.name)).allowed, false);
  });
});

describe('AuthFailureLimiter', () => {
  test('blocks an address after exactly `points` failures, for about `duration` seconds', async () => {
    const l = new AuthFailureLimiter({ points: 3, duration: 60 });
    assert.equal(await l.blockedFor('10.0.0.1'), 0);
    for (let i = 0; i < 2; i++) {
      await l.recordFailure('10.0.0.1');
      assert.equal(await l.blockedFor('10.0.0.1'), 0, `after ${i + 1} failures`);
    }
    await l.recordFailure('10.0.0.1');
    const wait = await l.blockedFor('10.0.0.1');
    assert.ok(wait >= 58 && wait <= 60, `${wait}`);
    assert.equal(await l.blockedFor('10.0.0.2'), 0, 'other addresses are not affected');
  });

  test('concurrent failures are all counted; the block ends with the window', async () => {
    const l = new AuthFailureLimiter({ points: 50, duration: 1 });
    const t0 = 2_000_000;
    await Promise.all(Array.from({ length: 49 }, async () => l.recordFailure('10.0.0.3', t0)));
    assert.equal(l.blockedFor('10.0.0.3', t0), 0);
    l.recordFailure('10.0.0.3', t0);
    assert.equal(l.blockedFor('10.0.0.3', t0 + 999), 1);
    assert.equal(l.blockedFor('10.0.0.3', t0 + 1000), 0);
  });
});

describe('AuthFailureLimiter (per process, per address)', () => {
  test('tryRecordFailure counts exactly `points` failures per window, then answers the seconds left', () => {
    const l = new AuthFailureLimiter({ points: 3, duration: 60 });
    const t0 = 1_000_000;
    assert.deepEqual(
      [0, 1, 2, 3, 4].map(() => l.tryRecordFailure('a', t0)),
      [0, 0, 0, 60, 60],
    );
    assert.equal(l.tryRecordFailure('a', t0 + 30_500), 30, 'rounded up');
    assert.equal(l.tryRecordFailure('b', t0), 0, 'another address has its own budget');
    assert.equal(l.tryRecordFailure('a', t0 + 60_000), 0, 'a new window starts from zero');
  });

  test('blockedFor reads without counting; refused attempts counted nothing', () => {
    const l = new AuthFailureLimiter({ points: 2, duration: 10 });
    assert.equal(l.blockedFor('a', 0), 0);
    assert.equal(l.tryRecordFailure('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 0, 'reading twice counts nothing');
    assert.equal(l.tryRecordFailure('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 10);
    for (let i = 0; i < 5; i++) assert.equal(l.tryRecordFailure('a', 1000), 9);
    assert.equal(l.blockedFor('a', 10_000), 0, 'the window is over');
    assert.equal(l.tryRecordFailure('a', 10_000), 0);
    assert.equal(l.tryRecordFailure('a', 10_000), 0, 'refused attempts did not carry over');
  });

  test('recordFailure counts whatever the budget', () => {
    const l = new AuthFailureLimiter({ points: 1, duration: 60 });
    l.recordFailure('a', 0);
    l.recordFailure('a', 0);
    assert.equal(l.blockedFor('a', 0), 60);
  });

  test('an address that keeps failing is not evicted by a flood of other addresses', () => {
    const l = new AuthFailureLimiter({ points: 1, duration: 60, maxAddresses: 100 });
    assert.equal(l.tryRecordFailure('attacker', 0), 0);
    for (let i = 0; i < 1000; i++) {
      l.tryRecordFailure(`other-${i}`, 0);
      assert.ok(l.tryRecordFailure('attacker', 0) > 0, `attacker unblocked after ${i} other addresses`);
    }
  });

  test('invalid options throw', () => {
    assert.throws(() => new AuthFailureLimiter({ points: 0, duration: 60 }), /points/);
    assert.throws(() => new AuthFailureLimiter({ points: 1, duration: 0 }), /duration/);
  });
});

// Without Redis the windows are counted in memory, with the limiter's clock: exact times, no waits.
describe('TierRateLimiter without Redis: several windows and the reported one', () => {
  const T0 = 5_000_000;
  function memory(tiers: ConstructorParameters<typeof TierRateLimiter>[0]['tiers'] = [TIER]) {
    const clock = { t: T0 };
    const l = new TierRateLimiter({ tiers, keyPrefix: 'm:', failurePolicy: 'closed', now: () => clock.t });
    return { l, clock };
  }
  /** The reported window, as the RateLimit-* headers show it. */
  const shown = (d: RateDecision) => [d.allowed, d.limit, d.remaining, d.resetSeconds];

  test('a tier given as `windows` counts each: the shortest binds first, then the longest', async () => {
    const { l, clock } = memory([
      {
        name: 'multi',
        windows: [
          { points: 2, duration: 1 },
          { points: 3, duration: 60 },
        ],
      },
    ]);
    const d1 = await l.consume('acme', 'multi');
    assert.deepEqual(shown(d1), [true, 2, 1, 1]);
    assert.deepEqual(
      d1.windows.map((w) => [w.points, w.duration, w.owner, w.remaining, w.resetSeconds]),
      [
        [2, 1, 'company', 1, 1],
        [3, 60, 'company', 2, 60],
      ],
    );
    assert.deepEqual(shown(await l.consume('acme', 'multi')), [true, 2, 0, 1]);
    const third = await l.consume('acme', 'multi');
    assert.deepEqual(shown(third), [false, 2, 0, 1], 'refused by the 1 s window');
    assert.equal(third.windows[1]!.remaining, 1, 'the refusal took nothing from the 60 s window');
    clock.t += 1000; // the 1 s window starts again
    assert.deepEqual(shown(await l.consume('acme', 'multi')), [true, 3, 0, 59]);
    const fifth = await l.consume('acme', 'multi');
    assert.deepEqual(shown(fifth), [false, 3, 0, 59], 'refused by the 60 s window');
    assert.equal(fifth.windows[0]!.remaining, 1, 'the 1 s window still had room');
    assert.equal(fifth.source, 'primary');
  });

  test('the reported window is the one with the fewest left, wherever it is in the list', async () => {
    const { l } = memory();
    const a = await l.consume('a', TIER.name, {
      companyLimits: [
        { points: 10, duration: 60 },
        { points: 2, duration: 1 },
      ],
    });
    assert.deepEqual(shown(a), [true, 2, 1, 1]);
    const b = await l.consume('b', TIER.name, {
      companyLimits: [
        { points: 2, duration: 1 },
        { points: 10, duration: 60 },
      ],
    });
    assert.deepEqual(shown(b), [true, 2, 1, 1], 'not the one that resets last while it has more left');
  });

  test('of windows with as many left, the one that resets last, wherever it is in the list', async () => {
    const { l } = memory();
    const short = { points: 5, duration: 1 };
    const long = { points: 5, duration: 60 };
    assert.deepEqual(shown(await l.consume('c', TIER.name, { companyLimits: [short, long] })), [
      true,
      5,
      4,
      60,
    ]);
    assert.deepEqual(shown(await l.consume('d', TIER.name, { companyLimits: [long, short] })), [
      true,
      5,
      4,
      60,
    ]);
  });

  test('of windows with as many left and the same reset, the first (the company before the key)', async () => {
    const { l } = memory();
    const company = { companyLimits: [{ points: 10, duration: 60 }] };
    // Another key spends 4 of the company's 10; then key k1 (own limit 6) is at 5 left in both.
    for (let i = 0; i < 4; i++) await l.consume('e', TIER.name, { ...company, keyId: 'k0' });
    const d = await l.consume('e', TIER.name, {
      ...company,
      keyId: 'k1',
      keyLimits: [{ points: 6, duration: 60 }],
    });
    assert.deepEqual(
      d.windows.map((w) => [w.owner, w.points, w.remaining, w.resetSeconds]),
      [
        ['company', 10, 5, 60],
        ['key', 6, 5, 60],
      ],
    );
    assert.deepEqual(shown(d), [true, 10, 5, 60]);
  });

  test("a key's own windows are counted per key and per company; a refusal by the key reports it", async () => {
    const { l } = memory();
    const own = (keyId: string) => ({
      companyLimits: [{ points: 100, duration: 60 }],
      keyId,
      keyLimits: [{ points: 1, duration: 30 }],
    });
    assert.equal((await l.consume('f', TIER.name, own('k1'))).allowed, true);
    assert.equal((await l.consume('f', TIER.name, own('k2'))).allowed, true, 'k2 has its own window');
    assert.equal((await l.consume('g', TIER.name, own('k1'))).allowed, true, "another company's k1 too");
    const refused = await l.consume('f', TIER.name, own('k1'));
    assert.deepEqual(shown(refused), [false, 1, 0, 30]);
    assert.deepEqual(
      refused.windows.map((w) => [w.owner, w.remaining]),
      [
        ['company', 98],
        ['key', 0],
      ],
    );
    // Key limits without a key id (or an empty list) add no window.
    const noKey = await l.consume('h', TIER.name, { keyLimits: [{ points: 1, duration: 30 }] });
    assert.deepEqual(
      noKey.windows.map((w) => w.owner),
      ['company'],
    );
  });

  test('close() without Redis has nothing to give back and resolves', async () => {
    await memory().l.close();
  });
});

describe('TierRateLimiter with Redis: leases per subject, close, insurance details', () => {
  const TEN = { name: 'ten', points: 10, duration: 60 };
  const leased = (extra: Partial<ConstructorParameters<typeof TierRateLimiter>[0]> = {}) =>
    new TierRateLimiter({
      tiers: [TEN],
      redis: client,
      keyPrefix: 'ng-test:',
      failurePolicy: 'closed',
      lease: { maxSize: 5, divisor: 1 },
      ...extra,
    });
  const single = () =>
    new TierRateLimiter({ tiers: [TEN], redis: client, keyPrefix: 'ng-test:', failurePolicy: 'closed' });
  /** An insurance limiter of TIER on a clock the test moves: stays end by it, not by waiting. */
  function insuranceOnClock() {
    const clock = { t: performance.now() };
    const l = new TierRateLimiter({
      tiers: [TIER],
      redis: client,
      keyPrefix: 'ng-test:',
      failurePolicy: 'insurance',
      instances: 2,
      now: () => clock.t,
    });
    return { l, clock };
  }

  test('close() gives the unused lease back to Redis', async () => {
    const a = leased();
    const co = fresh();
    // A lease of 5 is taken from Redis; one is spent, 4 are this instance's.
    assert.deepEqual(shown2(await a.consume(co, TEN.name)), [true, 9]);
    await a.close();
    // Another instance (one point per call) now finds 1 + its own used, not 5 + 1.
    assert.deepEqual(shown2(await single().consume(co, TEN.name)), [true, 8]);
  });

  test("keys without their own limits spend the company's one lease", async () => {
    const a = leased();
    const co = fresh();
    assert.deepEqual(shown2(await a.consume(co, TEN.name, { keyId: 'k1' })), [true, 9]);
    assert.deepEqual(shown2(await a.consume(co, TEN.name, { keyId: 'k2' })), [true, 8]);
    assert.deepEqual(shown2(await a.consume(co, TEN.name)), [true, 7]);
    // Redis gave out one lease of 5: another instance finds 5 left.
    assert.deepEqual(shown2(await single().consume(co, TEN.name)), [true, 4]);
  });

  test("keys with their own limits each hold their own lease; one key does not drop the other's", async () => {
    const a = leased();
    const co = fresh();
    const own = (keyId: string) => ({ keyId, keyLimits: [{ points: 100, duration: 60 }] });
    const ds: RateDecision[] = [];
    // k1 and k2 take a lease of 5 each (the company's 10), then alternate.
    for (let i = 0; i < 10; i++) ds.push(await a.consume(co, TEN.name, own(i % 2 ? 'k2' : 'k1')));
    assert.ok(allowed(ds).every(Boolean), JSON.stringify(allowed(ds)));
    assert.equal((await a.consume(co, TEN.name, own('k1'))).allowed, false, 'the company has used its 10');
    assert.equal(await client.exists(`ng-test:rl:{${co}}:k:k1:60`), 1, "the key's counter in Redis");
  });

  test('insurance: a request Redis refused does not count against the share', async () => {
    const l = new TierRateLimiter({
      tiers: [TIER, { name: 'four', points: 4, duration: 60 }],
      redis: client,
      keyPrefix: 'ng-test:',
      failurePolicy: 'insurance',
    });
    const co = fresh();
    const own = { keyId: 'k', keyLimits: [{ points: 1, duration: 60 }] };
    assert.equal((await l.consume(co, 'four', own)).allowed, true);
    const refused = await l.consume(co, 'four', own);
    assert.deepEqual([refused.allowed, refused.source], [false, 'primary'], 'the key window is full');
    redis.pause();
    let ds: RateDecision[];
    try {
      ds = [];
      for (let i = 0; i < 4; i++) ds.push(await l.consume(co, 'four'));
    } finally {
      redis.resume();
    }
    // The company's share is 4; Redis admitted 1 of them: 3 left, the refused request took none.
    assert.deepEqual(allowed(ds), [true, true, true, false]);
    assert.deepEqual(sources(ds), ['insurance']);
    await primaryAgain(l);
  });

  test('insurance: a subject stays on it until Redis acknowledges its admissions, or its shortest window ends', async () => {
    const { l, clock } = insuranceOnClock();
    const co = fresh();
    const windows = { companyLimits: [{ points: 50, duration: 60 }] };
    // Another company, whose share (1 of 2 in 2 s) Redis has already admitted: nothing to write back.
    const full = `${co}-full`;
    const two = { companyLimits: [{ points: 2, duration: 2 }] };
    assert.equal((await l.consume(full, TIER.name, two)).source, 'primary');
    // Gone, then back empty (not hung: no call runs late).
    await redis.kill();
    try {
      assert.deepEqual(shown2(await l.consume(co, TIER.name, windows)), [true, 24]);
      assert.deepEqual(shown2(await l.consume(full, TIER.name, two)), [false, 0]);
    } finally {
      await redis.restart();
    }
    // co's admission is written as soon as Redis answers; then co asks Redis again, at once.
    await counterUntil(`ng-test:rl:{${co}}:c60`, (n) => n === 1);
    assert.equal((await l.consume(co, TIER.name, windows)).source, 'primary');
    // The other stays on the insurance (Redis is not asked) until its window ends.
    assert.equal((await l.consume(full, TIER.name, two)).source, 'insurance');
    assert.equal(await client.exists(`ng-test:rl:{${full}}:c2`), 0);
    clock.t += 2000;
    assert.deepEqual(
      [(await l.consume(full, TIER.name, two)).source, await client.exists(`ng-test:rl:{${full}}:c2`)],
      ['primary', 1],
    );
  });
});

/** allowed and remaining. */
function shown2(d: RateDecision): [boolean, number] {
  return [d.allowed, d.remaining];
}

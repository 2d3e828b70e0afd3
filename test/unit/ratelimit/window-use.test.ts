import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GatewayConfig } from '../../../src/config/schema.js';
import type { EventBus } from '../../../src/events/bus.js';
import { createQuotaWatcher } from '../../../src/events/quota.js';
import { TierRateLimiter } from '../../../src/ratelimit/tier-limiter.js';
import type { WindowUse } from '../../../src/ratelimit/window-use.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../../src/redis/connection.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// quota.threshold must cost nothing per request: the limiter reports a window's count when it
// learns one (a lease take: a Redis call it makes anyway), never per request, and adds no command.

let redis: TestRedis;
let client: RedisClient;
before(async () => {
  redis = await startRedis();
  client = createRedisClient({
    url: redis.url,
    commandTimeoutMs: 1000,
    connectTimeoutMs: 1000,
  } as GatewayConfig['store']['redis']);
  await waitForReady(client, 2000);
});
after(async () => {
  client?.disconnect();
  await redis?.stop();
});

const DAILY = {
  name: 'daily',
  windows: [
    { points: 100_000, duration: 86_400 },
    { points: 1000, duration: 60 },
  ],
};

function limiter(onWindowUse?: (u: WindowUse) => void, lease = { maxSize: 50, divisor: 1 }, tiers = [DAILY]) {
  return new TierRateLimiter({
    tiers,
    redis: client,
    keyPrefix: 'ng-wu:',
    failurePolicy: 'insurance',
    lease,
    ...(onWindowUse && { onWindowUse }),
  });
}

/** Scripts Redis ran so far (EVALSHA and EVAL calls from clients: the round trips of the limiter). */
async function commands(): Promise<number> {
  const info = await client.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

async function run(l: TierRateLimiter, company: string, n: number, keyId?: string): Promise<number> {
  const before = await commands();
  for (let i = 0; i < n; i++) assert.ok((await l.consume(company, 'daily', keyId ? { keyId } : {})).allowed);
  return (await commands()) - before;
}

describe('TierRateLimiter onWindowUse (the quota.threshold hook)', () => {
  test('reported once per lease take, for windows of a day or longer only, with no extra Redis command', async () => {
    const uses: WindowUse[] = [];
    const withHook = await run(
      limiter((u) => uses.push(u)),
      'co-hook',
      300,
    );
    const without = await run(limiter(), 'co-plain', 300);
    assert.equal(withHook, without, 'the same Redis commands with and without the hook');
    assert.equal(withHook, 6, '300 requests in leases of 50: 6 round trips');
    assert.equal(uses.length, 6, 'one report per take, not per request');
    assert.deepEqual(
      uses.map((u) => [u.duration, u.usedBefore, u.used, u.keyId]),
      [0, 50, 100, 150, 200, 250].map((b) => [86_400, b, b + 50, null]),
    );
    assert.ok(uses.every((u) => u.companyId === 'co-hook' && u.points === 100_000 && u.endsAt > Date.now()));
  });

  test("a key's own day window is reported with its key id; the company's with null", async () => {
    const uses: WindowUse[] = [];
    const l = new TierRateLimiter({
      tiers: [{ name: 'daily', windows: [{ points: 100, duration: 86_400 }] }],
      redis: client,
      keyPrefix: 'ng-wu:',
      failurePolicy: 'insurance',
      lease: { maxSize: 10, divisor: 1 },
      onWindowUse: (u) => uses.push(u),
    });
    await l.consume('co-key', 'daily', { keyId: 'key_1', keyLimits: [{ points: 50, duration: 172_800 }] });
    assert.deepEqual(
      uses.map((u) => [u.keyId, u.duration, u.used]).sort(),
      [
        [null, 86_400, 10],
        ['key_1', 172_800, 10],
      ].sort(),
    );
  });

  test('two instances, a 10-per-day window: the deployment crosses 80 % and 100 % once each', async () => {
    const published: number[] = [];
    const publish = ((_t: unknown, data: { threshold: number }) => {
      published.push(data.threshold);
      return Promise.resolve('queued');
    }) as unknown as EventBus['publish'];
    const watch = createQuotaWatcher({ publish });
    const tiers = [{ name: 'daily', windows: [{ points: 10, duration: 86_400 }] }];
    const [a, b] = [
      limiter(watch, { maxSize: 100, divisor: 64 }, tiers),
      limiter(watch, { maxSize: 100, divisor: 64 }, tiers),
    ];
    const answers = [];
    for (let i = 0; i < 14; i++) answers.push((await (i % 2 ? b : a).consume('co-two', 'daily')).allowed);
    assert.equal(answers.filter(Boolean).length, 10);
    assert.deepEqual(published, [80, 100]);
  });

  test('without Redis: counted in memory, reported per request only for day-long windows', async () => {
    const uses: WindowUse[] = [];
    const l = new TierRateLimiter({
      tiers: [DAILY, { name: 'minute', points: 100, duration: 60 }],
      keyPrefix: 'ng-wu:',
      failurePolicy: 'insurance',
      onWindowUse: (u) => uses.push(u),
    });
    for (let i = 0; i < 3; i++) await l.consume('co-mem', 'minute');
    assert.equal(uses.length, 0, 'a minute window is never reported');
    for (let i = 0; i < 3; i++) await l.consume('co-mem', 'daily');
    assert.deepEqual(
      uses.map((u) => [u.duration, u.usedBefore, u.used]),
      [
        [86_400, 0, 1],
        [86_400, 1, 2],
        [86_400, 2, 3],
      ],
    );
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// Invariant 6 (limits hold, through Redis failures): two real gateways share one store (in memory,
// so keys keep working) and count limits in one real redis-server, which the test hangs with
// SIGSTOP so that every limiter call times out. Whatever the fallback admits, the gateway as a whole
// must not forward more than the limit in a window: not while Redis hangs, not once it is back.

const POINTS = 20;
const COMMAND_TIMEOUT_MS = 150;

describe('insurance policy: two instances, Redis timing out', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let gws: TestGateway[] = [];
  let seq = 0;

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    const store = new MemoryKeyStore();
    const config: ConfigInput = {
      store: { type: 'memory', redis: { commandTimeoutMs: COMMAND_TIMEOUT_MS, connectTimeoutMs: 500 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: {
        redisUrl: redis.url,
        failurePolicy: 'insurance',
        instances: 2,
        tiers: [{ name: 'standard', points: POINTS, duration: 60 }],
      },
    };
    gws = [await startTestGateway(config, { store }), await startTestGateway(config, { store })];
  });
  after(async () => {
    redis?.resume();
    await Promise.all(gws.map((g) => g.close()));
    await upstream?.close();
    await redis?.stop();
  });

  /** A company of its own (a fresh window in Redis and in each insurance) and its key. */
  async function company(): Promise<string> {
    return (await createCompanyAndKey(gws[0]!.gw.service, `ins-${++seq}`)).key;
  }

  /** `n` concurrent requests spread over both gateways; the statuses, in order. */
  async function burst(key: string, n: number): Promise<number[]> {
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        send(gws[i % 2]!.port, `/notify/v1/send?i=${i}`, { headers: { 'X-API-Key': key } }),
      ),
    );
    return replies.map((r) => r.status);
  }

  const ok = (statuses: number[]) => statuses.filter((s) => s === 200).length;

  /**
   * After the outage: one request to each gateway in turn, then `n` concurrent ones (what each
   * instance's insurance admitted is written to Redis before Redis admits more).
   */
  async function afterOutage(key: string, n: number): Promise<number[]> {
    const first: number[] = [];
    for (const g of gws)
      first.push((await send(g.port, '/notify/v1/first', { headers: { 'X-API-Key': key } })).status);
    return [...first, ...(await burst(key, n))];
  }

  /** Both gateways' limiter connections are ready again (`/readyz` checks them). */
  async function redisBack(): Promise<void> {
    for (const g of gws) {
      await eventually(async () => (await send(g.port, '/readyz')).status === 200, 5000, 50);
    }
  }

  test('a window that starts during the outage: 3× the limit concurrently → at most the limit forwarded', async () => {
    const key = await company();
    redis.pause();
    let statuses: number[];
    try {
      statuses = await burst(key, 3 * POINTS);
    } finally {
      redis.resume();
    }
    assert.ok(ok(statuses) <= POINTS, `${ok(statuses)} forwarded during the outage, limit ${POINTS}`);
    assert.ok(ok(statuses) >= POINTS - 1, `insurance refused too much: ${ok(statuses)}`);
    assert.deepEqual([...new Set(statuses)].sort(), [200, 429]);
    // Redis back in the same window: what the insurance admitted is not admitted a second time.
    await redisBack();
    const after = await afterOutage(key, 2 * POINTS);
    assert.ok(
      ok(statuses) + ok(after) <= POINTS,
      `${ok(statuses)} during + ${ok(after)} after the outage > limit ${POINTS}`,
    );
  });

  test('an outage in the middle of a window: Redis admissions + insurance ≤ the limit', async () => {
    const key = await company();
    const first = await burst(key, POINTS / 2);
    assert.equal(ok(first), POINTS / 2);
    redis.pause();
    let during: number[];
    try {
      during = await burst(key, 3 * POINTS);
    } finally {
      redis.resume();
    }
    const total = ok(first) + ok(during);
    assert.ok(total <= POINTS, `${ok(first)} before + ${ok(during)} during the outage > limit ${POINTS}`);
    assert.ok(total >= POINTS - 1, `under-admission beyond the documented bound: ${total}`);
    await redisBack();
    const after = await afterOutage(key, 2 * POINTS);
    assert.ok(total + ok(after) <= POINTS, `${total} + ${ok(after)} after the outage > limit ${POINTS}`);
  });
});

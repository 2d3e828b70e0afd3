import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, sendFrom, type Reply } from '../helpers/http.js';
import { seriesValue } from '../helpers/step-server.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * INVARIANTS #7: the failed-authentication budget is exact per address, also while store lookups
 * are in flight. Every burst comes from its own loopback source address.
 */

const BUDGET = 30;

function count(answers: Reply[], status: number): number {
  return answers.filter((a) => a.status === status).length;
}

const AUTH_LIMITED =
  '{"error":"Too Many Requests","details":"Too many failed authentications from this address; retry after the delay in Retry-After"}';

describe('failed-authentication budget under concurrency (Redis store)', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let valid: string;

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    t = await startTestGateway({
      // Generous command timeout: lookups wait out the pause below instead of failing with 503.
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 5000 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: {
        tiers: [{ name: 'standard', points: 100_000, duration: 60 }],
        authFailures: { points: BUDGET, duration: 60 },
      },
      log: { level: 'warn' },
    });
    assert.ok((await t.gw.service.createCompany({ id: 'acme', tier: 'standard' })).ok);
    const k = await t.gw.service.createKey('acme', {});
    assert.ok(k.ok);
    valid = k.value.key;
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('300 concurrent unknown keys from one address: exactly the budget answers 401, the rest 429', async () => {
    // Redis hangs (SIGSTOP) while the burst arrives, so every lookup is in flight at once; it
    // resumes once each request is either waiting on its lookup or answered.
    let answered = 0;
    redis.pause();
    const burst = Promise.all(
      Array.from({ length: 300 }, () =>
        sendFrom('127.0.0.11', t.port, '/notify/v1/x', { 'X-API-Key': generateApiKey('live') }).finally(
          () => answered++,
        ),
      ),
    );
    try {
      await eventually(async () => (await seriesValue(t.gw.metrics.inflight)) + answered >= 300, 10_000);
    } finally {
      redis.resume();
    }
    const answers = await burst;
    assert.equal(count(answers, 401), BUDGET, `401s: ${count(answers, 401)}`);
    assert.equal(count(answers, 429), 300 - BUDGET);
    for (const a of answers.filter((x) => x.status === 429)) {
      assert.equal(a.body, AUTH_LIMITED);
      const retryAfter = Number(a.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${a.headers['retry-after']}`);
    }
    // The address is blocked: a valid key right after is refused too, and nothing was forwarded.
    const after = await sendFrom('127.0.0.11', t.port, '/notify/v1/x', { 'X-API-Key': valid });
    assert.equal(after.status, 429);
    assert.equal(after.body, AUTH_LIMITED);
    assert.equal(upstream.received.length, 0);
    // Another address is not affected.
    assert.equal((await sendFrom('127.0.0.12', t.port, '/notify/v1/x', { 'X-API-Key': valid })).status, 200);
  });

  test('the missing-key and key-in-URL paths hold the same exact budget under concurrency', async () => {
    const forwarded = upstream.received.length;
    const missing = await Promise.all(
      Array.from({ length: 100 }, () => sendFrom('127.0.0.13', t.port, '/notify/v1/x')),
    );
    assert.equal(count(missing, 401), BUDGET, `missing-key 401s: ${count(missing, 401)}`);
    assert.equal(count(missing, 429), 100 - BUDGET);
    const inUrl = await Promise.all(
      Array.from({ length: 100 }, () =>
        sendFrom('127.0.0.14', t.port, `/notify/v1/x?api_key=${generateApiKey('live')}`),
      ),
    );
    assert.equal(count(inUrl, 401), BUDGET, `key-in-URL 401s: ${count(inUrl, 401)}`);
    assert.equal(count(inUrl, 429), 100 - BUDGET);
    assert.ok(inUrl.filter((a) => a.status === 429).every((a) => Number(a.headers['retry-after']) >= 1));
    assert.equal(upstream.received.length, forwarded, 'nothing was forwarded');
  });

  test('a burst of valid requests from one address (a sidecar’s only peer) is never refused, lookups in flight or not', async () => {
    assert.ok((await t.gw.service.createCompany({ id: 'burst', tier: 'standard' })).ok);
    const k = await t.gw.service.createKey('burst', {});
    assert.ok(k.ok);
    // A key this gateway has not cached yet, and Redis hanging: every request waits on its lookup.
    let answered = 0;
    const forwarded = upstream.received.length;
    redis.pause();
    const burst = Promise.all(
      Array.from({ length: 4 * BUDGET }, () =>
        sendFrom('127.0.0.16', t.port, '/notify/v1/x', { 'X-API-Key': k.value.key }).finally(
          () => answered++,
        ),
      ),
    );
    try {
      await eventually(
        async () => (await seriesValue(t.gw.metrics.inflight)) + answered >= 4 * BUDGET,
        10_000,
      );
    } finally {
      redis.resume();
    }
    const answers = await burst;
    assert.equal(count(answers, 200), 4 * BUDGET, JSON.stringify(answers.filter((a) => a.status !== 200)[0]));
    assert.equal(upstream.received.length, forwarded + 4 * BUDGET);
  });

  test('valid keys interleaved with unknown ones do not consume the budget', async () => {
    const from = '127.0.0.15';
    // Concurrently: 20 valid and 10 unknown (30 lookups in flight, within the budget).
    const mixed = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        sendFrom(from, t.port, '/notify/v1/x', { 'X-API-Key': i % 3 === 0 ? generateApiKey('live') : valid }),
      ),
    );
    assert.equal(count(mixed, 200), 20);
    assert.equal(count(mixed, 401), 10);
    // Sequentially interleaved: valid, unknown, valid, ... until the budget is used.
    for (let i = 0; i < BUDGET - 10; i++) {
      assert.equal((await sendFrom(from, t.port, '/notify/v1/x', { 'X-API-Key': valid })).status, 200);
      const bad = await sendFrom(from, t.port, '/notify/v1/x', { 'X-API-Key': generateApiKey('live') });
      assert.equal(bad.status, 401, `unknown key #${11 + i}`);
    }
    // Exactly the budget of failures is used now: the next unknown key is refused.
    const over = await sendFrom(from, t.port, '/notify/v1/x', { 'X-API-Key': generateApiKey('live') });
    assert.equal(over.status, 429);
  });
});

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createRateLimit } from '../../../../src/http/steps/rate-limit.js';
import { createMetrics } from '../../../../src/observability/metrics.js';
import { TierRateLimiter, type RateDecision } from '../../../../src/ratelimit/tier-limiter.js';
import { send } from '../../../helpers/http.js';
import type { RequestState } from '../../../../src/request-state.js';
import {
  serveStep,
  seriesValue,
  testCompany,
  testKey,
  type StepServer,
} from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

function memoryLimiter(points: number) {
  return new TierRateLimiter({
    tiers: [{ name: 'free', points, duration: 60 }],
    keyPrefix: 'unit:',
    failurePolicy: 'insurance',
  });
}

async function start(
  limiter: Pick<TierRateLimiter, 'consume'>,
  companyLabel = false,
  state: Partial<RequestState> = { company: testCompany() },
) {
  const metrics = createMetrics({ processMetrics: false });
  const srv = await serveStep(createRateLimit({ limiter, metrics, companyLabel }), { state });
  servers.push(srv);
  return { srv, metrics };
}

describe('rate limit step', () => {
  test('within the limit: RateLimit-* headers and the request goes on', async () => {
    const { srv } = await start(memoryLimiter(2));
    const first = await send(srv.port, '/a');
    assert.equal(first.status, 200);
    assert.equal(first.headers['ratelimit-limit'], '2');
    assert.equal(first.headers['ratelimit-remaining'], '1');
    assert.ok(
      Number(first.headers['ratelimit-reset']) >= 1 && Number(first.headers['ratelimit-reset']) <= 60,
    );
    assert.equal(first.headers['retry-after'], undefined);
    assert.equal(first.headers['ratelimit-policy'], '2;w=60');
    assert.equal((await send(srv.port, '/a')).headers['ratelimit-remaining'], '0');
    assert.equal(srv.reached.length, 2);
  });

  test('over the limit: 429 with Retry-After, counted by tier without the company', async () => {
    const { srv, metrics } = await start(memoryLimiter(1));
    await send(srv.port, '/a');
    const r = await send(srv.port, '/a');
    assert.equal(r.status, 429);
    assert.deepEqual(r.json, {
      error: 'Too Many Requests',
      details: 'Rate limit exceeded; retry after the delay in Retry-After',
    });
    assert.equal(r.headers['ratelimit-remaining'], '0');
    assert.equal(r.headers['retry-after'], r.headers['ratelimit-reset']);
    assert.equal(srv.reached.length, 1);
    assert.equal(srv.finished[1]?.error, 'RATE_LIMITED');
    assert.equal(await seriesValue(metrics.rateLimited, { tier: 'free', company: '' }), 1);
  });

  test('companyLabel: the 429 is counted with the company id', async () => {
    const { srv, metrics } = await start(memoryLimiter(1), true);
    await send(srv.port, '/a');
    await send(srv.port, '/a');
    assert.equal(await seriesValue(metrics.rateLimited, { tier: 'free', company: 'acme' }), 1);
  });

  test('several windows: the one closest to exhaustion is reported, the policy lists all, a 429 waits for the refusing one', async () => {
    const limiter = new TierRateLimiter({
      tiers: [
        {
          name: 'free',
          windows: [
            { points: 3, duration: 1 },
            { points: 4, duration: 60 },
          ],
        },
      ],
      keyPrefix: 'unit:',
      failurePolicy: 'insurance',
    });
    const { srv } = await start(limiter);
    const first = await send(srv.port, '/a');
    assert.equal(first.headers['ratelimit-policy'], '3;w=1, 4;w=60');
    assert.equal(first.headers['ratelimit-limit'], '3'); // 2 left of 3 vs 3 left of 4
    assert.equal(first.headers['ratelimit-remaining'], '2');
    await send(srv.port, '/a');
    await send(srv.port, '/a');
    const fourth = await send(srv.port, '/a'); // the 1 s window is full
    assert.equal(fourth.status, 429);
    assert.equal(fourth.headers['ratelimit-limit'], '3');
    assert.equal(fourth.headers['retry-after'], '1');
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await send(srv.port, '/a')).status, 200); // the 60 s window: 4 of 4 (the refusal took none)
    const sixth = await send(srv.port, '/a');
    assert.equal(sixth.status, 429);
    assert.equal(sixth.headers['ratelimit-limit'], '4');
    assert.ok(Number(sixth.headers['retry-after']) > 50, `Retry-After ${sixth.headers['retry-after']}`);
    assert.equal(srv.reached.length, 4);
  });

  test("a company's own windows replace its tier's; a key's own windows apply on top", async () => {
    const company = testCompany({ limits: [{ points: 5, duration: 10 }] });
    const key = testKey({ limits: [{ points: 2, duration: 60 }] });
    const { srv } = await start(memoryLimiter(100), false, { company, key });
    const first = await send(srv.port, '/a');
    assert.equal(first.headers['ratelimit-policy'], '5;w=10, 2;w=60');
    assert.equal(first.headers['ratelimit-limit'], '2');
    assert.equal((await send(srv.port, '/a')).status, 200);
    assert.equal((await send(srv.port, '/a')).status, 429);
    // Another key of the same company, without windows of its own: only the company's.
    const other = await start(memoryLimiter(100), false, { company, key: testKey({ id: 'k2' }) });
    assert.equal((await send(other.srv.port, '/a')).headers['ratelimit-policy'], '5;w=10');
  });

  test('a decision by the failure policy is counted as a fallback', async () => {
    const decision: RateDecision = {
      allowed: true,
      limit: 5,
      remaining: 4,
      resetSeconds: 60,
      source: 'insurance',
      windows: [{ points: 5, duration: 60, owner: 'company', remaining: 4, resetSeconds: 60 }],
    };
    const { srv, metrics } = await start({ consume: async () => decision });
    assert.equal((await send(srv.port, '/a')).status, 200);
    assert.equal(await seriesValue(metrics.limiterFallback, { policy: 'insurance' }), 1);
  });

  test('a limiter that rejects is passed on as the error', async () => {
    const { srv } = await start({
      consume: async () => {
        throw new Error('limiter down');
      },
    });
    assert.equal((await send(srv.port, '/a')).status, 500);
    assert.equal((srv.errors[0] as Error).message, 'limiter down');
  });

  test('invalid options throw when the step is built', () => {
    const metrics = createMetrics({ processMetrics: false });
    assert.throws(
      () => createRateLimit({ limiter: {} as never, metrics, companyLabel: false }),
      /limiter.consume must be a function/,
    );
  });
});

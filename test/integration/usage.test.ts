import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { USAGE_FIELDS, type UsageCounts } from '../../src/usage/counts.js';
import { adminApi, createCompanyAndKey } from '../helpers/admin.js';
import { runCli } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** Sums the buckets of a usage answer. */
function total(buckets: Record<string, unknown>[]): UsageCounts {
  const sum = Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0])) as UsageCounts;
  for (const b of buckets) for (const f of USAGE_FIELDS) sum[f] += b[f] as number;
  return sum;
}

/** What the clients saw, as the usage counters must report it (401: the key's material in the URL). */
function expectedFrom(statuses: number[]): UsageCounts {
  const admitted = statuses.filter((s) => s !== 429 && s !== 401);
  return {
    allowed: admitted.length,
    rateLimited: statuses.filter((s) => s === 429).length,
    scopeDenied: 0,
    refused: statuses.filter((s) => s === 401).length,
    upstream2xx: admitted.filter((s) => s >= 200 && s < 300).length,
    upstream4xx: admitted.filter((s) => s >= 400 && s < 500).length,
    upstream5xx: admitted.filter((s) => s >= 500).length,
  };
}

describe('usage per company: two instances on one Redis', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let a: TestGateway;
  let b: TestGateway;
  let acmeKey: string;
  let betaKey: string;
  const statuses: number[] = [];

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    upstream.handle((req, res) => {
      res.statusCode = req.url?.endsWith('/missing') ? 404 : req.url?.endsWith('/broken') ? 500 : 200;
      res.end('{}');
    });
    const cfg = {
      store: { type: 'redis' as const, redis: { url: redis.url } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: { tiers: [...DEFAULT_TIERS, { name: 'dozen', points: 12, duration: 3600 }] },
      // Flushes only when the test asks (or on shutdown), so "before the flush" is observable.
      usage: { flushIntervalMs: 60_000 },
    };
    a = await startTestGateway(cfg);
    b = await startTestGateway(cfg);
    acmeKey = (await createCompanyAndKey(a.gw.service, 'acme', { tier: 'dozen' })).key;
    betaKey = (await createCompanyAndKey(a.gw.service, 'beta', { tier: 'standard' })).key;
  });
  after(async () => {
    await a.close();
    await b.close();
    await upstream.close();
    await redis.stop();
  });

  const call = async (t: TestGateway, path: string, key: string): Promise<number> => {
    const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1${path}`, { headers: { 'X-API-Key': key } });
    await res.arrayBuffer();
    return res.status;
  };

  test('known traffic on two instances: after the flush the counts are exact', async () => {
    for (let i = 0; i < 4; i++) statuses.push(await call(a, '/ok', acmeKey));
    for (let i = 0; i < 2; i++) statuses.push(await call(a, '/missing', acmeKey));
    statuses.push(await call(b, '/broken', acmeKey));
    // 20 more at once over both instances: the 12-a-day tier refuses exactly the rest.
    statuses.push(
      ...(await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? a : b, '/ok', acmeKey)))),
    );
    assert.equal(await call(b, '/ok', betaKey), 200);
    assert.equal(await call(a, '/ok', 'nk_live_not-a-valid-key'), 401); // no company: counted nowhere
    // Acme's own key's secret in the URL (without its prefix, which the URL guard would see before
    // authentication): refused right after authentication (401 KEY_IN_URL), before any quota. A
    // refusal, never "allowed".
    const secret = acmeKey.slice('nk_live_'.length);
    statuses.push(await call(b, `/x${secret}`, acmeKey));
    assert.equal(statuses.at(-1), 401);
    const want = expectedFrom(statuses);
    assert.equal(want.allowed, 12, JSON.stringify(statuses));
    assert.equal(want.rateLimited, 15);
    assert.equal(want.refused, 1);

    const api = adminApi(a.adminPort);
    const before = await api('GET', '/admin/v1/companies/acme/usage');
    assert.equal(before.status, 200);
    assert.deepEqual(total(before.body.buckets as unknown as Record<string, unknown>[]), total([]));

    await a.gw.usage!.recorder.flush();
    await b.gw.usage!.recorder.flush();
    const hourly = await api('GET', '/admin/v1/companies/acme/usage?granularity=hour');
    assert.equal(hourly.status, 200, hourly.text);
    assert.equal(hourly.body.companyId, 'acme');
    assert.equal(hourly.body.granularity, 'hour');
    assert.equal((hourly.body.buckets as unknown as unknown[]).length, 24);
    assert.deepEqual(total(hourly.body.buckets as unknown as Record<string, unknown>[]), want);
    // Read through the other instance and by day: the same numbers.
    const daily = await adminApi(b.adminPort)('GET', '/admin/v1/companies/acme/usage?granularity=day');
    assert.deepEqual(total(daily.body.buckets as unknown as Record<string, unknown>[]), want);
    const beta = await api('GET', '/admin/v1/companies/beta/usage');
    assert.deepEqual(total(beta.body.buckets as unknown as Record<string, unknown>[]), {
      ...total([]),
      allowed: 1,
      upstream2xx: 1,
    });
  });

  test('a second flush adds nothing; the hash expires after the retention', async () => {
    await a.gw.usage!.recorder.flush();
    const r = await adminApi(a.adminPort)('GET', '/admin/v1/companies/acme/usage');
    assert.deepEqual(total(r.body.buckets as unknown as Record<string, unknown>[]), expectedFrom(statuses));
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('ng:u:acme:*');
      assert.ok(keys.length >= 1 && keys.length <= 2, keys.join());
      const ttl = await client.ttl(keys[0]!);
      assert.ok(ttl > 35 * 86_400 - 60 && ttl <= 35 * 86_400 + 3600, `ttl ${ttl}`);
    } finally {
      client.disconnect();
    }
  });

  test('bad queries: 400 naming the parameter; unknown company 404', async () => {
    const api = adminApi(a.adminPort);
    const cases: [string, RegExp][] = [
      ['granularity=week', /^granularity:/],
      ['from=yesterday', /^from:/],
      ['to=2026-13-01T00:00:00Z', /^to:/],
      ['from=2026-02-02&to=2026-02-01', /^from: must be before to/],
      ['from=2025-01-01&to=2026-01-01&granularity=hour', /^to: the range may cover at most 744 hours/],
      ['from=a&from=b', /^from:/],
    ];
    for (const [q, details] of cases) {
      const r = await api('GET', `/admin/v1/companies/acme/usage?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'Bad Request');
      assert.match(r.body.details as unknown as string, details, q);
    }
    const r = await api('GET', '/admin/v1/companies/nobody/usage');
    assert.equal(r.status, 404);
  });

  test('metrics stay low-cardinality: flushes counted, no company label', async () => {
    const res = await fetch(`http://127.0.0.1:${a.adminPort}/metrics`, {
      headers: { Authorization: `Bearer test-admin-token-0123456789abcdef` },
    });
    const text = await res.text();
    assert.match(text, /gateway_usage_flushes_total\{result="ok"\} [1-9]/);
    assert.doesNotMatch(text, /acme|beta/);
  });

  test('shutdown flushes; the CLI reads the counts (table and --json)', async () => {
    const st = await call(b, '/ok', betaKey);
    assert.equal(st, 200);
    await b.close(); // no explicit flush: close() writes the last counts
    const env = { REDIS_URL: redis.url };
    const json = await runCli(['usage', 'beta', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as { buckets: Record<string, unknown>[] };
    assert.deepEqual(total(report.buckets), { ...total([]), allowed: 2, upstream2xx: 2 });
    const tableRun = await runCli(['usage', 'beta', '--granularity', 'day'], env);
    assert.equal(tableRun.code, 0, tableRun.stderr);
    assert.match(tableRun.stdout, /^start\s+allowed\s+rateLimited\s+scopeDenied\s+refused\s+upstream2xx/);
    const bad = await runCli(['usage', 'beta', '--granularity', 'week'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--granularity: must be one of hour, day/);
  });
});

describe('usage with the memory store: per instance, in process memory', () => {
  test('counted and readable after a flush', async () => {
    const upstream = await startUpstream();
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    });
    try {
      const { key } = await createCompanyAndKey(t.gw.service, 'solo');
      const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/x`, { headers: { 'X-API-Key': key } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.equal(t.gw.usage!.store.kind, 'memory');
      await t.gw.usage!.recorder.flush();
      const r = await adminApi(t.adminPort)('GET', '/admin/v1/companies/solo/usage');
      assert.deepEqual(total(r.body.buckets as unknown as Record<string, unknown>[]), {
        ...total([]),
        allowed: 1,
        upstream2xx: 1,
      });
    } finally {
      await t.close();
      await upstream.close();
    }
  });
});

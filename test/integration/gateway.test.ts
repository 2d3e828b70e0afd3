import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { isoSeconds } from '../../src/time.js';
import { adminApi, createCompanyAndKey } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send, sendRaw } from '../helpers/http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

const INVALID = { error: 'Unauthorized', details: 'Invalid API key' };
const MISSING = { error: 'Unauthorized', details: 'Missing API key' };
const IN_URL = {
  error: 'Unauthorized',
  details: 'API key must be sent in the X-API-Key header, not in the URL',
};
const BODY_LIMIT = 64 * 1024;

/** Counts how many header lines of the upstream request name `name` (any case, `_` as `-`). */
function countHeader(raw: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase().replace(/_/g, '-') === name) n++;
  return n;
}

describe('gateway on Redis: the request path end to end', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let slow: RecordingUpstream;
  let t: TestGateway;
  const keys: Record<string, { id: string; key: string }> = {};
  const allKeys: string[] = [];

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    slow = await startUpstream();
    // Answers long after the route's 300 ms timeout, so "answered at the timeout" has a wide margin.
    slow.handle((_req, res) => void setTimeout(() => res.end('late'), 4000).unref());
    const closedPort = await freePort();
    t = await startTestGateway({
      server: { bodyLimitBytes: BODY_LIMIT },
      store: { type: 'redis', redis: { url: redis.url } },
      routes: [
        { prefix: '/notify/v1', target: upstream.url },
        { prefix: '/down/v1', target: `http://127.0.0.1:${closedPort}` },
        // `.invalid` never resolves (RFC 2606).
        { prefix: '/nohost/v1', target: 'http://backend.invalid:9090' },
        { prefix: '/slow/v1', target: slow.url, timeoutMs: 300 },
      ],
      rateLimit: {
        tiers: [...DEFAULT_TIERS, { name: 'tiny', points: 3, duration: 60 }],
        authFailures: { points: 10_000 },
      },
      cache: { positiveTtlMs: 200, negativeTtlMs: 200 },
    });
    const svc = t.gw.service;
    const company = async (
      id: string,
      tier: string,
      status: 'active' | 'pending' | 'suspended',
      apiAccess: boolean,
    ) => {
      const k = await createCompanyAndKey(svc, id, { tier, status, apiAccess, label: 'test' });
      keys[id] = { id: k.id, key: k.key };
      allKeys.push(k.key);
    };
    await company('acme', 'standard', 'active', true);
    await company('pending-co', 'free', 'pending', true);
    await company('suspended-co', 'free', 'suspended', true);
    await company('noapi-co', 'free', 'active', false);
    await company('tiny-co', 'tiny', 'active', true);
    await company('tiny-quota', 'tiny', 'suspended', true);
    await company('revoked-co', 'free', 'active', true);
    await company('expiring-co', 'free', 'active', true);
  });

  after(async () => {
    await t?.close();
    await upstream?.close();
    await slow?.close();
    await redis?.stop();
  });

  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('200: a valid key is forwarded with trusted headers; the key is not', async () => {
    const body = JSON.stringify({ identifier: 'user@example.com', identifier_type: 'email' });
    const r = await send(t.port, '/notify/v1/otps?trace=1', {
      method: 'POST',
      headers: { 'X-API-Key': keys.acme!.key, 'Content-Type': 'application/json' },
      body,
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { ok: true });
    assert.equal(upstream.received.length, 1);
    const got = upstream.received[0]!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/notify/v1/otps?trace=1', 'path and query are forwarded unchanged');
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['x-api-key'], undefined);
    assert.equal(got.headers['x-company-id'], 'acme');
    assert.equal(got.headers['x-api-key-id'], keys.acme!.id);
    assert.equal(got.headers['x-company-tier'], 'standard');
    assert.equal(got.headers['x-request-id'], r.headers['x-request-id']);
    assert.match(String(got.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(got.headers['x-forwarded-proto'], 'http');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${t.port}`);
    assert.ok(!JSON.stringify(got.rawHeaders).includes(keys.acme!.key), 'no header carries the key');
    // Rate-limit headers on every authenticated response.
    assert.equal(r.headers['ratelimit-limit'], '600');
    assert.equal(r.headers['ratelimit-remaining'], '599');
    assert.ok(Number(r.headers['ratelimit-reset']) > 0);
    // helmet, and no X-Powered-By.
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['x-powered-by'], undefined);
  });

  test('401 Missing API key: no header, or an empty one; nothing is forwarded', async () => {
    for (const headers of [{}, { 'X-API-Key': '' }] as Record<string, string>[]) {
      const r = await send(t.port, '/notify/v1/health', { headers });
      assert.equal(r.status, 401);
      assert.deepEqual(r.json, MISSING);
      assert.match(String(r.headers['content-type']), /^application\/json/);
    }
    assert.equal(upstream.received.length, 0);
  });

  test('401 Invalid API key: one identical body for unknown, malformed, checksum, over-long, duplicate, revoked, expired', async () => {
    const revoke = await t.gw.service.revokeKey(keys['revoked-co']!.id);
    assert.ok(revoke.ok);
    // Expiry in the past cannot be set through the API, so write it directly to the store.
    await t.gw.store.updateKey(keys['expiring-co']!.id, { expiresAt: isoSeconds(Date.now() - 1000) });
    await t.gw.store.publish({ kind: 'all' });
    const good = keys.acme!.key;
    const flipped = good.slice(0, -1) + (good.endsWith('A') ? 'B' : 'A');
    const cases: [string, [string, string][]][] = [
      ['unknown', [['X-API-Key', generateApiKey('live')]]],
      ['malformed', [['X-API-Key', 'hello']]],
      ['bad checksum', [['X-API-Key', flipped]]],
      ['truncated', [['X-API-Key', good.slice(0, -1)]]],
      ['over-long', [['X-API-Key', 'nk_live_' + 'a'.repeat(400)]]],
      [
        'duplicate lines',
        [
          ['X-API-Key', good],
          ['X-API-Key', good],
        ],
      ],
      [
        'duplicate lines, other case',
        [
          ['X-API-Key', good],
          ['x-api-key', 'x'],
        ],
      ],
      ['revoked', [['X-API-Key', keys['revoked-co']!.key]]],
      ['expired', [['X-API-Key', keys['expiring-co']!.key]]],
    ];
    const bodies = new Set<string>();
    for (const [name, headers] of cases) {
      const r = await send(t.port, '/notify/v1/health', { headers });
      assert.equal(r.status, 401, name);
      assert.deepEqual(r.json, INVALID, name);
      bodies.add(r.body);
      assert.equal(
        r.headers['ratelimit-limit'],
        undefined,
        `${name}: no rate-limit headers before authentication`,
      );
    }
    assert.equal(bodies.size, 1, 'every invalid-key case answers the same bytes');
    assert.equal(upstream.received.length, 0);
    // Expiry has no writer: the gateway that first refuses the key records it, once.
    await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys['expiring-co']!.key } });
    const audit = await t.gw.service.readAudit({ companyId: 'expiring-co' });
    assert.ok(audit.ok);
    assert.equal(audit.value.filter((e) => e.event === 'key.expired').length, 1);
  });

  test('401 key in the URL: any key-like parameter name, encoding or key-shaped value; never forwarded', async () => {
    const key = keys.acme!.key;
    const urls = [
      `/notify/v1/health?api_key=${key}`,
      `/notify/v1/health?API_KEY=whatever`,
      `/notify/v1/health?Api%5FKey=whatever`,
      `/notify/v1/health?%2561pi_key=whatever`,
      `/notify/v1/health?x-api-key=${encodeURIComponent(key)}`,
      `/notify/v1/health?apiKey=`,
      `/notify/v1/health?token=abc`,
      `/notify/v1/health?a=1&b=${key}`,
      `/notify/v1/health?q=${encodeURIComponent(encodeURIComponent(key))}`,
      `/notify/v1/keys/${key}`,
      `/notify/v1/health;api_key=x?ok=1&key=${key}`,
    ];
    for (const url of urls) {
      // Even with a valid header key: the URL rule comes first.
      const r = await send(t.port, url, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 401, url);
      assert.deepEqual(r.json, IN_URL, url);
    }
    assert.equal(upstream.received.length, 0);
  });

  test('403: company not active, or API access disabled', async () => {
    for (const id of ['pending-co', 'suspended-co']) {
      const r = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys[id]!.key } });
      assert.equal(r.status, 403, id);
      assert.deepEqual(r.json, { error: 'Forbidden', details: 'Company is not active' });
    }
    const r = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys['noapi-co']!.key } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { error: 'Forbidden', details: 'API access is disabled for this company' });
    assert.equal(upstream.received.length, 0);
  });

  test('404: no route matches (prefix matches on segment boundaries only)', async () => {
    for (const path of ['/other', '/notify/v10/health', '/notify', '/']) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': keys.acme!.key } });
      assert.equal(r.status, 404, path);
      assert.deepEqual(r.json, { error: 'Not Found', details: 'No route matches this path' });
    }
    assert.equal(upstream.received.length, 0);
  });

  test('413: declared or streamed body over the limit; nothing complete reaches the upstream', async () => {
    const big = Buffer.alloc(BODY_LIMIT + 1, 'a');
    const r = await send(t.port, '/notify/v1/upload', {
      method: 'POST',
      headers: { 'X-API-Key': keys.acme!.key, 'Content-Type': 'application/octet-stream' },
      body: big,
    });
    assert.equal(r.status, 413);
    assert.deepEqual(r.json, { error: 'Payload Too Large', details: 'Request body exceeds the size limit' });
    // Chunked: no Content-Length, the proxy counts while streaming.
    const raw = await sendRaw(
      t.port,
      `POST /notify/v1/upload HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.acme!.key}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${(BODY_LIMIT + 10).toString(16)}\r\n${'b'.repeat(BODY_LIMIT + 10)}\r\n0\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 413 /);
    assert.ok(raw.includes('"Payload Too Large"'));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(upstream.received.length, 0);
    // A body at the limit passes.
    const ok = await send(t.port, '/notify/v1/upload', {
      method: 'POST',
      headers: { 'X-API-Key': keys.acme!.key },
      body: Buffer.alloc(BODY_LIMIT, 'c'),
    });
    assert.equal(ok.status, 200);
    assert.equal(upstream.received[0]!.body.length, BODY_LIMIT);
  });

  test('429 with Retry-After past the tier limit; 401/403 consume no quota', async () => {
    // A suspended company's refused requests (403) must not use its quota.
    for (let i = 0; i < 5; i++) {
      const r = await send(t.port, '/notify/v1/health', {
        headers: { 'X-API-Key': keys['tiny-quota']!.key },
      });
      assert.equal(r.status, 403);
    }
    const up = await t.gw.service.updateCompany('tiny-quota', { status: 'active' });
    assert.ok(up.ok);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys['tiny-quota']!.key } });
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.deepEqual(last!.json, {
      error: 'Too Many Requests',
      details: 'Rate limit exceeded; retry after the delay in Retry-After',
    });
    assert.ok(Number(last!.headers['retry-after']) >= 1 && Number(last!.headers['retry-after']) <= 60);
    assert.equal(last!.headers['ratelimit-limit'], '3');
    assert.equal(last!.headers['ratelimit-remaining'], '0');
    assert.equal(upstream.received.length, 3);
  });

  test('502 when the upstream refuses the connection; 504 when it is too slow; the access line says why', async () => {
    /** The access line of the answer `r`, once written (on the response's close). */
    const lineOf = async (r: { headers: Record<string, unknown> }) => {
      const requestId = r.headers['x-request-id'];
      const find = () => t.logs().find((l) => l.msg === 'request' && l.requestId === requestId);
      await eventually(async () => find() !== undefined, 2000);
      return find()!;
    };
    const down = await send(t.port, '/down/v1/x', { headers: { 'X-API-Key': keys.acme!.key } });
    assert.equal(down.status, 502);
    assert.deepEqual(down.json, { error: 'Bad Gateway', details: 'Upstream service is unreachable' });
    const downLine = await lineOf(down);
    assert.equal(downLine.error, 'UPSTREAM_UNREACHABLE');
    assert.match(String(downLine.upstreamError), /^ECONNREFUSED 127\.0\.0\.1:\d+$/);
    // A name that does not resolve: the cause names it (EAI_AGAIN where no resolver answers).
    const nohost = await send(t.port, '/nohost/v1/x', { headers: { 'X-API-Key': keys.acme!.key } });
    assert.equal(nohost.status, 502);
    assert.match(String((await lineOf(nohost)).upstreamError), /^(ENOTFOUND|EAI_AGAIN) backend\.invalid$/);
    const started = Date.now();
    const late = await send(t.port, '/slow/v1/x', { headers: { 'X-API-Key': keys.acme!.key } });
    assert.equal(late.status, 504);
    assert.deepEqual(late.json, {
      error: 'Gateway Timeout',
      details: 'Upstream service did not answer in time',
    });
    // 300 ms timeout vs 4000 ms upstream: the 3000 ms bound leaves room for a loaded machine.
    assert.ok(Date.now() - started < 3000, 'answered at the route timeout, not when the upstream finished');
    assert.equal((await lineOf(late)).upstreamError, 'upstream timeout');
    // A request the upstream answered has no cause.
    const ok = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys.acme!.key } });
    assert.equal((await lineOf(ok)).upstreamError, undefined);
  });

  test('client-sent trusted headers never reach the upstream, whatever their case, count or form', async () => {
    const r = await send(t.port, '/notify/v1/health', {
      headers: [
        ['X-API-Key', keys.acme!.key],
        ['X-Company-Id', 'evil'],
        ['x-company-id', 'evil2'],
        ['X_Company_Id', 'evil3'],
        ['X-COMPANY-TIER', 'enterprise'],
        ['X-Api-Key-Id', 'key_evil'],
        ['X-Request-Id', 'spoofed'],
        ['X-Forwarded-For', '6.6.6.6'],
        ['X-Forwarded-Host', 'evil.example'],
        ['X-Forwarded-Proto', 'https'],
        ['Forwarded', 'for=6.6.6.6'],
        ['Connection', 'keep-alive, X-Company-Id, X-Custom'],
        ['X-Custom', 'named in Connection, so hop-by-hop'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    assert.equal(countHeader(got.rawHeaders, 'x-company-id'), 1);
    assert.equal(got.headers['x-company-id'], 'acme');
    assert.equal(countHeader(got.rawHeaders, 'x-company-tier'), 1);
    assert.equal(got.headers['x-company-tier'], 'standard');
    assert.equal(got.headers['x-api-key-id'], keys.acme!.id);
    assert.notEqual(got.headers['x-request-id'], 'spoofed');
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${t.port}`);
    assert.equal(got.headers['x-forwarded-proto'], 'http');
    assert.equal(got.headers.forwarded, undefined);
    assert.equal(got.headers['x-custom'], undefined);
    assert.ok(!/evil|6\.6\.6\.6/.test(JSON.stringify(got.rawHeaders)));
  });

  test('Expect: 100-continue is answered only after authentication', async () => {
    const bad = await sendRaw(
      t.port,
      `POST /notify/v1/otps HTTP/1.1\r\nHost: x\r\nX-API-Key: nk_live_wrong\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`,
      800,
    );
    assert.match(bad, /^HTTP\/1\.1 401 /, 'a bad key gets its 401 without a 100 Continue first');
    assert.ok(!bad.includes('100 Continue'));
    const good = await sendRaw(
      t.port,
      `POST /notify/v1/otps HTTP/1.1\r\nHost: x\r\nX-API-Key: ${keys.acme!.key}\r\nContent-Length: 0\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      800,
    );
    assert.match(good, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    assert.equal(upstream.received.at(-1)?.headers.expect, undefined);
  });

  test('own endpoints need no key: /healthz and /readyz', async () => {
    const h = await send(t.port, '/healthz');
    assert.equal(h.status, 200);
    assert.deepEqual(h.json, { status: 'ok' });
    const r = await send(t.port, '/readyz');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { status: 'ready' }, 'the public port names no internal check');
  });

  test('access log: one parsed line per request with the fields, and no key anywhere in any line', async () => {
    await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': keys.acme!.key } });
    await new Promise((r) => setTimeout(r, 50));
    const lines = t.logs();
    const access = lines.filter((l) => l.msg === 'request');
    assert.ok(access.length >= 10);
    const ok = access.findLast((l) => l.status === 200 && l.route === '/notify/v1')!;
    assert.equal(ok.method, 'GET');
    assert.equal(ok.companyId, 'acme');
    assert.equal(ok.keyId, keys.acme!.id);
    assert.match(String(ok.requestId), /^[0-9a-f-]{36}$/);
    assert.equal(typeof ok.durationMs, 'number');
    assert.match(String(ok.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(ok.trace_id, undefined, 'no trace id with tracing off');
    const text = t.logText();
    for (const k of allKeys) {
      assert.ok(!text.includes(k), 'a key appears in the log');
      assert.ok(!text.includes(k.slice(8, 40)), 'the secret part of a key appears in the log');
    }
    assert.ok(!/api_key=/i.test(text), 'a query string that carried a key was logged');
  });
});

describe('two gateway instances on one Redis', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    const cfg = {
      store: { type: 'redis' as const, redis: { url: redis.url } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: { tiers: [...DEFAULT_TIERS, { name: 'pair', points: 25, duration: 60 }] },
      log: { level: 'warn' as const },
    };
    a = await startTestGateway(cfg);
    b = await startTestGateway(cfg);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('the tier limit is exact across instances: 2N concurrent requests → exactly N forwarded', async () => {
    const N = 25;
    const k = await createCompanyAndKey(a.gw.service, 'pair-co', { tier: 'pair' });
    const all = await Promise.all(
      Array.from({ length: 2 * N }, (_, i) =>
        send(i % 2 ? a.port : b.port, '/notify/v1/health', { headers: { 'X-API-Key': k.key } }),
      ),
    );
    const count = (s: number) => all.filter((r) => r.status === s).length;
    assert.equal(count(200), N);
    assert.equal(count(429), N);
    assert.equal(upstream.received.length, N);
  });

  test('a key created on one instance authenticates on the other; revocation reaches both within 1 s', async () => {
    const k = await createCompanyAndKey(a.gw.service, 'rev-co');
    const headers = { 'X-API-Key': k.key };
    assert.equal((await send(b.port, '/notify/v1/health', { headers })).status, 200);
    assert.equal((await send(a.port, '/notify/v1/health', { headers })).status, 200);
    const revoked = await adminApi(a.adminPort)('DELETE', `/admin/v1/keys/${k.id}`);
    assert.equal(revoked.status, 200);
    for (const gw of [a, b]) {
      const took = await eventually(
        async () => (await send(gw.port, '/notify/v1/health', { headers })).status === 401,
        1000,
      );
      assert.ok(took < 1000);
    }
  });
});

describe('Redis down: bounded answers, cached keys keep working, recovery by itself', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let t: TestGateway;

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      cache: { positiveTtlMs: 100, staleIfErrorMs: 60_000 },
      log: { level: 'warn' },
    });
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('503 for an uncached key, 200 for a cached one (insurance limiter), readiness 503, then recovery', async () => {
    assert.ok((await t.gw.service.createCompany({ id: 'c1', tier: 'standard' })).ok);
    const cached = await t.gw.service.createKey('c1', {});
    const uncached = await t.gw.service.createKey('c1', {});
    assert.ok(cached.ok && uncached.ok);
    assert.equal(
      (await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': cached.value.key } })).status,
      200,
    );

    await redis.kill();
    const started = Date.now();
    const r503 = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': uncached.value.key } });
    assert.equal(r503.status, 503);
    assert.deepEqual(r503.json, {
      error: 'Service Unavailable',
      details: 'Key store is unavailable; retry shortly',
    });
    assert.ok(Date.now() - started < 2000, 'answered quickly');
    const stale = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': cached.value.key } });
    assert.equal(stale.status, 200, 'a cached key keeps working while Redis is down');
    assert.equal(
      stale.headers['ratelimit-limit'],
      '600',
      'the insurance limiter still reports the tier limit',
    );
    // Cached keys are served: degraded, still ready (every pod going unready together would turn
    // a Redis outage into a full outage).
    const degraded = await send(t.port, '/readyz');
    assert.equal(degraded.status, 200);
    assert.deepEqual(degraded.json, { status: 'degraded' });

    await redis.restart();
    await eventually(
      async () => ((await send(t.port, '/readyz')).json as { status: string }).status === 'ready',
      5000,
      100,
    );
    // The restarted Redis is empty (no persistence in tests): create again and use it.
    const fresh = await createCompanyAndKey(t.gw.service, 'c2', { tier: 'free' });
    assert.equal(
      (await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': fresh.key } })).status,
      200,
    );
    // The outage was logged (connection errors, 503s), without Redis key names, hashes or keys.
    const text = t.logText();
    assert.match(text, /connection error|Key store is unavailable/);
    assert.ok(!/ng:(kh|k|c|ck|ca):|[0-9a-f]{64}/.test(text), 'a Redis key name or a hash in the log');
    for (const k of [cached.value.key, uncached.value.key, fresh.key]) assert.ok(!text.includes(k));
  });
});

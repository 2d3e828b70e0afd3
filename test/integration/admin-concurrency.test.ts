import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { adminApi, type AdminCall } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** Shapes that pass the old shape check but name no instant (issue 10, finding 5). */
const IMPOSSIBLE = [
  '2030-13-01T00:00:00Z',
  '2030-01-01T23:59:60Z',
  '2027-02-30T00:00:00Z',
  '2030-01-01T24:00:00Z',
];

const call = (gw: TestGateway, key: string) =>
  send(gw.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });

describe('admin API under concurrency and failure, Redis, two instances', () => {
  let redis: TestRedis;
  let raw: Redis;
  let upstream: RecordingUpstream;
  let a: TestGateway;
  let b: TestGateway;
  let api: AdminCall;

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url, { lazyConnect: false });
    // Instance a writes as its own ACL user, so the test can take away its right to PUBLISH
    // (a real failure after the write) while b keeps listening as the default user.
    await raw.call('ACL', 'SETUSER', 'writer', 'on', '>writer-pass-0123', '~*', '&*', '+@all');
    upstream = await startUpstream();
    const cfg = (url: string) => ({
      // 2 s, not the default 500 ms: on a loaded machine a slow answer is not the outage under test
      // (the hung-Redis test below still answers within its 5 s bound).
      store: { type: 'redis' as const, redis: { url, commandTimeoutMs: 2000 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      // Long TTLs: only an invalidation makes a change visible within 1 s.
      cache: { positiveTtlMs: 60_000, negativeTtlMs: 60_000 },
      rateLimit: { tiers: DEFAULT_TIERS, authFailures: { points: 100_000 } },
      log: { level: 'warn' as const },
    });
    a = await startTestGateway(cfg(`redis://writer:writer-pass-0123@127.0.0.1:${redis.port}`));
    b = await startTestGateway(cfg(redis.url));
    api = adminApi(a.adminPort);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    raw?.disconnect();
    await upstream?.close();
    await redis?.stop();
  });

  test('three concurrent PATCHes of different fields over HTTP all apply; the audit diff is exact', async () => {
    for (let trial = 0; trial < 10; trial++) {
      const id = `patch-${trial}`;
      assert.equal((await api('POST', '/admin/v1/companies', { id, tier: 'free' })).status, 201);
      const results = await Promise.all([
        api('PATCH', `/admin/v1/companies/${id}`, { status: 'suspended' }),
        api('PATCH', `/admin/v1/companies/${id}`, { tier: 'standard' }),
        api('PATCH', `/admin/v1/companies/${id}`, { apiAccess: false }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 200, 200],
      );
      const c = (await api('GET', `/admin/v1/companies/${id}`)).body;
      assert.deepEqual(
        [c.status, c.tier, c.apiAccess],
        ['suspended', 'standard', false],
        `trial ${trial}: a change was lost`,
      );
      const audit = (await api('GET', `/admin/v1/audit?companyId=${id}&limit=10`)).list;
      const diffs = audit.filter((e) => e.event === 'company.updated').map((e) => e.details);
      assert.deepEqual(
        diffs.sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
        [
          { apiAccess: { from: true, to: false } },
          { status: { from: 'active', to: 'suspended' } },
          { tier: { from: 'free', to: 'standard' } },
        ],
      );
    }
  });

  test('DELETE racing rotate (24 h grace) over HTTP: revoked for good on both instances, cap kept', async () => {
    for (let trial = 0; trial < 20; trial++) {
      const co = `race-${trial}`;
      await api('POST', '/admin/v1/companies', { id: co, tier: 'standard' });
      const k = await api('POST', `/admin/v1/companies/${co}/keys`, {});
      const key = String(k.body.key);
      for (const gw of [a, b]) assert.equal((await call(gw, key)).status, 200);
      const delay = () => new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
      const [del, rot] = await Promise.all([
        delay().then(() => api('DELETE', `/admin/v1/keys/${k.body.id}`)),
        delay().then(() => api('POST', `/admin/v1/keys/${k.body.id}/rotate`, { gracePeriodSeconds: 86_400 })),
      ]);
      assert.equal(del.status, 200, `trial ${trial}`);
      assert.ok(rot.status === 201 || rot.status === 409, `trial ${trial}: rotate ${rot.status}`);
      for (const gw of [a, b]) await eventually(async () => (await call(gw, key)).status === 401, 1000);
      // Later than the race: still revoked (a late rotation write cannot bring it back).
      const view = (await api('GET', `/admin/v1/keys/${k.body.id}`)).body;
      assert.equal(view.status, 'revoked', `trial ${trial}: ${JSON.stringify(view)}`);
      assert.ok(Date.parse(String(view.revokedAt)) <= Date.now());
      for (let i = 0; i < 3; i++) await api('POST', `/admin/v1/companies/${co}/keys`, {});
      const list = (await api('GET', `/admin/v1/companies/${co}/keys`)).list;
      const working = list.filter((x) => x.status === 'active' || x.status === 'revoking');
      assert.ok(working.length <= 2, `trial ${trial}: ${working.length} working keys`);
    }
  });

  test('a revocation whose publish failed is published again by the retried DELETE', async () => {
    await api('POST', '/admin/v1/companies', { id: 'retry-co', tier: 'standard' });
    const k = await api('POST', '/admin/v1/companies/retry-co/keys', {});
    const key = String(k.body.key);
    for (const gw of [a, b]) assert.equal((await call(gw, key)).status, 200, 'cached on both');
    await raw.call('ACL', 'SETUSER', 'writer', 'resetchannels'); // a's PUBLISH now fails (NOPERM)
    try {
      const first = await api('DELETE', `/admin/v1/keys/${k.body.id}`);
      // Not a store outage (Redis answered and refused): a 500, not a 503 inviting blind retries.
      assert.equal(first.status, 500);
      assert.deepEqual(first.body, { error: 'Internal Server Error', details: 'Unexpected error' });
      assert.equal((await call(b, key)).status, 200, 'b never heard of the revocation');
    } finally {
      await raw.call('ACL', 'SETUSER', 'writer', 'allchannels');
    }
    const retry = await api('DELETE', `/admin/v1/keys/${k.body.id}`);
    assert.equal(retry.status, 200);
    assert.equal(retry.body.status, 'revoked');
    assert.ok((await eventually(async () => (await call(b, key)).status === 401, 1000)) < 1000);
    // The first attempt did revoke: audited once, before its publish failed; the retry adds nothing.
    const audit = (await api('GET', '/admin/v1/audit?companyId=retry-co&limit=10')).list;
    assert.equal(audit.filter((e) => e.event === 'key.revoked' && e.keyId === k.body.id).length, 1);
  });

  test('impossible timestamps: 400 naming expiresAt, nothing created (not a 503)', async () => {
    await api('POST', '/admin/v1/companies', { id: 'ts-co', tier: 'standard' });
    for (const expiresAt of IMPOSSIBLE) {
      const r = await api('POST', '/admin/v1/companies/ts-co/keys', { expiresAt });
      assert.equal(r.status, 400, expiresAt);
      assert.match(String(r.body.details), /^expiresAt: must be a real UTC instant/, expiresAt);
    }
    assert.deepEqual((await api('GET', '/admin/v1/companies/ts-co/keys')).list, []);
  });

  test('a stored revokedAt or expiresAt that does not parse fails closed: 401, shown revoked/expired', async () => {
    await api('POST', '/admin/v1/companies', { id: 'garbage-co', tier: 'standard' });
    const cases: [string, string, string][] = [
      ['revokedAt', '2027-02-30T00:00:00Z', 'revoked'], // Date.parse rolls it over to a future date
      ['revokedAt', 'garbage', 'revoked'],
      ['expiresAt', '2030-13-01T00:00:00Z', 'expired'],
      ['expiresAt', '2099-01-01T24:00:00Z', 'expired'],
    ];
    for (const [field, value, status] of cases) {
      const k = await api('POST', '/admin/v1/companies/garbage-co/keys', {});
      const hash = await raw.get(`ng:k:${String(k.body.id)}`);
      assert.ok(hash);
      await raw.hset(`ng:kh:${hash}`, field, value); // raw, behind the store's back; nothing cached yet
      for (const gw of [a, b])
        assert.equal((await call(gw, String(k.body.key))).status, 401, `${field} ${value}`);
      const view = (await api('GET', `/admin/v1/keys/${String(k.body.id)}`)).body;
      assert.equal(view.status, status, `${field} ${value}`);
      const rot = await api('POST', `/admin/v1/keys/${String(k.body.id)}/rotate`, { gracePeriodSeconds: 60 });
      assert.equal(rot.status, 409, 'such a key cannot be rotated back to life');
      assert.equal((await api('DELETE', `/admin/v1/keys/${String(k.body.id)}`)).status, 200);
      assert.equal((await call(a, String(k.body.key))).status, 401);
    }
    // Each of them frees its slot: the company can still have 2 working keys.
    assert.equal((await api('POST', '/admin/v1/companies/garbage-co/keys', {})).status, 201);
    assert.equal((await api('POST', '/admin/v1/companies/garbage-co/keys', {})).status, 201);
  });

  test('the store unreachable (Redis hung): 503 STORE_UNAVAILABLE, bounded; back by itself', async () => {
    redis.pause();
    try {
      const started = Date.now();
      const r = await api('GET', '/admin/v1/companies/retry-co');
      assert.equal(r.status, 503);
      assert.deepEqual(r.body, {
        error: 'Service Unavailable',
        details: 'Key store is unavailable; retry shortly',
      });
      assert.ok(Date.now() - started < 5000);
    } finally {
      redis.resume();
    }
    await eventually(async () => (await api('GET', '/admin/v1/companies/retry-co')).status === 200, 5000);
  });
});

describe('impossible timestamps on the memory and file stores: 400 naming the field', () => {
  let mem: TestGateway;
  let file: TestGateway;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-ts-'));
    const path = join(dir, 'keys.yaml');
    writeFileSync(path, 'companies:\n  - id: file-co\n    tier: free\n');
    mem = await startTestGateway({ store: { type: 'memory' }, log: { level: 'warn' } });
    file = await startTestGateway({ store: { type: 'file', file: { path } }, log: { level: 'warn' } });
  });
  after(async () => {
    await mem?.close();
    await file?.close();
  });

  test('memory and file stores answer 400 for every impossible expiresAt and create nothing', async () => {
    const m = adminApi(mem.adminPort);
    assert.equal((await m('POST', '/admin/v1/companies', { id: 'mem-co', tier: 'free' })).status, 201);
    for (const [gw, co] of [
      [mem, 'mem-co'],
      [file, 'file-co'],
    ] as const) {
      for (const expiresAt of IMPOSSIBLE) {
        const r = await adminApi(gw.adminPort)('POST', `/admin/v1/companies/${co}/keys`, { expiresAt });
        assert.equal(r.status, 400, `${co} ${expiresAt}`);
        assert.match(String(r.body.details), /^expiresAt: must be a real UTC instant/);
      }
      assert.deepEqual((await adminApi(gw.adminPort)('GET', `/admin/v1/companies/${co}/keys`)).list, []);
    }
  });
});

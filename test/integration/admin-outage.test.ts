import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { adminApi, type AdminCall } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

const PAUSE_MS = 1500;
const call = (gw: TestGateway, key: string) =>
  send(gw.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });

/**
 * A write answered 503 may land later: `CLIENT PAUSE WRITE` (what a Sentinel failover does) makes
 * the write wait past the command timeout while reads work; the Lua script runs when the pause
 * ends. The change must then reach every instance at once and be in the audit trail.
 */
describe('admin writes answered 503 during a Redis write pause, two instances', () => {
  let redis: TestRedis;
  let raw: Redis;
  let upstream: RecordingUpstream;
  let a: TestGateway;
  let b: TestGateway;
  let api: AdminCall;

  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
    upstream = await startUpstream();
    const cfg = {
      store: { type: 'redis' as const, redis: { url: redis.url, commandTimeoutMs: 500 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      // Long TTLs: only an invalidation makes the change visible on b in time.
      cache: { positiveTtlMs: 60_000, negativeTtlMs: 60_000 },
      rateLimit: { tiers: DEFAULT_TIERS, authFailures: { points: 100_000 } },
      log: { level: 'warn' as const },
    };
    a = await startTestGateway(cfg);
    b = await startTestGateway(cfg);
    api = adminApi(a.adminPort);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    raw?.disconnect();
    await upstream?.close();
    await redis?.stop();
  });

  const setUp = async (co: string) => {
    assert.equal((await api('POST', '/admin/v1/companies', { id: co, tier: 'standard' })).status, 201);
    const k = await api('POST', `/admin/v1/companies/${co}/keys`, {});
    const key = String(k.body.key);
    assert.equal((await call(b, key)).status, 200, 'b has the key cached');
    return { key, id: String(k.body.id) };
  };
  // During the pause a read can wait behind the paused write on the same connection (503): none yet.
  const events = async (co: string) => {
    const r = await api('GET', `/admin/v1/audit?companyId=${co}&limit=20`);
    return r.status === 200 ? r.list.map((e) => ({ event: e.event, details: e.details })) : [];
  };

  test('a DELETE answered 503 that lands later: b refuses the key within 2 s of the pause, audited', async () => {
    const { key, id } = await setUp('pause-revoke');
    await raw.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    const paused = Date.now();
    const del = await api('DELETE', `/admin/v1/keys/${id}`);
    assert.equal(del.status, 503, JSON.stringify(del.body));
    const waited = await eventually(async () => (await call(b, key)).status === 401, PAUSE_MS + 3000, 100);
    assert.ok(Date.now() - paused < PAUSE_MS + 2500, `b refused after ${waited} ms`);
    assert.equal((await api('GET', `/admin/v1/keys/${id}`)).body.status, 'revoked');
    await eventually(
      async () => (await events('pause-revoke')).some((e) => e.event === 'key.revoked'),
      2000,
      100,
    );
    // The retry answers 200 and adds no second revocation event.
    assert.equal((await api('DELETE', `/admin/v1/keys/${id}`)).status, 200);
    const revoked = (await events('pause-revoke')).filter((e) => e.event === 'key.revoked');
    assert.deepEqual(revoked, [{ event: 'key.revoked', details: { reason: 'revoked', late: true } }]);
  });

  test('a suspension answered 503 that lands later: b refuses within 2 s of the pause, audited', async () => {
    const { key } = await setUp('pause-suspend');
    await raw.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    const paused = Date.now();
    const patch = await api('PATCH', '/admin/v1/companies/pause-suspend', { status: 'suspended' });
    assert.equal(patch.status, 503, JSON.stringify(patch.body));
    const waited = await eventually(async () => (await call(b, key)).status !== 200, PAUSE_MS + 3000, 100);
    assert.ok(Date.now() - paused < PAUSE_MS + 2500, `b refused after ${waited} ms`);
    await eventually(
      async () => (await events('pause-suspend')).some((e) => e.event === 'company.updated'),
      2000,
      100,
    );
    const updates = (await events('pause-suspend')).filter((e) => e.event === 'company.updated');
    assert.deepEqual(updates, [
      { event: 'company.updated', details: { status: { to: 'suspended' }, late: true } },
    ]);
  });

  test('a key create answered 503 during the pause leaves no key and no reserved slot behind', async () => {
    await api('POST', '/admin/v1/companies', { id: 'pause-create', tier: 'standard' });
    await raw.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    const created = await api('POST', '/admin/v1/companies/pause-create/keys', {});
    assert.equal(created.status, 503, JSON.stringify(created.body));
    await new Promise((r) => setTimeout(r, PAUSE_MS + 500));
    const slots = await raw.keys('*ca:pause-create');
    for (const z of slots) assert.deepEqual(await raw.zrange(z, 0, -1), [], 'a slot of the cap was leaked');
    assert.deepEqual((await api('GET', '/admin/v1/companies/pause-create/keys')).list, []);
    assert.deepEqual(
      (await events('pause-create')).map((e) => e.event),
      ['company.created'],
    );
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { adminApi, createCompanyAndKey, type AdminCall } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send, type Reply } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// One shared gateway for several services: two instances on one real Redis, two routes. Scopes
// and per-company/per-key windows set through the admin API on instance a must hold on instance b
// within 1 s (long cache TTLs: only the invalidation can make it), and every window is exact.

const SCOPE_BODY = { error: 'Forbidden', details: 'This API key may not call this route' };

describe('scopes and per-company limits, two instances on one Redis', () => {
  let redis: TestRedis;
  let notify: RecordingUpstream;
  let media: RecordingUpstream;
  let a: TestGateway;
  let b: TestGateway;
  let api: AdminCall;

  before(async () => {
    redis = await startRedis();
    notify = await startUpstream();
    media = await startUpstream();
    const cfg = {
      store: { type: 'redis' as const, redis: { url: redis.url } },
      routes: [
        { prefix: '/notify/v1', target: notify.url },
        { prefix: '/media', target: media.url, methods: ['GET', 'POST'] },
      ],
      cache: { positiveTtlMs: 60_000, negativeTtlMs: 60_000 },
      rateLimit: {
        tiers: [
          ...DEFAULT_TIERS,
          {
            name: 'three',
            windows: [
              { points: 1000, duration: 1 },
              { points: 40, duration: 60 },
              { points: 100_000, duration: 86_400 },
            ],
          },
        ],
        lease: { maxSize: 100, divisor: 64 },
        authFailures: { points: 100_000 },
      },
    };
    a = await startTestGateway(cfg);
    b = await startTestGateway(cfg);
    api = adminApi(a.adminPort);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await notify?.close();
    await media?.close();
    await redis?.stop();
  });

  const call = (gw: TestGateway, key: string, path = '/notify/v1/otps', method = 'POST'): Promise<Reply> =>
    send(gw.port, path, { method, headers: { 'X-API-Key': key, 'Content-Length': '0' } });

  test('a company scope and a narrower key scope: 403 SCOPE_DENIED outside them, no quota used, counted', async () => {
    const k = await createCompanyAndKey(a.gw.service, 'sc-co', { tier: 'three' });
    const patch = await api('PATCH', '/admin/v1/companies/sc-co', { scopes: [{ route: '/notify/v1' }] });
    assert.equal(patch.status, 200, patch.text);
    assert.deepEqual(patch.body.scopes, [{ route: '/notify/v1' }]);
    const key = await api('PATCH', `/admin/v1/keys/${k.id}`, {
      scopes: [{ route: '/notify/v1', methods: ['POST'], paths: ['/notify/v1/otps'] }, { route: '/media' }],
    });
    assert.equal(key.status, 200, key.text);
    for (const gw of [a, b]) {
      assert.equal((await call(gw, k.key)).status, 200);
      assert.equal((await call(gw, k.key, '/notify/v1/otps/abc')).status, 200);
      assert.equal((await call(gw, k.key, '/notify/v1/otps;x=1')).status, 200);
      const refused = [
        await call(gw, k.key, '/notify/v1/otps', 'GET'), // method outside the key's scope
        await call(gw, k.key, '/notify/v1/sms'), // path outside it
        await call(gw, k.key, '/notify/v1/otpsx'), // not on a segment boundary
        await call(gw, k.key, '/media/x', 'GET'), // the key lists /media, its company does not
      ];
      for (const r of refused) {
        assert.equal(r.status, 403);
        assert.deepEqual(r.json, SCOPE_BODY);
        assert.equal(r.headers['ratelimit-remaining'], undefined, 'refused before the limiter');
      }
    }
    // 7 forwarded of 40 in the 60 s window (the window closest to exhaustion; leases of one point
    // at this size): the 8 refusals took nothing.
    const after = await call(a, k.key);
    assert.equal(after.headers['ratelimit-policy'], '1000;w=1, 40;w=60, 100000;w=86400');
    assert.equal(after.headers['ratelimit-limit'], '40');
    assert.equal(after.headers['ratelimit-remaining'], String(40 - 7));
    assert.equal(notify.received.filter((r) => r.url.startsWith('/notify/v1/otps')).length, 7);
    assert.equal(media.received.length, 0);
    const metrics = await (
      await fetch(`http://127.0.0.1:${b.adminPort}/metrics`, {
        headers: { Authorization: `Bearer ${'test-admin-token-0123456789abcdef'}` },
      })
    ).text();
    assert.match(metrics, /gateway_scope_denied_total\{route="\/notify\/v1",reason="key"\} 3/);
    assert.match(metrics, /gateway_scope_denied_total\{route="\/media",reason="company"\} 1/);
    const log = b.logs().find((l) => l.status === 403);
    assert.equal(log?.error, 'SCOPE_DENIED', JSON.stringify(log));
    assert.ok(!a.logText().includes(k.key) && !b.logText().includes(k.key), 'the key is in no log line');
  });

  test('a scope change on instance a is enforced by instance b within 1 s (timed), and audited with before and after', async () => {
    const k = await createCompanyAndKey(a.gw.service, 'prop-co', { tier: 'three' });
    // b serves the key and the company from its cache (60 s TTL).
    assert.equal((await call(b, k.key)).status, 200);
    const started = Date.now();
    const patch = await api('PATCH', '/admin/v1/companies/prop-co', { scopes: [{ route: '/media' }] });
    assert.equal(patch.status, 200, patch.text);
    const took = await eventually(async () => (await call(b, k.key)).status === 403, 1000);
    const companyMs = Date.now() - started;
    // Then a key change: back to every route for the company, the key narrowed to GET /media.
    await api('PATCH', '/admin/v1/companies/prop-co', { scopes: null });
    await eventually(async () => (await call(b, k.key)).status === 200, 1000);
    const keyStart = Date.now();
    assert.equal(
      (await api('PATCH', `/admin/v1/keys/${k.id}`, { scopes: [{ route: '/media', methods: ['GET'] }] }))
        .status,
      200,
    );
    await eventually(async () => (await call(b, k.key)).status === 403, 1000);
    const keyMs = Date.now() - keyStart;
    assert.equal((await call(b, k.key, '/media/x', 'GET')).status, 200);
    console.log(
      `# scope propagation to the other instance: company ${companyMs} ms (poll ${took} ms), key ${keyMs} ms`,
    );
    assert.ok(companyMs < 1000 && keyMs < 1000);
    const audit = await api('GET', '/admin/v1/audit?companyId=prop-co');
    const updates = audit.list.filter((e) => e.event === 'company.updated' || e.event === 'key.updated');
    assert.deepEqual(updates.map((e) => [e.event, e.details]).reverse(), [
      ['company.updated', { scopes: { from: null, to: [{ route: '/media' }] } }],
      ['company.updated', { scopes: { from: [{ route: '/media' }], to: null } }],
      ['key.updated', { scopes: { from: null, to: [{ route: '/media', methods: ['GET'] }] } }],
    ]);
  });

  test('bad scopes and windows answer 400 naming the field, and change nothing', async () => {
    const k = await createCompanyAndKey(a.gw.service, 'bad-co', { tier: 'three' });
    const cases: [string, string, unknown, RegExp][] = [
      [
        'PATCH',
        '/admin/v1/companies/bad-co',
        { scopes: [{ route: '/nope' }] },
        /scopes\.0\.route: not a configured route prefix/,
      ],
      [
        'PATCH',
        '/admin/v1/companies/bad-co',
        { scopes: [{ route: '/notify/v1', methods: ['FETCH'] }] },
        /scopes\.0\.methods\.0: is not an HTTP method/,
      ],
      [
        'PATCH',
        '/admin/v1/companies/bad-co',
        { scopes: [{ route: '/media', methods: ['DELETE'] }] },
        /scopes\.0\.methods\.0: the route does not forward DELETE/,
      ],
      [
        'PATCH',
        `/admin/v1/keys/${k.id}`,
        { scopes: [{ route: '/notify/v1', paths: ['/media'] }] },
        /scopes\.0\.paths\.0: must be \/notify\/v1 or a path under it/,
      ],
      ['PATCH', '/admin/v1/companies/bad-co', { limits: [{ points: 0, duration: 1 }] }, /limits\.0\.points/],
      [
        'PATCH',
        `/admin/v1/keys/${k.id}`,
        {
          limits: [
            { points: 1, duration: 60 },
            { points: 2, duration: 60 },
          ],
        },
        /two windows have the same duration/,
      ],
      ['PATCH', `/admin/v1/keys/${k.id}`, {}, /at least one of scopes, limits/],
    ];
    for (const [method, path, body, message] of cases) {
      const r = await api(method, path, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(String(r.body.details), message);
    }
    const c = await api('GET', '/admin/v1/companies/bad-co');
    assert.deepEqual([c.body.scopes, c.body.limits], [null, null]);
    const key = await api('GET', `/admin/v1/keys/${k.id}`);
    assert.deepEqual([key.body.scopes, key.body.limits], [null, null]);
  });

  test("a company's own windows and a key's stricter one are exact across instances (2N concurrent → exactly N)", async () => {
    const k1 = await createCompanyAndKey(a.gw.service, 'win-co', { tier: 'three' });
    const k2 = await a.gw.service.createKey('win-co', {});
    assert.ok(k2.ok);
    assert.equal(
      (
        await api('PATCH', '/admin/v1/companies/win-co', {
          limits: [
            { points: 500, duration: 1 },
            { points: 24, duration: 60 },
          ],
        })
      ).status,
      200,
    );
    assert.equal(
      (await api('PATCH', `/admin/v1/keys/${k1.id}`, { limits: [{ points: 8, duration: 30 }] })).status,
      200,
    );
    const before = notify.received.length;
    const burst = (key: string, n: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => call(i % 2 ? b : a, key)));
    const first = await burst(k1.key, 16);
    assert.equal(first.filter((r) => r.status === 200).length, 8);
    for (const r of first.filter((x) => x.status === 429)) {
      assert.equal(r.headers['ratelimit-limit'], '8');
      assert.equal(r.headers['ratelimit-policy'], '500;w=1, 24;w=60, 8;w=30');
      assert.ok(Number(r.headers['retry-after']) >= 1 && Number(r.headers['retry-after']) <= 30);
    }
    // The other key has no windows of its own: the company's 24 − 8 = 16 are left.
    const second = await burst(k2.value.key, 32);
    assert.equal(second.filter((r) => r.status === 200).length, 16);
    for (const r of second.filter((x) => x.status === 429)) {
      assert.equal(r.headers['ratelimit-limit'], '24');
      assert.equal(r.headers['ratelimit-policy'], '500;w=1, 24;w=60');
      assert.ok(Number(r.headers['retry-after']) > 30);
    }
    assert.equal(notify.received.length - before, 24);
  });
});

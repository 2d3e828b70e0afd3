import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AUDIT_EVENTS } from '../../src/admin/audit-query.js';
import { sha256Hex } from '../../src/admin/roles.js';
import { auditEntrySchema } from '../../src/admin/schemas.js';
import { adminApi } from '../helpers/admin.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// The admin API's audit, key search, per-key usage and whoami routes, over real HTTP against a real
// gateway (memory store, then Redis for an export longer than a store page).

const READ_TOKEN = 'audit-reader-token-0123456789abcdef';
const KEYS_TOKEN = 'audit-keyops-token-0123456789abcdef';

describe('audit, key search, key usage and whoami (memory store)', () => {
  let t: TestGateway;
  let upstream: RecordingUpstream;
  const api = () => adminApi(t.adminPort);
  const plaintexts: string[] = [];

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      admin: {
        tokens: [
          { name: 'reader', role: 'read', sha256: sha256Hex(READ_TOKEN) },
          { name: 'keyops', role: 'keys', sha256: sha256Hex(KEYS_TOKEN) },
        ],
      },
    });
    for (const id of ['aud-a', 'aud-b']) {
      assert.equal((await api()('POST', '/admin/v1/companies', { id, tier: 'standard' })).status, 201);
      const k = await api()('POST', `/admin/v1/companies/${id}/keys`, { label: 'one' });
      plaintexts.push(String(k.body.key));
    }
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });

  test('whoami answers the token name and role; 401 without a token', async () => {
    assert.deepEqual((await api()('GET', '/admin/v1/whoami')).body, { name: 'admin', role: 'admin' });
    assert.deepEqual((await adminApi(t.adminPort, READ_TOKEN)('GET', '/admin/v1/whoami')).body, {
      name: 'reader',
      role: 'read',
    });
    assert.deepEqual((await adminApi(t.adminPort, KEYS_TOKEN)('GET', '/admin/v1/whoami')).body, {
      name: 'keyops',
      role: 'keys',
    });
    assert.equal((await adminApi(t.adminPort, null)('GET', '/admin/v1/whoami')).status, 401);
  });

  test('key.exposed carries the client address, route and request id of the request that exposed it', async () => {
    const key = plaintexts[0]!;
    const r = await fetch(`http://127.0.0.1:${t.port}/notify/v1/health?api_key=${key}`, {
      headers: { 'User-Agent': 'exposer/1.0' },
    });
    await r.arrayBuffer();
    assert.equal(r.status, 401);
    const requestId = r.headers.get('x-request-id');
    assert.ok(requestId);
    let entry: Record<string, unknown> | undefined;
    await eventually(async () => {
      const a = await api()('GET', '/admin/v1/audit?event=key.exposed&companyId=aud-a');
      entry = a.list[0];
      return entry !== undefined;
    }, 2000);
    assert.deepEqual(entry!.details, {
      revoke: false,
      clientIp: '127.0.0.1',
      route: '/notify/v1',
      requestId,
    });
    assert.equal(entry!.actor, 'gateway');
    assert.ok(!JSON.stringify(entry).includes(key));
  });

  test('filters: event (one or several), time range, company; newest first; pages with before', async () => {
    const all = (await api()('GET', '/admin/v1/audit?limit=1000')).list;
    assert.ok(all.length >= 5);
    const created = await api()('GET', '/admin/v1/audit?event=key.created');
    assert.deepEqual(
      created.list.map((e) => [e.event, e.companyId]),
      [
        ['key.created', 'aud-b'],
        ['key.created', 'aud-a'],
      ],
    );
    const two = await api()('GET', '/admin/v1/audit?event=company.created,key.exposed');
    assert.deepEqual(
      two.list.map((e) => e.event),
      ['key.exposed', 'company.created', 'company.created'],
    );
    const oldestAt = String(all.at(-1)!.at);
    const future = await api()('GET', '/admin/v1/audit?from=2999-01-01');
    assert.deepEqual(future.list, []);
    const range = await api()('GET', `/admin/v1/audit?from=${oldestAt}&to=2999-01-01T00:00:00Z`);
    assert.equal(range.list.length, all.length);
    assert.deepEqual((await api()('GET', `/admin/v1/audit?to=${oldestAt}`)).list, []);
    // Pages of 2, each from the last id of the one before: the whole trail, no gap, no repeat.
    const seen: unknown[] = [];
    let cursor = '';
    for (let i = 0; i < 50; i++) {
      const page = await api()('GET', `/admin/v1/audit?limit=2${cursor ? `&before=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      if (!page.list.length) break;
      seen.push(...page.list.map((e) => e.id));
      cursor = String(page.list.at(-1)!.id);
    }
    assert.deepEqual(
      seen,
      all.map((e) => e.id),
    );
    const newer = await api()('GET', `/admin/v1/audit?after=${String(all[1]!.id)}`);
    assert.deepEqual(
      newer.list.map((e) => e.id),
      [all[0]!.id],
    );
  });

  test('a bad filter is a 400 naming it, never echoing the value; nothing is read', async () => {
    const key = plaintexts[1]!;
    for (const [q, name] of [
      ['event=key.nope', 'event'],
      [`event=${key}`, 'event'],
      ['event=', 'event'],
      ['from=2024-13-01', 'from'],
      [`from=${key}`, 'from'],
      ['to=yesterday', 'to'],
      ['from=2024-02-02&to=2024-02-01', 'from'],
      ['before=abc', 'before'],
      [`before=${key}`, 'before'],
      ['after=1-x', 'after'],
      ['before=5&after=1', 'before'],
      ['event=key.created&event=key.revoked', 'event'],
    ] as const) {
      const r = await api()('GET', `/admin/v1/audit?${q}`);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.match(String(r.body.details), new RegExp(`^${name}: `), q);
      assert.ok(!r.text.includes(key), `${q}: the value is not echoed`);
    }
    const r = await api()('GET', '/admin/v1/audit?event=nope');
    for (const e of AUDIT_EVENTS) assert.ok(String(r.body.details).includes(e), `the message lists ${e}`);
  });

  test('export: JSON lines, oldest first, from after a cursor, with the filters; read role is enough', async () => {
    const all = (await api()('GET', '/admin/v1/audit?limit=1000')).list;
    const res = await fetch(`http://127.0.0.1:${t.adminPort}/admin/v1/audit/export`, {
      headers: { Authorization: `Bearer ${READ_TOKEN}` },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson; charset=utf-8');
    const text = await res.text();
    assert.ok(text.endsWith('\n'));
    const lines = text.trimEnd().split('\n');
    const parsed = lines.map((l) => auditEntrySchema.parse(JSON.parse(l)));
    assert.deepEqual(
      parsed.map((e) => e.id),
      all.map((e) => e.id).reverse(),
    );
    const resumed = await api()('GET', `/admin/v1/audit/export?after=${String(parsed[1]!.id)}`);
    assert.equal(resumed.text.trimEnd().split('\n').length, parsed.length - 2);
    const only = await api()('GET', '/admin/v1/audit/export?event=key.created&companyId=aud-b');
    assert.deepEqual(
      only.text
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { companyId: string }).companyId),
      ['aud-b'],
    );
    const none = await api()('GET', '/admin/v1/audit/export?from=2999-01-01');
    assert.equal(none.status, 200);
    assert.equal(none.text, '');
    for (const q of ['limit=5', 'before=1', 'event=nope']) {
      assert.equal((await api()('GET', `/admin/v1/audit/export?${q}`)).status, 400, q);
    }
    for (const p of plaintexts) assert.ok(!text.includes(p));
  });

  test('find keys by display prefix across companies; a whole key is refused and not echoed', async () => {
    const keysA = (await api()('GET', '/admin/v1/companies/aud-a/keys')).list;
    const prefix = String(keysA[0]!.prefix);
    const exact = await adminApi(t.adminPort, READ_TOKEN)('GET', `/admin/v1/keys?prefix=${prefix}`);
    assert.equal(exact.status, 200);
    assert.deepEqual(
      exact.list.map((k) => [k.companyId, k.prefix]),
      [['aud-a', prefix]],
    );
    const broad = await api()('GET', `/admin/v1/keys?prefix=${prefix.slice(0, 8)}`);
    assert.deepEqual(new Set(broad.list.map((k) => k.companyId)), new Set(['aud-a', 'aud-b']));
    assert.deepEqual((await api()('GET', '/admin/v1/keys?prefix=nk_zz')).list, []);
    // More of a key than its prefix shows is refused: a pasted key, or a piece of one.
    const piece = plaintexts[0]!.slice(0, prefix.length + 1);
    for (const q of [
      `prefix=${plaintexts[0]!}`,
      `prefix=${piece}`,
      'prefix=',
      'prefix=a,b',
      'prefix=abcde',
      '',
    ]) {
      const r = await api()('GET', `/admin/v1/keys?${q}`);
      assert.equal(r.status, 400, q);
      assert.ok(!r.text.includes(piece), q);
    }
  });

  test("per-key usage: each key's share of its company's counts, zeros for an idle key; 404 unknown key", async () => {
    const second = await api()('POST', '/admin/v1/companies/aud-b/keys', { label: 'two' });
    plaintexts.push(String(second.body.key));
    const [keyB1, keyB2] = [plaintexts[1]!, String(second.body.key)];
    for (let i = 0; i < 3; i++)
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': keyB1 } })).status, 200);
    assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': keyB2 } })).status, 200);
    await t.gw.usage!.recorder.flush();
    const sum = (r: { body: Record<string, unknown> }) =>
      (r.body.buckets as { allowed: number; upstream2xx: number }[]).reduce((n, b) => n + b.allowed, 0);
    const company = await api()('GET', '/admin/v1/companies/aud-b/usage');
    const one = await adminApi(t.adminPort, READ_TOKEN)(
      'GET',
      `/admin/v1/keys/${String(second.body.id)}/usage`,
    );
    assert.equal(one.status, 200);
    assert.equal(one.body.keyId, second.body.id);
    assert.equal(one.body.companyId, 'aud-b');
    assert.equal(sum(one), 1);
    const keysB = (await api()('GET', '/admin/v1/companies/aud-b/keys')).list;
    const first = keysB.find((k) => k.label === 'one')!;
    const firstUsage = await api()('GET', `/admin/v1/keys/${String(first.id)}/usage?granularity=day`);
    assert.equal(sum(firstUsage), 3);
    assert.equal(sum(company), 4, "the company's count is the keys' sum");
    assert.equal((await api()('GET', '/admin/v1/keys/no-such-key/usage')).status, 404);
    assert.equal(
      (await api()('GET', `/admin/v1/keys/${String(first.id)}/usage?granularity=week`)).status,
      400,
    );
  });
});

describe('audit export beyond a store page (Redis)', () => {
  let redis: TestRedis;
  let t: TestGateway;
  before(async () => {
    redis = await startRedis();
    t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url } },
      log: { level: 'warn' },
    });
  });
  after(async () => {
    await t?.close();
    await redis?.stop();
  });

  test('1200 entries stream whole, in order; the export resumes from any id', async () => {
    for (let i = 0; i < 1200; i++)
      await t.gw.service.audit({ event: 'company.updated', companyId: 'many', details: { i } });
    const r = await fetch(`http://127.0.0.1:${t.adminPort}/admin/v1/audit/export?companyId=many`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const lines = (await r.text()).trimEnd().split('\n');
    const seq = lines.map((l) => (JSON.parse(l) as { details: { i: number } }).details.i);
    assert.deepEqual(
      seq,
      Array.from({ length: 1200 }, (_, i) => i),
    );
    const cut = (JSON.parse(lines[699]!) as { id: string }).id;
    const rest = await adminApi(t.adminPort)('GET', `/admin/v1/audit/export?companyId=many&after=${cut}`);
    assert.equal(rest.text.trimEnd().split('\n').length, 500);
  });
});

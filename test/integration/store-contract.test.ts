import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { FileKeyStore, parseKeyFile } from '../../src/store/file-store.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import {
  StoreReadOnlyError,
  type Company,
  type Invalidation,
  type KeyRecord,
  type KeyStore,
} from '../../src/store/types.js';
import { isoSeconds } from '../../src/time.js';
import { eventually } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { auditPagingContract, auditQueryContract } from '../helpers/audit-contract.js';
import { storeConcurrencySuite } from '../helpers/store-concurrency.js';
import { FIELD_CASES, keyFileWith } from '../helpers/field-cases.js';
import { AdminService } from '../../src/admin/service.js';
import { findCompanyRecordProblems, findKeyRecordProblems } from '../../src/config/fields.js';

const now = () => isoSeconds(Date.now());

function company(id: string, over: Partial<Company> = {}): Company {
  return {
    id,
    name: id,
    tier: 'free',
    status: 'active',
    apiAccess: true,
    createdAt: now(),
    updatedAt: now(),
    scopes: null,
    limits: null,
    ...over,
  };
}

function key(id: string, companyId: string, over: Partial<KeyRecord> = {}): KeyRecord {
  const k = generateApiKey('live');
  return {
    id,
    companyId,
    hash: hashApiKey(k),
    prefix: k.slice(0, 14),
    label: null,
    environment: 'live',
    createdAt: now(),
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
    ...over,
  };
}

/** The one contract every writable KeyStore must meet. */
function writableContract(
  name: string,
  make: () => Promise<KeyStore>,
  teardown: () => Promise<void> = async () => {},
) {
  describe(`KeyStore contract: ${name}`, () => {
    let store: KeyStore;
    before(async () => {
      store = await make();
    });
    after(async () => {
      await store.close();
      await teardown();
    });

    test('companies: create, duplicate, get, list, update, unknown', async () => {
      assert.equal(await store.createCompany(company('c-a')), true);
      assert.equal(await store.createCompany(company('c-a', { name: 'other' })), false);
      assert.equal((await store.getCompany('c-a'))?.name, 'c-a', 'a duplicate create changes nothing');
      await store.createCompany(company('c-b', { apiAccess: false, status: 'pending' }));
      const b = await store.getCompany('c-b');
      assert.equal(b?.apiAccess, false);
      assert.equal(b?.status, 'pending');
      assert.deepEqual(
        (await store.listCompanies()).map((c) => c.id).filter((id) => id.startsWith('c-')),
        ['c-a', 'c-b'],
      );
      const change = await store.updateCompany(
        'c-b',
        { status: 'active', apiAccess: true },
        '2030-01-01T00:00:00Z',
      );
      assert.deepEqual(change?.before, b, 'before: the company right before this write');
      const up = change?.after;
      assert.equal(up?.status, 'active');
      assert.equal(up?.apiAccess, true);
      assert.equal(up?.tier, 'free', 'fields outside the patch are kept');
      assert.equal(up?.updatedAt, '2030-01-01T00:00:00Z');
      assert.deepEqual(await store.getCompany('c-b'), up);
      const older = await store.updateCompany('c-b', { name: 'B' }, '2029-01-01T00:00:00Z');
      assert.equal(older?.after.updatedAt, '2030-01-01T00:00:00Z', 'updatedAt never moves back');
      assert.equal(await store.updateCompany('nope', { tier: 'x' }, now()), null);
      assert.equal(await store.getCompany('nope'), null);
    });

    test('keys: create, find by hash and id, list, update, touch', async () => {
      await store.createCompany(company('k-co'));
      const rec = key('k1', 'k-co', { label: 'primary', expiresAt: '2099-01-01T00:00:00Z' });
      assert.deepEqual(await store.createKey(rec, 0, now()), { ok: true });
      assert.deepEqual(await store.findKeyByHash(rec.hash), rec);
      assert.deepEqual(await store.getKey('k1'), rec);
      assert.equal(await store.findKeyByHash('0'.repeat(64)), null);
      assert.equal(await store.getKey('missing'), null);
      const updated = await store.updateKey('k1', { exposedAt: '2030-01-01T00:00:00Z' });
      assert.equal(updated?.exposedAt, '2030-01-01T00:00:00Z');
      assert.equal((await store.findKeyByHash(rec.hash))?.exposedAt, '2030-01-01T00:00:00Z');
      assert.equal(await store.updateKey('missing', { revokedAt: now() }), null);
      await store.touchKey(rec, '2030-01-02T00:00:00Z');
      assert.equal((await store.getKey('k1'))?.lastUsedAt, '2030-01-02T00:00:00Z');
      await store.createKey(key('k0', 'k-co', { createdAt: '2000-01-01T00:00:00Z' }), 0, now());
      assert.deepEqual(
        (await store.listKeys('k-co')).map((k) => k.id),
        ['k0', 'k1'],
        'oldest first',
      );
      assert.deepEqual(await store.createKey(key('kx', 'no-such-co'), 0, now()), {
        ok: false,
        reason: 'company_not_found',
      });
    });

    test('scopes and limits: stored whole, null by default, only the patched field written', async () => {
      const scopes = [{ route: '/notify/v1', methods: ['POST'], paths: ['/notify/v1/otps'] }];
      const limits = [
        { points: 10, duration: 1 },
        { points: 600, duration: 60 },
      ];
      await store.createCompany(company('sc-co', { scopes, limits }));
      const c = await store.getCompany('sc-co');
      assert.deepEqual([c?.scopes, c?.limits], [scopes, limits]);
      await store.createCompany(company('sc-none'));
      assert.deepEqual(
        [(await store.getCompany('sc-none'))?.scopes, (await store.getCompany('sc-none'))?.limits],
        [null, null],
      );
      // Two writers of different fields at once: both apply (each writes only its field).
      const [s1, s2] = await Promise.all([
        store.updateCompany('sc-co', { scopes: [{ route: '/other' }] }, now()),
        store.updateCompany('sc-co', { limits: null }, now()),
      ]);
      assert.ok(s1 && s2);
      const both = await store.getCompany('sc-co');
      assert.deepEqual([both?.scopes, both?.limits], [[{ route: '/other' }], null]);
      // Keys: null by default; set and cleared by updateKey; other fields kept.
      await store.createKey(key('sc-k', 'sc-co', { label: 'kept' }), 0, now());
      const k0 = await store.getKey('sc-k');
      assert.deepEqual([k0?.scopes, k0?.limits], [null, null]);
      const k1 = await store.updateKey('sc-k', { scopes, limits: [{ points: 5, duration: 60 }] });
      assert.deepEqual([k1?.scopes, k1?.limits, k1?.label], [scopes, [{ points: 5, duration: 60 }], 'kept']);
      assert.deepEqual((await store.findKeyByHash(k1!.hash))?.scopes, scopes);
      const k2 = await store.updateKey('sc-k', { scopes: null });
      assert.deepEqual([k2?.scopes, k2?.limits], [null, [{ points: 5, duration: 60 }]]);
      // An empty list is kept as such: no route at all (not "every route").
      assert.deepEqual((await store.updateKey('sc-k', { scopes: [] }))?.scopes, []);
    });

    test('the active-key cap counts only unrevoked, unexpired keys; 0 = no cap', async () => {
      await store.createCompany(company('cap-co'));
      assert.deepEqual(await store.createKey(key('cap1', 'cap-co'), 2, now()), { ok: true });
      assert.deepEqual(await store.createKey(key('cap2', 'cap-co'), 2, now()), { ok: true });
      assert.deepEqual(await store.createKey(key('cap3', 'cap-co'), 2, now()), {
        ok: false,
        reason: 'too_many_keys',
      });
      assert.equal(await store.getKey('cap3'), null, 'a refused create stores nothing');
      await store.updateKey('cap1', { revokedAt: isoSeconds(Date.now() - 1000) });
      assert.deepEqual(await store.createKey(key('cap3', 'cap-co'), 2, now()), { ok: true });
      // A key revoked in the future (rotation grace period) still counts until then.
      await store.updateKey('cap2', { revokedAt: isoSeconds(Date.now() + 3_600_000) });
      assert.deepEqual(await store.createKey(key('cap4', 'cap-co'), 2, now()), {
        ok: false,
        reason: 'too_many_keys',
      });
      assert.deepEqual(await store.createKey(key('cap4', 'cap-co'), 0, now()), { ok: true });
      // An expired key frees its slot.
      await store.createCompany(company('exp-co'));
      await store.createKey(key('e1', 'exp-co', { expiresAt: isoSeconds(Date.now() + 1000) }), 1, now());
      assert.deepEqual(await store.createKey(key('e2', 'exp-co'), 1, now()), {
        ok: false,
        reason: 'too_many_keys',
      });
      assert.deepEqual(await store.createKey(key('e2', 'exp-co'), 1, isoSeconds(Date.now() + 2000)), {
        ok: true,
      });
    });

    test('disabledAt: set and cleared (reversible, unlike revokedAt), nothing else written; a disabled key keeps its place under the cap', async () => {
      await store.createCompany(company('dis-co'));
      const rec = key('dis1', 'dis-co', { label: 'kept' });
      assert.deepEqual(await store.createKey(rec, 1, now()), { ok: true });
      const off = await store.updateKey('dis1', { disabledAt: '2030-01-01T00:00:00Z' });
      assert.equal(off?.disabledAt, '2030-01-01T00:00:00Z');
      assert.deepEqual((await store.findKeyByHash(rec.hash))?.disabledAt, '2030-01-01T00:00:00Z');
      assert.deepEqual(
        [off?.label, off?.revokedAt, off?.expiresAt],
        ['kept', null, null],
        'only the patched field is written',
      );
      assert.deepEqual(await store.createKey(key('dis2', 'dis-co'), 1, now()), {
        ok: false,
        reason: 'too_many_keys',
      });
      const on = await store.updateKey('dis1', { disabledAt: null });
      assert.equal(on?.disabledAt ?? null, null);
      assert.equal((await store.findKeyByHash(rec.hash))?.disabledAt ?? null, null);
    });

    test('audit: newest first, limit, filter by company', async () => {
      for (let i = 0; i < 5; i++)
        await store.appendAudit({ at: now(), event: `e${i}`, companyId: i % 2 ? 'odd' : 'even' });
      const last = await store.readAudit({ limit: 2 });
      assert.deepEqual(
        last.map((e) => e.event),
        ['e4', 'e3'],
      );
      assert.deepEqual(
        (await store.readAudit({ limit: 10, companyId: 'odd' })).map((e) => e.event),
        ['e3', 'e1'],
      );
      assert.ok(last.every((e) => typeof e.id === 'string'));
    });

    auditQueryContract(() => store, name);
    auditPagingContract(() => store, name);

    test('publish reaches subscribers', async () => {
      const got: Invalidation[] = [];
      store.subscribe((m) => got.push(m));
      await new Promise((r) => setTimeout(r, 50));
      await store.publish({ kind: 'company', id: 'x' });
      await eventually(async () => got.some((m) => m.kind === 'company' && m.id === 'x'), 1000);
    });

    test('ping', async () => {
      await store.ping();
    });

    test('field rules: every record the store hands back passes the one schema per field', async () => {
      const svc = new AdminService({
        store,
        tiers: new Set(['free']),
        maxActiveKeys: 0,
        rotationAgeDays: 90,
      });
      assert.ok((await svc.createCompany({ id: 'fr-co', name: ' Field Rules ', tier: 'free' })).ok);
      const k = await svc.createKey('fr-co', {
        label: 'a',
        environment: 'test',
        expiresAt: '2099-01-01T00:00:00Z',
      });
      assert.ok(k.ok);
      assert.ok((await svc.rotateKey(k.value.id, { gracePeriodSeconds: 60 })).ok);
      await assertSoundRecords(store, 'fr-co');
    });

    storeConcurrencySuite(() => store);
  });
}

/** Every company and key of `companyId` as the store hands them back passes config/fields.ts. */
async function assertSoundRecords(store: KeyStore, companyId: string): Promise<void> {
  const c = await store.getCompany(companyId);
  assert.deepEqual(findCompanyRecordProblems(c!), [], `company ${companyId}`);
  const keys = await store.listKeys(companyId);
  assert.ok(keys.length > 0);
  for (const k of keys) assert.deepEqual(findKeyRecordProblems(k), [], `key ${k.id}`);
}

writableContract('memory', async () => new MemoryKeyStore());

let redis: TestRedis;
writableContract(
  'redis',
  async () => {
    redis = await startRedis();
    const cfg = { url: redis.url, keyPrefix: 'ct:', commandTimeoutMs: 1000, connectTimeoutMs: 2000 };
    const client = createRedisClient(cfg);
    // No offline queue by design (bounded answers when Redis is down): wait for the connection.
    assert.ok(await waitForReady(client, 3000), 'redis client did not become ready');
    return new RedisKeyStore(client, createRedisClient(cfg), 'ct:');
  },
  async () => redis?.stop(),
);

describe('KeyStore contract: file (read-only, hot reload)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ng-keys-'));
  const path = join(dir, 'keys.yaml');
  const k1 = generateApiKey('live');
  const k2 = generateApiKey('live');
  const tiers = new Set(['free', 'standard']);
  const reloads: ({ ok: true } | { ok: false; problems: string[] })[] = [];
  let store: FileKeyStore;
  const yaml = (keys: string) => `companies:
  - id: acme
    name: Acme
    tier: standard
    scopes:
      - route: /notify/v1
        methods: [POST]
    limits:
      - { points: 10, duration: 1 }
      - { points: 600, duration: 60 }
    keys:
${keys}
  - id: off
    tier: free
    status: suspended
    apiAccess: false
`;
  const entry = (id: string, k: string, extra = '') =>
    `      - id: ${id}\n        hash: ${hashApiKey(k)}\n        label: ${id}\n${extra}`;

  before(() => {
    writeFileSync(
      path,
      yaml(
        entry(
          'acme-1',
          k1,
          '        scopes:\n          - { route: /notify/v1, paths: [/notify/v1/otps] }\n        limits: [{ points: 2, duration: 60 }]\n',
        ),
      ),
    );
    store = new FileKeyStore({
      path,
      knownTiers: tiers,
      knownRoutes: [{ prefix: '/notify/v1' }],
      watchIntervalMs: 50,
      onReload: (r) => reloads.push(r),
    });
  });
  after(async () => store.close());

  test('reads companies and keys from the file', async () => {
    assert.equal((await store.findKeyByHash(hashApiKey(k1)))?.id, 'acme-1');
    assert.equal((await store.getCompany('acme'))?.tier, 'standard');
    const off = await store.getCompany('off');
    assert.equal(off?.status, 'suspended');
    assert.equal(off?.apiAccess, false);
    assert.deepEqual(
      (await store.listCompanies()).map((c) => c.id),
      ['acme', 'off'],
    );
    const acme = await store.getCompany('acme');
    assert.deepEqual(acme?.scopes, [{ route: '/notify/v1', methods: ['POST'] }]);
    assert.deepEqual(acme?.limits, [
      { points: 10, duration: 1 },
      { points: 600, duration: 60 },
    ]);
    assert.deepEqual([off?.scopes, off?.limits], [null, null]);
    const k = await store.findKeyByHash(hashApiKey(k1));
    assert.deepEqual(k?.scopes, [{ route: '/notify/v1', paths: ['/notify/v1/otps'] }]);
    assert.deepEqual(k?.limits, [{ points: 2, duration: 60 }]);
  });

  test('parseKeyFile refuses scopes outside the configured routes and bad windows, naming the place', () => {
    const r = parseKeyFile(
      `companies:
  - id: a
    tier: free
    scopes: [{ route: /nope }, { route: /notify/v1, methods: [TRACE] }]
    limits: [{ points: 1, duration: 60 }, { points: 2, duration: 60 }]
    keys:
      - id: k
        hash: ${hashApiKey(k2)}
        scopes: [{ route: /notify/v1, paths: [/elsewhere] }]
`,
      tiers,
      [{ prefix: '/notify/v1' }],
    );
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    assert.match(text, /companies\.0\.scopes\.1\.methods\.0: is always refused/);
    assert.match(text, /companies\.0\.limits: two windows have the same duration/);
    // Route checks need a schema-valid file; this one is not, so they are checked apart:
    const routes = parseKeyFile(
      `companies:\n  - id: a\n    tier: free\n    scopes: [{ route: /nope }]\n    keys:\n      - id: k\n        hash: ${hashApiKey(k2)}\n        scopes: [{ route: /notify/v1, paths: [/elsewhere] }]\n`,
      tiers,
      [{ prefix: '/notify/v1' }],
    );
    const t2 = routes.ok ? '' : routes.problems.join('\n');
    assert.match(t2, /companies\.0\.scopes\.0\.route: not a configured route prefix \(\/notify\/v1\)/);
    assert.match(t2, /companies\.0\.keys\.0\.scopes\.0\.paths\.0: must be \/notify\/v1 or a path under it/);
  });

  // The audit trail of a file store lives in the gateway's memory (written by the gateway itself).
  auditQueryContract(() => store, 'file');

  test('writes are refused with StoreReadOnlyError', async () => {
    await assert.rejects(store.createCompany(company('x')), StoreReadOnlyError);
    await assert.rejects(store.createKey(key('x', 'acme'), 0, now()), StoreReadOnlyError);
    await assert.rejects(store.updateCompany('acme', { tier: 'free' }, now()), StoreReadOnlyError);
    await assert.rejects(store.updateKey('acme-1', { revokedAt: now() }), StoreReadOnlyError);
  });

  test('reloads on change (atomic rename like a Kubernetes Secret update); a broken file keeps the last good one', async () => {
    const invalidations: Invalidation[] = [];
    store.subscribe((m) => invalidations.push(m));
    const tmp = join(dir, 'keys.yaml.tmp');
    writeFileSync(
      tmp,
      yaml(entry('acme-1', k1, '        revokedAt: 2020-01-01T00:00:00Z\n') + entry('acme-2', k2)),
    );
    renameSync(tmp, path);
    await eventually(async () => (await store.findKeyByHash(hashApiKey(k2))) !== null, 3000);
    assert.equal((await store.findKeyByHash(hashApiKey(k1)))?.revokedAt, '2020-01-01T00:00:00Z');
    assert.ok(
      invalidations.some((m) => m.kind === 'all'),
      'caches are told to drop everything',
    );

    const before = reloads.length;
    writeFileSync(path, 'companies:\n  - id: acme\n    tier: gold\n    keys: [{ id: x, hash: nothex }]\n');
    await eventually(async () => reloads.length > before, 3000);
    const bad = reloads.at(-1)!;
    assert.equal(bad.ok, false);
    const problems = bad.ok ? '' : bad.problems.join('\n');
    assert.match(problems, /companies\.0\.keys\.0\.hash/);
    assert.ok((await store.findKeyByHash(hashApiKey(k2))) !== null, 'the last good content stays');
  });

  test('a replacement that lands right after start is not missed (no baseline race)', async () => {
    // fs.watchFile took its baseline stat asynchronously: a file replaced before that stat ran
    // became the baseline, and the store kept the old content forever (missed in ~40% of tries).
    for (let i = 0; i < 20; i++) {
      const p = join(dir, `race-${i}.yaml`);
      writeFileSync(p, yaml(entry('acme-1', k1)));
      const s = new FileKeyStore({ path: p, knownTiers: tiers, watchIntervalMs: 20 });
      try {
        writeFileSync(`${p}.tmp`, yaml(entry('acme-1', k1) + entry('acme-2', k2)));
        renameSync(`${p}.tmp`, p); // same tick as the constructor, like an update racing the start
        // 20 ms polls: the bound only caps a failure, a pass returns at the first reload.
        await eventually(async () => (await s.findKeyByHash(hashApiKey(k2))) !== null, 3000);
      } finally {
        await s.close();
      }
    }
  });

  test('field rules: what the file store hands back passes the one schema per field (createdAt too, never 1970)', async () => {
    await assertSoundRecords(store, 'acme');
    const k = await store.findKeyByHash(hashApiKey(k1));
    assert.ok(k && Math.abs(Date.parse(k.createdAt) - Date.now()) < 60_000, k?.createdAt);
  });

  test('field rules: each worst value of the table is refused by a reload, the last good content kept', async () => {
    const before = reloads.length;
    for (const c of FIELD_CASES) {
      const text =
        c.place === 'company' ? keyFileWith({ [c.field]: c.value }) : keyFileWith({}, { [c.field]: c.value });
      writeFileSync(join(dir, 'keys.yaml.tmp'), text);
      renameSync(join(dir, 'keys.yaml.tmp'), path);
      store.reload();
      const r = reloads.at(-1)!;
      assert.equal(r.ok, false, c.what);
      assert.ok(!r.ok && r.problems.some((p) => p.includes(c.message)), `${c.what}: ${JSON.stringify(r)}`);
      assert.ok(
        (await store.findKeyByHash(hashApiKey(k2))) !== null,
        `${c.what}: the last good content went`,
      );
    }
    assert.ok(reloads.length >= before + FIELD_CASES.length);
  });

  test('parseKeyFile lists every problem without echoing a hash', () => {
    const h = hashApiKey(k1);
    const r = parseKeyFile(
      `companies:\n  - id: a\n    tier: nope\n    keys:\n      - { id: k, hash: ${h} }\n      - { id: k, hash: ${h} }\n  - id: a\n    tier: free\n`,
      tiers,
    );
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    assert.match(text, /unknown tier "nope"/);
    assert.match(text, /duplicate key id k/);
    assert.match(text, /same key hash appears twice/);
    assert.match(text, /duplicate company id a/);
    assert.ok(!text.includes(h));
  });
});

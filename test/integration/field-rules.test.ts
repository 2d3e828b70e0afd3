import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { applyKeyFile, readStoreState } from '../../src/admin/apply.js';
import { AdminService } from '../../src/admin/service.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { FileKeyStore, parseKeyFile, type FileReloadResult } from '../../src/store/file-store.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import type { KeyRecord } from '../../src/store/types.js';
import { KEY_MATERIAL_MESSAGE } from '../../src/config/fields.js';
import { validateConfig } from '../../src/config/load.js';
import { isoSeconds } from '../../src/time.js';
import { FIELD_CASES, keyFileWith, PASTED_KEY, type FieldCase } from '../helpers/field-cases.js';
import { runCli } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// INVARIANTS 15: one rule per field, at every way in. The same worst values (test/helpers/
// field-cases.ts) go through the admin API, the CLI, the key file, a key file reload and
// `apply -f`, and each is refused with the same message; INVARIANTS 1: whatever a store holds,
// nothing the gateway adds itself (trusted headers, log fields) carries key material.

const TIERS = new Set(['free', 'standard']);
const ROUTES = [{ prefix: '/notify/v1' }];
const fileText = (c: FieldCase) =>
  c.place === 'company' ? keyFileWith({ [c.field]: c.value }) : keyFileWith({}, { [c.field]: c.value });

describe('one rule per field: the worst values through every way in', () => {
  test('the key file refuses each, naming the field with the rule’s message, never echoing a key', () => {
    for (const c of FIELD_CASES) {
      const r = parseKeyFile(fileText(c), TIERS, ROUTES);
      assert.equal(r.ok, false, c.what);
      const text = r.ok ? '' : r.problems.join('\n');
      const path = c.place === 'company' ? `companies.0.${c.field}` : `companies.0.keys.0.${c.field}`;
      assert.ok(text.includes(`${path}: ${c.message}`), `${c.what}:\n${text}`);
      assert.ok(!text.includes(PASTED_KEY) && !text.includes(PASTED_KEY.slice(8)), `${c.what}: echoed`);
    }
  });

  test('the admin API (and the CLI, which shares its service) refuses each field it takes, with the same message', async () => {
    const svc = new AdminService({
      store: new MemoryKeyStore(),
      tiers: TIERS,
      maxActiveKeys: 2,
      rotationAgeDays: 90,
    });
    assert.ok((await svc.createCompany({ id: 'acme' })).ok);
    const taken: Record<FieldCase['place'], string[]> = {
      company: ['id', 'name', 'tier'],
      key: ['label', 'environment', 'expiresAt'],
    };
    let tried = 0;
    for (const c of FIELD_CASES) {
      if (!taken[c.place].includes(c.field)) continue;
      tried++;
      const r =
        c.place === 'company'
          ? await svc.createCompany({ id: 'other', [c.field]: c.value })
          : await svc.createKey('acme', { [c.field]: c.value });
      assert.equal(r.ok, false, c.what);
      const details = r.ok ? '' : r.details;
      assert.ok(details.includes(`${c.field}: ${c.message}`), `${c.what}: ${details}`);
      assert.ok(!details.includes(PASTED_KEY.slice(8)), `${c.what}: echoed`);
      if (c.place === 'company') {
        const patch = c.field === 'id' ? null : await svc.updateCompany('acme', { [c.field]: c.value });
        if (patch) assert.equal(patch.ok, false, `${c.what} (PATCH)`);
      }
    }
    assert.ok(tried >= 8);
    assert.equal((await svc.listCompanies()).ok && (await svc.listKeys('acme')).ok, true);
    const keys = await svc.listKeys('acme');
    assert.deepEqual(keys.ok ? keys.value : null, [], 'nothing was created');
  });

  test('apply -f refuses each, and changes nothing in the store', async () => {
    const store = new MemoryKeyStore();
    const svc = new AdminService({ store, tiers: TIERS, maxActiveKeys: 2, rotationAgeDays: 90 });
    assert.ok((await svc.createCompany({ id: 'acme', tier: 'free' })).ok);
    const before = JSON.stringify(await readStoreState(store));
    for (const c of FIELD_CASES) {
      const r = await applyKeyFile(fileText(c), {
        store,
        tiers: TIERS,
        routes: ROUTES,
        maxActiveKeys: 2,
        actor: 'test',
        audit: (e) => svc.audit(e),
        prune: true,
        dryRun: false,
      });
      assert.equal(r.ok, false, c.what);
      assert.ok(!r.ok && r.problems.some((p) => p.includes(c.message)), c.what);
    }
    assert.equal(JSON.stringify(await readStoreState(store)), before, 'a refused file changed the store');
  });

  test('a key in a scope path or a route prefix is refused at every way in, never echoed', async () => {
    // Scopes are echoed in answers, audit entries and logs like ids and labels: the same rule.
    const scopes = [{ route: '/notify/v1', paths: [`/notify/v1/otps/${PASTED_KEY}`] }];
    const lower = [{ route: '/notify/v1', paths: [`/notify/v1/${PASTED_KEY.slice(8).toLowerCase()}`] }];
    const refused = (text: string, what: string) => {
      assert.ok(text.includes(`paths.0: ${KEY_MATERIAL_MESSAGE}`), `${what}: ${text}`);
      assert.ok(!text.includes(PASTED_KEY.slice(8, 32)), `${what}: echoed`);
    };
    // The admin API, the CLI and the console share the service.
    const store = new MemoryKeyStore();
    const svc = new AdminService({
      store,
      tiers: TIERS,
      maxActiveKeys: 2,
      rotationAgeDays: 90,
      routes: ROUTES,
    });
    assert.ok((await svc.createCompany({ id: 'acme' })).ok);
    const key = await svc.createKey('acme', {});
    assert.ok(key.ok);
    for (const s of [scopes, lower]) {
      const company = await svc.updateCompany('acme', { scopes: s });
      refused(company.ok ? '' : company.details, 'company PATCH');
      const k = await svc.updateKey(key.value.id, { scopes: s });
      refused(k.ok ? '' : k.details, 'key PATCH');
      const c = await svc.createCompany({ id: 'other', scopes: s });
      refused(c.ok ? '' : c.details, 'company create');
    }
    // The key file and apply -f.
    const file = keyFileWith({ scopes }, {});
    const parsed = parseKeyFile(file, TIERS, ROUTES);
    refused(parsed.ok ? '' : parsed.problems.join('\n'), 'key file');
    const applied = await applyKeyFile(file, {
      store,
      tiers: TIERS,
      routes: ROUTES,
      maxActiveKeys: 2,
      actor: 'test',
      audit: (e) => svc.audit(e),
      prune: false,
      dryRun: false,
    });
    refused(applied.ok ? '' : applied.problems.join('\n'), 'apply -f');
    // The config's route prefixes (they reach log lines and metric labels).
    const cfg = validateConfig({ routes: [{ prefix: `/v1/${PASTED_KEY}`, target: 'http://127.0.0.1:9' }] });
    assert.ok(!cfg.ok && cfg.problems.some((p) => p.includes(KEY_MATERIAL_MESSAGE)), 'config');
    const audit = JSON.stringify(await store.readAudit({ limit: 100 }));
    assert.ok(
      !audit.includes(PASTED_KEY.slice(8, 32)) &&
        !audit.toLowerCase().includes(PASTED_KEY.slice(8, 32).toLowerCase()),
    );
  });

  test('apply -f of a key without createdAt stores the time it stored it, not 1970', async () => {
    const store = new MemoryKeyStore();
    const svc = new AdminService({ store, tiers: TIERS, maxActiveKeys: 2, rotationAgeDays: 90 });
    const r = await applyKeyFile(keyFileWith({}, { prefix: 'nk_live_AbC123', environment: undefined }), {
      store,
      tiers: TIERS,
      maxActiveKeys: 2,
      actor: 'test',
      audit: (e) => svc.audit(e),
      prune: false,
      dryRun: false,
    });
    assert.ok(r.ok && r.failures.length === 0, JSON.stringify(r));
    const [k] = await store.listKeys('acme');
    assert.ok(Math.abs(Date.parse(k!.createdAt) - Date.now()) < 5000, k!.createdAt);
    assert.equal(k!.environment, 'live', 'taken from the prefix');
  });

  test('the CLI refuses each value keys generate takes, exit 2, with the same message', async () => {
    for (const c of FIELD_CASES) {
      const flag = { id: '--id', label: '--label', environment: '--environment' }[c.field];
      if (c.place !== 'key' || !flag) continue;
      const r = await runCli(['keys', 'generate', flag, String(c.value)]);
      assert.equal(r.code, 2, `${c.what}: ${r.stdout}`);
      assert.ok(r.stderr.includes(`${flag}: ${c.message}`), `${c.what}: ${r.stderr}`);
      assert.equal(r.stdout, '', `${c.what}: no key printed`);
    }
  });

  test('a key file reload with each keeps the last good content and reports the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-fields-'));
    const path = join(dir, 'keys.yaml');
    const good = generateApiKey('live');
    writeFileSync(path, keyFileWith({}, { hash: hashApiKey(good), label: 'primary' }));
    const reloads: FileReloadResult[] = [];
    const store = new FileKeyStore({
      path,
      knownTiers: TIERS,
      watchIntervalMs: 0,
      onReload: (r) => reloads.push(r),
    });
    try {
      for (const c of FIELD_CASES) {
        writeFileSync(`${path}.tmp`, fileText(c));
        renameSync(`${path}.tmp`, path);
        store.reload();
        const r = reloads.at(-1)!;
        assert.equal(r.ok, false, c.what);
        assert.ok(!r.ok && r.problems.some((p) => p.includes(c.message)), c.what);
        const kept = await store.findKeyByHash(hashApiKey(good));
        assert.equal(kept?.label, 'primary', `${c.what}: the last good content went`);
      }
    } finally {
      await store.close();
    }
  });
});

describe('YAML timestamps in the key file: never rolled over, a string in the one shape or refused', () => {
  const hash = hashApiKey(generateApiKey('live'));
  const file = (lines: string, head = '') =>
    `${head}companies:\n  - id: acme\n    tier: free\n    keys:\n      - id: k1\n        hash: ${hash}\n${lines}`;
  const refused = (text: string, what: string, pattern: RegExp) => {
    const r = parseKeyFile(text, TIERS);
    assert.equal(r.ok, false, `${what}: ${r.ok ? JSON.stringify(r.keys) : ''}`);
    assert.match(r.ok ? '' : r.problems.join('\n'), pattern, what);
  };

  test('a %YAML 1.1 document: an impossible date is refused, not turned into March 2', () => {
    refused(
      file('        expiresAt: 2027-02-30T00:00:00Z\n', '%YAML 1.1\n---\n'),
      '1.1 Feb 30',
      /expiresAt: must be a real UTC instant/,
    );
    refused(
      file('        expiresAt: 2027-02-30\n', '%YAML 1.1\n---\n'),
      '1.1 date only',
      /expiresAt: must be a UTC timestamp/,
    );
    refused(
      file('        revokedAt: 2026-01-01 10:00:00.5\n', '%YAML 1.1\n---\n'),
      '1.1 space form',
      /revokedAt: must be a UTC timestamp/,
    );
    refused(
      file('        createdAt: 2026-01-01T10:00:00.500Z\n', '%YAML 1.1\n---\n'),
      'milliseconds',
      /createdAt: must be a UTC timestamp/,
    );
  });

  test('a !!timestamp tag is refused (the core schema does not know it), also on a valid instant', () => {
    refused(
      file('        expiresAt: !!timestamp 2027-02-30T00:00:00Z\n'),
      'tagged Feb 30',
      /YAML: Unresolved tag/,
    );
    refused(
      file('        expiresAt: !!timestamp 2027-01-01T00:00:00Z\n'),
      'tagged valid',
      /YAML: Unresolved tag/,
    );
    refused(
      file('        expiresAt: !!timestamp 2027-01-01T00:00:00Z\n', '%YAML 1.1\n---\n'),
      'tagged 1.1',
      /YAML: Unresolved tag/,
    );
  });

  test('the canonical string passes, as a string, in a %YAML 1.1 document too', () => {
    for (const head of ['', '%YAML 1.1\n---\n']) {
      const r = parseKeyFile(
        file('        expiresAt: 2027-01-01T00:00:00Z\n        createdAt: "2026-01-01T00:00:00Z"\n', head),
        TIERS,
      );
      assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
      assert.deepEqual(
        [r.keys[0]!.expiresAt, r.keys[0]!.createdAt],
        ['2027-01-01T00:00:00Z', '2026-01-01T00:00:00Z'],
      );
    }
  });
});

describe('whatever a store holds, nothing the gateway adds carries key material (INVARIANTS 1)', () => {
  let t: TestGateway;
  let upstream: RecordingUpstream;
  const store = new MemoryKeyStore();
  const key = generateApiKey('live');
  const at = isoSeconds();
  const record = (over: Partial<KeyRecord>): KeyRecord => ({
    id: 'k1',
    companyId: 'acme',
    hash: hashApiKey(key),
    prefix: key.slice(0, 14),
    label: null,
    environment: 'live',
    createdAt: at,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
    ...over,
  });
  const acme = {
    id: 'acme',
    name: 'Acme',
    tier: 'free',
    status: 'active' as const,
    apiAccess: true,
    createdAt: at,
    updatedAt: at,
    scopes: null,
    limits: null,
  };

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({ routes: [{ prefix: '/notify/v1', target: upstream.url }] }, { store });
  });
  after(async () => {
    await t.close();
    await upstream.close();
  });

  for (const [what, keys, companies, fields] of [
    ['a key as the key id', [record({ id: PASTED_KEY })], [acme], ['id']],
    [
      'a key as the company id',
      [record({ companyId: PASTED_KEY })],
      [{ ...acme, id: PASTED_KEY }],
      ['companyId'],
    ],
    ['a key in the company name', [record({})], [{ ...acme, name: `x ${PASTED_KEY}` }], ['name']],
  ] as const) {
    test(`${what}: 401, nothing forwarded, the key in no log line, the fields named at error`, async () => {
      store.replaceContents(
        companies.map((c) => ({ ...c })),
        keys.map((k) => ({ ...k })),
      );
      await store.publish({ kind: 'all' });
      const before = upstream.received.length;
      const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/otps`, { headers: { 'X-API-Key': key } });
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), { error: 'Unauthorized', details: 'Invalid API key' });
      assert.equal(upstream.received.length, before, 'forwarded');
      await eventually(async () => t.logs().some((l) => l.msg === 'request' && l.status === 401), 2000);
      const line = t.logs().findLast((l) => l.level === 'error' && Array.isArray(l.fields));
      assert.deepEqual(line?.fields, [...fields], what);
      assert.match(String(line?.msg), /record breaks the field rules/);
      for (const secret of [PASTED_KEY, PASTED_KEY.slice(8), key.slice(8)])
        assert.ok(!t.logText().includes(secret), `${what}: a log line holds key material`);
    });
  }

  test('the same key with a sound record is served, with its own id in the trusted headers', async () => {
    store.replaceContents([{ ...acme }], [record({})]);
    await store.publish({ kind: 'all' });
    const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/otps`, { headers: { 'X-API-Key': key } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const got = upstream.received.at(-1)!;
    assert.deepEqual([got.headers['x-company-id'], got.headers['x-api-key-id']], ['acme', 'k1']);
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../../src/admin/roles.js';
import { loadConfig } from '../../src/config/load.js';
import { adminApi, type AdminCall } from '../helpers/admin.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const TOKENS = {
  reader: 'reader-token-0123456789abcdef',
  keyops: 'keyops-token-0123456789abcdef',
  root: 'root-token-0123456789abcdef00',
};

describe('admin identities and roles', () => {
  let t: TestGateway;
  let as: Record<'reader' | 'keyops' | 'root' | 'legacy', AdminCall>;
  let keyId: string;

  before(async () => {
    t = await startTestGateway({
      store: { type: 'memory' },
      keys: { maxActiveKeys: 0 },
      admin: {
        tokens: [
          { name: 'reader', role: 'read', sha256: sha256Hex(TOKENS.reader) },
          { name: 'keyops', role: 'keys', sha256: `sha256:${sha256Hex(TOKENS.keyops).toUpperCase()}` },
          { name: 'root', role: 'admin', sha256: sha256Hex(TOKENS.root) },
        ],
      },
    });
    as = {
      reader: adminApi(t.adminPort, TOKENS.reader),
      keyops: adminApi(t.adminPort, TOKENS.keyops),
      root: adminApi(t.adminPort, TOKENS.root),
      legacy: adminApi(t.adminPort, ADMIN_TOKEN),
    };
    const c = await as.root('POST', '/admin/v1/companies', { id: 'acme' });
    assert.equal(c.status, 201, c.text);
    const k = await as.root('POST', '/admin/v1/companies/acme/keys', {});
    keyId = k.body.id as unknown as string;
  });
  after(() => t.close());

  test('read routes: every role (and the single ADMIN_TOKEN) may read', async () => {
    const reads = [
      '/admin/v1/companies',
      '/admin/v1/companies/acme',
      '/admin/v1/companies/acme/keys',
      '/admin/v1/companies/acme/usage',
      `/admin/v1/keys/${keyId}`,
      '/admin/v1/audit',
      '/metrics',
    ];
    for (const who of ['reader', 'keyops', 'root', 'legacy'] as const) {
      for (const path of reads) assert.equal((await as[who]('GET', path)).status, 200, `${who} GET ${path}`);
    }
  });

  test('key routes: read gets 403 and nothing changes; keys and admin may', async () => {
    const denied = [
      await as.reader('POST', '/admin/v1/companies/acme/keys', {}),
      await as.reader('POST', `/admin/v1/keys/${keyId}/rotate`, {}),
      await as.reader('DELETE', `/admin/v1/keys/${keyId}`),
    ];
    for (const r of denied) {
      assert.equal(r.status, 403);
      assert.deepEqual(r.body, {
        error: 'Forbidden',
        details: 'this route needs the keys role; this token has read',
      });
    }
    assert.equal((await t.gw.store.listKeys('acme')).length, 1);
    assert.equal((await t.gw.store.getKey(keyId))?.revokedAt, null);
    const created = await as.keyops('POST', '/admin/v1/companies/acme/keys', { label: 'ops' });
    assert.equal(created.status, 201);
    const rotated = await as.keyops(
      'POST',
      `/admin/v1/keys/${created.body.id as unknown as string}/rotate`,
      {},
    );
    assert.equal(rotated.status, 201);
    assert.equal((await as.keyops('DELETE', `/admin/v1/keys/${keyId}`)).status, 200);
    assert.equal((await as.root('POST', '/admin/v1/companies/acme/keys', {})).status, 201);
  });

  test('company writes: read and keys get 403; admin and the single ADMIN_TOKEN may', async () => {
    for (const who of ['reader', 'keyops'] as const) {
      const c = await as[who]('POST', '/admin/v1/companies', { id: `by-${who}` });
      assert.equal(c.status, 403, who);
      assert.match(c.body.details as unknown as string, /needs the admin role/);
      assert.equal((await as[who]('PATCH', '/admin/v1/companies/acme', { tier: 'free' })).status, 403);
    }
    assert.equal(await t.gw.store.getCompany('by-reader'), null);
    assert.equal((await t.gw.store.getCompany('acme'))?.tier, 'free');
    assert.equal((await as.root('PATCH', '/admin/v1/companies/acme', { tier: 'standard' })).status, 200);
    assert.equal((await as.legacy('POST', '/admin/v1/companies', { id: 'by-legacy' })).status, 201);
  });

  test('an unknown token is 401; an unknown route is 404 for every role, and opens nothing', async () => {
    const r = await adminApi(t.adminPort, 'nope-0123456789abcdef0123')('GET', '/admin/v1/companies');
    assert.equal(r.status, 401);
    for (const who of ['reader', 'keyops', 'root', 'legacy'] as const) {
      assert.equal((await as[who]('GET', '/admin/v1/nothing-here')).status, 404, who);
      assert.equal((await as[who]('POST', '/admin/v1/nothing-here', {})).status, 404, who);
    }
    // The role is the matched route's, whatever the spelling Express accepts (case, trailing slash).
    for (const path of ['/ADMIN/V1/COMPANIES', '/admin/v1/companies/']) {
      assert.equal((await as.keyops('POST', path, { id: 'by-keyops' })).status, 403, path);
    }
    assert.equal(await t.gw.store.getCompany('by-keyops'), null);
  });

  test('every audit entry names its actor: the token name', async () => {
    const audit = await as.reader('GET', '/admin/v1/audit?limit=100');
    const byEvent = audit.list.map((e) => [e.event, e.actor]);
    assert.deepEqual(
      byEvent.filter(([e]) => e === 'company.created'),
      [
        ['company.created', 'admin'],
        ['company.created', 'root'],
      ],
    );
    assert.deepEqual(
      byEvent.filter(([e]) => e === 'key.created').map(([, a]) => a),
      ['root', 'keyops', 'root'],
    );
    assert.deepEqual(
      byEvent.find(([e]) => e === 'key.rotated'),
      ['key.rotated', 'keyops'],
    );
    assert.deepEqual(
      byEvent.find(([e]) => e === 'key.revoked'),
      ['key.revoked', 'keyops'],
    );
    assert.deepEqual(
      byEvent.find(([e]) => e === 'company.updated'),
      ['company.updated', 'root'],
    );
    for (const e of audit.list) assert.ok(e.actor, JSON.stringify(e));
  });
});

describe('ADMIN_TOKENS', () => {
  test('name:role:sha256 entries, comma-separated; each problem named', () => {
    const hash = sha256Hex('x'.repeat(20));
    const ok = loadConfig({
      env: { ADMIN_TOKENS: `ci:read:${hash}, ops:keys:sha256:${hash.toUpperCase()}` },
    });
    assert.ok(ok.ok, JSON.stringify(ok));
    assert.deepEqual(ok.config.admin.tokens, [
      { name: 'ci', role: 'read', sha256: hash },
      { name: 'ops', role: 'keys', sha256: hash },
    ]);
    const bad = loadConfig({
      env: { ADMIN_TOKENS: `ci:root:${hash},ci:read:abc`, ADMIN_TOKEN: 'y'.repeat(20) },
    });
    assert.ok(!bad.ok);
    const text = bad.problems.join('\n');
    assert.match(text, /admin\.tokens\.0\.role/);
    assert.match(text, /admin\.tokens\.1\.sha256/);
    const dup = loadConfig({ env: { ADMIN_TOKENS: `admin:read:${hash}`, ADMIN_TOKEN: 'y'.repeat(20) } });
    assert.ok(!dup.ok);
    assert.match(dup.problems.join('\n'), /duplicate token name admin/);
  });
});

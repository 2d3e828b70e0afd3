import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../../src/admin/roles.js';
import { adminApi, type AdminCall } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// F1 (attack report): a rotation dropped the old key's own scopes and limits, so a token with the
// `keys` role could turn a restricted key into an unrestricted one (only `admin` may PATCH them).
// Through a real gateway and a recording upstream: the rotated key is refused where the old one
// was, and nothing refused reaches the upstream.

const TOKENS = {
  keyops: 'keyops-token-0123456789abcdef',
  root: 'root-token-0123456789abcdef00',
};
const SCOPES = [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }];
const LIMITS = [{ points: 2, duration: 60 }];

describe('rotation keeps the key restrictions (F1)', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let keyops: AdminCall;
  let root: AdminCall;

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'memory' },
      keys: { maxActiveKeys: 0 },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      admin: {
        tokens: [
          { name: 'keyops', role: 'keys', sha256: sha256Hex(TOKENS.keyops) },
          { name: 'root', role: 'admin', sha256: sha256Hex(TOKENS.root) },
        ],
      },
    });
    keyops = adminApi(t.adminPort, TOKENS.keyops);
    root = adminApi(t.adminPort, TOKENS.root);
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });

  const call = (key: string, method: string, path: string) =>
    send(t.port, path, { method, headers: { 'X-API-Key': key } });

  test('a scoped, limited key rotated with a keys token: the new key is refused 403 outside its scope, 429 past its own limit, and the upstream sees none of those', async () => {
    assert.equal((await root('POST', '/admin/v1/companies', { id: 'f1-co', tier: 'standard' })).status, 201);
    const created = await root('POST', '/admin/v1/companies/f1-co/keys', {});
    assert.equal(created.status, 201, created.text);
    const oldId = created.body.id as unknown as string;
    const patch = await root('PATCH', `/admin/v1/keys/${oldId}`, { scopes: SCOPES, limits: LIMITS });
    assert.equal(patch.status, 200, patch.text);

    // The keys role cannot set restrictions itself: not by PATCH, not through the rotate body.
    assert.equal((await keyops('PATCH', `/admin/v1/keys/${oldId}`, { scopes: null })).status, 403);
    for (const body of [{ scopes: null }, { limits: null }, { scopes: null, gracePeriodSeconds: 60 }]) {
      const r = await keyops('POST', `/admin/v1/keys/${oldId}/rotate`, body);
      assert.equal(r.status, 400, `rotate with ${JSON.stringify(body)}: ${r.text}`);
    }

    const rotated = await keyops('POST', `/admin/v1/keys/${oldId}/rotate`, {});
    assert.equal(rotated.status, 201, rotated.text);
    const newId = rotated.body.id as unknown as string;
    const newKey = rotated.body.key as unknown as string;
    const view = await keyops('GET', `/admin/v1/keys/${newId}`);
    assert.deepEqual([view.body.scopes, view.body.limits], [SCOPES, LIMITS]);

    const before = upstream.received.length;
    // Outside its scope: another path, another method.
    assert.equal((await call(newKey, 'POST', '/notify/v1/otps')).status, 403);
    assert.equal((await call(newKey, 'GET', '/notify/v1/otps')).status, 403);
    assert.equal((await call(newKey, 'POST', '/notify/v1/health')).status, 403);
    assert.equal(upstream.received.length, before, 'a scope-refused request reached the upstream');
    // Inside its scope: its own limit of 2 per minute.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(newKey, 'GET', '/notify/v1/health')).status);
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    assert.deepEqual(
      upstream.received.slice(before).map((r) => `${r.method} ${r.url}`),
      ['GET /notify/v1/health', 'GET /notify/v1/health'],
      'the upstream saw a request outside the scope or past the limit',
    );
  });

  test('a rotated key in its grace period: PATCH of its restrictions answers 409 naming the successor and changes nothing; the successor takes it', async () => {
    assert.equal(
      (await root('POST', '/admin/v1/companies', { id: 'f1-grace', tier: 'standard' })).status,
      201,
    );
    const created = await root('POST', '/admin/v1/companies/f1-grace/keys', {});
    const oldId = created.body.id as unknown as string;
    const oldKey = created.body.key as unknown as string;
    assert.equal((await root('PATCH', `/admin/v1/keys/${oldId}`, { limits: LIMITS })).status, 200);
    const rotated = await keyops('POST', `/admin/v1/keys/${oldId}/rotate`, { gracePeriodSeconds: 3600 });
    assert.equal(rotated.status, 201, rotated.text);
    const newId = rotated.body.id as unknown as string;
    const newKey = rotated.body.key as unknown as string;

    const refused = await root('PATCH', `/admin/v1/keys/${oldId}`, { scopes: SCOPES });
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.details as unknown as string, new RegExp(`rotated to ${newId}`));
    const oldView = await root('GET', `/admin/v1/keys/${oldId}`);
    assert.deepEqual([oldView.body.scopes, oldView.body.status], [null, 'revoking']);
    // The old key still works in its grace period, with the restrictions it had.
    assert.equal((await call(oldKey, 'POST', '/notify/v1/otps')).status, 200);

    const narrowed = await root('PATCH', `/admin/v1/keys/${newId}`, { scopes: SCOPES });
    assert.equal(narrowed.status, 200, narrowed.text);
    const before = upstream.received.length;
    assert.equal((await call(newKey, 'POST', '/notify/v1/otps')).status, 403);
    assert.equal(upstream.received.length, before);
  });
});

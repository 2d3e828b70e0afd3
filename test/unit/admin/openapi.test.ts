import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { adminOpenApiDocument } from '../../../src/admin/openapi.js';
import { createAdminApp } from '../../../src/admin/router.js';
import { ADMIN_OPERATIONS } from '../../../src/admin/schemas.js';
import { AdminService } from '../../../src/admin/service.js';
import { DEFAULT_TIERS } from '../../../src/config/schema.js';
import { createLogger } from '../../../src/observability/logger.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import { adminApi, assertDocumentedAnswer, documentChecks } from '../../helpers/admin.js';
import { ADMIN_TOKEN } from '../../helpers/gateway.js';

const METHODS = ['get', 'post', 'patch', 'delete', 'put'] as const;

function buildAdminApp() {
  const service = new AdminService({
    store: new MemoryKeyStore(),
    tiers: new Set(DEFAULT_TIERS.map((t) => t.name)),
    maxActiveKeys: 2,
    rotationAgeDays: 90,
  });
  return createAdminApp({
    service,
    token: ADMIN_TOKEN,
    readMetrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '# none\n' }),
    logger: createLogger({ level: 'silent' }),
    ready: async () => ({ ok: true, status: 'ready', checks: { store: 'ok' }, degraded: [] }),
  });
}

interface StackLayer {
  rawPath?: string;
  route?: { path: string; methods: Record<string, boolean>; stack: { name: string }[] };
  handle: { stack?: StackLayer[] };
}

/** Every `METHOD path` the Express app serves, found by walking its router stack (mounts included). */
function servedRoutes(stack: StackLayer[], prefix = ''): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const m of Object.keys(layer.route.methods)) out.push(`${m} ${prefix}${layer.route.path}`);
    } else if (layer.handle.stack) {
      out.push(...servedRoutes(layer.handle.stack, prefix + (layer.rawPath ?? '')));
    }
  }
  return out;
}

function documentedRoutes(): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(adminOpenApiDocument().paths ?? {})) {
    for (const m of METHODS) {
      if ((item as Record<string, unknown>)[m]) out.push(`${m} ${path.replace(/\{([A-Za-z]+)\}/g, ':$1')}`);
    }
  }
  return out;
}

describe('the admin API OpenAPI document', () => {
  test('is OpenAPI 3.1 and names the role each operation will need', () => {
    const doc = adminOpenApiDocument();
    assert.equal(doc.openapi, '3.1.0');
    const roles: Record<string, string> = {};
    for (const [path, item] of Object.entries(doc.paths ?? {}))
      for (const m of METHODS) {
        const op = (item as Record<string, Record<string, unknown> | undefined>)[m];
        if (op) roles[`${m} ${path}`] = String(op['x-required-role']);
      }
    assert.deepEqual(roles, {
      'get /healthz': 'none',
      'get /readyz': 'none',
      'get /metrics': 'read',
      'post /admin/v1/companies': 'admin',
      'get /admin/v1/companies': 'read',
      'get /admin/v1/companies/{id}': 'read',
      'patch /admin/v1/companies/{id}': 'admin',
      'post /admin/v1/companies/{id}/keys': 'keys',
      'get /admin/v1/companies/{id}/keys': 'read',
      'get /admin/v1/companies/{id}/usage': 'read',
      'get /admin/v1/keys/{keyId}': 'read',
      'patch /admin/v1/keys/{keyId}': 'admin',
      'delete /admin/v1/keys/{keyId}': 'keys',
      'post /admin/v1/keys/{keyId}/rotate': 'keys',
      'get /admin/v1/audit': 'read',
      'get /admin/v1/audit/export': 'read',
      'get /admin/v1/whoami': 'read',
      'get /admin/v1/upstreams': 'read',
      'get /admin/v1/keys': 'read',
      'get /admin/v1/keys/{keyId}/usage': 'read',
      'get /admin/v1/openapi.json': 'read',
      'get /admin/v1/webhooks': 'read',
      'get /admin/v1/webhooks/deliveries': 'read',
      'post /admin/v1/webhooks/deliveries/{deliveryId}/retry': 'admin',
      'get /admin/v1/companies/{id}/webhooks': 'read',
      'post /admin/v1/companies/{id}/webhooks': 'admin',
      'delete /admin/v1/companies/{id}/webhooks/{webhookId}': 'admin',
      'get /admin/v1/registrations': 'read',
      'post /admin/v1/registrations/{id}/approve': 'admin',
      'post /admin/v1/registrations/{id}/reject': 'admin',
      'get /admin/v1/companies/{id}/members': 'read',
      'post /admin/v1/companies/{id}/members': 'admin',
      'delete /admin/v1/companies/{id}/members/{email}': 'admin',
    });
    // The request schemas are the service's own: a strict body, its patterns and bounds.
    const create = doc.paths?.['/admin/v1/companies']?.post?.requestBody as {
      content: Record<string, { schema: { additionalProperties: boolean; required: string[] } }>;
    };
    assert.equal(create.content['application/json']!.schema.additionalProperties, false);
    assert.deepEqual(create.content['application/json']!.schema.required, ['id']);
    // The probes need no token; everything else inherits the document's bearer requirement.
    assert.deepEqual(doc.paths?.['/healthz']?.get?.security, []);
    assert.deepEqual(doc.paths?.['/readyz']?.get?.security, []);
    assert.equal(doc.paths?.['/metrics']?.get?.security, undefined);
    assert.deepEqual(doc.security, [{ adminToken: [] }]);
    assert.deepEqual(Object.keys(doc.paths?.['/readyz']?.get?.responses ?? {}).sort(), [
      '200',
      '403',
      '415',
      '500',
      '503',
    ]);
  });

  test('every route the Express admin app serves is in the document, and nothing else', () => {
    const app = buildAdminApp() as unknown as { router: { stack: StackLayer[] } };
    const served = servedRoutes(app.router.stack);
    assert.ok(served.length >= 16, served.join(', '));
    for (const probe of ['get /healthz', 'get /readyz', 'get /metrics'])
      assert.ok(served.includes(probe), probe);
    assert.deepEqual([...served].sort(), [...documentedRoutes()].sort());
    assert.deepEqual(
      ADMIN_OPERATIONS.map((op) => `${op.method} ${op.path}`),
      served,
      'the operation table lists the routes in the router order',
    );
  });

  test('every route starts with the guard (role, then body), so none goes unchecked', () => {
    const app = buildAdminApp() as unknown as { router: { stack: StackLayer[] } };
    const firsts: string[] = [];
    const walk = (stack: StackLayer[]) => {
      for (const layer of stack) {
        if (layer.route) firsts.push(layer.route.stack[0]!.name);
        else if (layer.handle.stack) walk(layer.handle.stack);
      }
    };
    walk(app.router.stack);
    assert.equal(firsts.length, ADMIN_OPERATIONS.length);
    assert.deepEqual(new Set(firsts), new Set(['adminGuard']));
  });

  describe('served at GET /admin/v1/openapi.json', () => {
    let server: Server;
    let port: number;
    before(async () => {
      server = createServer(buildAdminApp());
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((r) => server.close(() => r())));

    test('behind the admin token, the same document', async () => {
      const anon = await adminApi(port, null)('GET', '/admin/v1/openapi.json');
      assert.equal(anon.status, 401);
      const r = await adminApi(port)('GET', '/admin/v1/openapi.json');
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, JSON.parse(JSON.stringify(adminOpenApiDocument())));
    });

    test('every operation answers as documented (the client checks each answer)', async () => {
      const api = adminApi(port);
      const before = documentChecks.count;
      assert.equal((await api('POST', '/admin/v1/companies', { id: 'acme', tier: 'standard' })).status, 201);
      assert.equal((await api('POST', '/admin/v1/companies', { id: 'acme' })).status, 409);
      assert.equal((await api('POST', '/admin/v1/companies', { id: 'x', extra: 1 })).status, 400);
      assert.equal((await api('GET', '/admin/v1/companies')).status, 200);
      assert.equal((await api('GET', '/admin/v1/companies/acme')).status, 200);
      assert.equal((await api('GET', '/admin/v1/companies/nope')).status, 404);
      assert.equal((await api('PATCH', '/admin/v1/companies/acme', { status: 'pending' })).status, 200);
      const k = await api('POST', '/admin/v1/companies/acme/keys', { label: 'one' });
      assert.equal(k.status, 201);
      assert.equal((await api('GET', '/admin/v1/companies/acme/keys')).status, 200);
      assert.equal((await api('GET', `/admin/v1/keys/${String(k.body.id)}`)).status, 200);
      const rot = await api('POST', `/admin/v1/keys/${String(k.body.id)}/rotate`, { gracePeriodSeconds: 60 });
      assert.equal(rot.status, 201);
      assert.equal((await api('DELETE', `/admin/v1/keys/${String(k.body.id)}`)).status, 200);
      assert.equal((await api('POST', `/admin/v1/keys/${String(k.body.id)}/rotate`)).status, 409);
      assert.equal((await api('GET', '/admin/v1/audit?limit=5')).status, 200);
      assert.equal((await api('GET', '/metrics')).status, 200);
      assert.equal((await api('POST', '/admin/v1/companies', undefined, '{not json')).status, 400);
      assert.equal((await api('GET', '/admin/v1/nothing-here')).status, 404);
      assert.equal((await api('GET', '/healthz')).status, 200);
      assert.equal((await api('GET', '/readyz')).status, 200);
      assert.equal((await adminApi(port, null)('GET', '/readyz')).status, 200);
      assert.equal((await api('PUT', '/admin/v1/companies')).status, 405);
      assert.equal((await api('OPTIONS', '/admin/v1/companies')).status, 405);
      assert.equal(documentChecks.count - before, 22);
    });
  });

  test('the answer check fails on an undocumented field, status or content type', () => {
    const headers = new Headers({ 'content-type': 'application/json; charset=utf-8' });
    const view = {
      id: 'k1',
      companyId: 'acme',
      prefix: 'nk_live_abc',
      label: null,
      environment: 'live',
      status: 'active',
      createdAt: '2026-01-01T00:00:00Z',
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
      exposedAt: null,
      rotatedTo: null,
      scopes: null,
      limits: null,
      rotationDue: false,
    };
    const check = (status: number, body: unknown, h = headers) =>
      assertDocumentedAnswer('GET', '/admin/v1/keys/k1', {
        status,
        headers: h,
        text: JSON.stringify(body),
        body: body as never,
      });
    check(200, view);
    assert.throws(() => check(200, { ...view, hash: 'a'.repeat(64) }), /does not match/);
    assert.throws(() => check(200, { ...view, createdAt: '2026-01-01 00:00' }), /does not match/);
    assert.throws(() => check(409, { error: 'Conflict', details: 'x' }), /lists no such answer/);
    assert.throws(() => check(200, view, new Headers({ 'content-type': 'text/html' })));
    check(404, { error: 'Not Found', details: 'key k1 not found' });
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ADMIN_ROUTE_ROLES,
  adminIdentities,
  hasRole,
  identify,
  requiredRole,
  sha256Hex,
} from '../../../src/admin/roles.js';

test('roles include the weaker ones', () => {
  assert.ok(hasRole('admin', 'keys') && hasRole('admin', 'read') && hasRole('keys', 'read'));
  assert.ok(!hasRole('read', 'keys') && !hasRole('keys', 'admin'));
});

test('requiredRole reads the table; HEAD is GET; an unknown route needs admin', () => {
  assert.equal(requiredRole('GET', '/admin/v1/companies/acme/usage'), 'read');
  assert.equal(requiredRole('HEAD', '/admin/v1/companies/'), 'read');
  assert.equal(requiredRole('DELETE', '/admin/v1/keys/key_1'), 'keys');
  assert.equal(requiredRole('POST', '/admin/v1/keys/key_1/rotate'), 'keys');
  assert.equal(requiredRole('PATCH', '/admin/v1/companies/acme'), 'admin');
  assert.equal(requiredRole('DELETE', '/admin/v1/companies/acme'), 'admin');
  assert.equal(requiredRole('GET', '/admin/v1/companies//keys'), 'admin');
  assert.equal(requiredRole('GET', '/admin/v2/anything'), 'admin');
  for (const r of ADMIN_ROUTE_ROLES)
    assert.equal(requiredRole(r.method, r.path.replace(/:\w+/g, 'x')), r.role);
});

test('identify: by hash, the legacy token is admin/admin; wrong or empty tokens are null', () => {
  const ids = adminIdentities('legacy-token-0123456789', [
    { name: 'ci', role: 'read', sha256: `sha256:${sha256Hex('ci-token').toUpperCase()}` },
  ]);
  assert.deepEqual(identify('legacy-token-0123456789', ids), { name: 'admin', role: 'admin' });
  assert.deepEqual(identify('ci-token', ids), { name: 'ci', role: 'read' });
  assert.equal(identify('ci-token ', ids), null);
  assert.equal(identify('', ids), null);
  assert.equal(identify(undefined, ids), null);
  assert.deepEqual(adminIdentities(null), []);
});

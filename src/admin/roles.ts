import { createHash, timingSafeEqual } from 'node:crypto';

/** What an admin token may do: `read` lists, audit and usage; `keys` also creates, rotates and revokes keys; `admin` everything. */
export type AdminRole = 'read' | 'keys' | 'admin';

/** The roles, weakest first: each one includes the ones before it. */
export const ADMIN_ROLES: readonly AdminRole[] = ['read', 'keys', 'admin'];

/** One configured admin token: a name (the audit trail's actor), a role, and the token's SHA-256 (hex). */
export interface AdminTokenEntry {
  name: string;
  role: AdminRole;
  sha256: string;
}

/** Who is calling the admin API: the token's name and role. */
export interface AdminIdentity {
  name: string;
  role: AdminRole;
}

/** One admin route and the least role that may call it (`HEAD` goes with `GET`). */
export interface AdminRouteRole {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Express-style path: `:name` is one segment. */
  path: string;
  role: AdminRole;
}

/**
 * The route → role table of the admin API, the one place the roles are decided (an OpenAPI
 * document may show it as `x-required-role`). A request to a path missing from it needs `admin`
 * (fail closed: a route added without a line here is admin-only).
 */
export const ADMIN_ROUTE_ROLES: readonly AdminRouteRole[] = [
  { method: 'GET', path: '/metrics', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies/:id', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies/:id/keys', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies/:id/usage', role: 'read' },
  { method: 'GET', path: '/admin/v1/keys/:keyId', role: 'read' },
  { method: 'GET', path: '/admin/v1/audit', role: 'read' },
  { method: 'GET', path: '/admin/v1/audit/export', role: 'read' },
  { method: 'GET', path: '/admin/v1/whoami', role: 'read' },
  { method: 'GET', path: '/admin/v1/upstreams', role: 'read' },
  { method: 'GET', path: '/admin/v1/keys', role: 'read' },
  { method: 'GET', path: '/admin/v1/keys/:keyId/usage', role: 'read' },
  { method: 'GET', path: '/admin/v1/openapi.json', role: 'read' },
  { method: 'GET', path: '/admin/v1/webhooks', role: 'read' },
  { method: 'GET', path: '/admin/v1/webhooks/deliveries', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies/:id/webhooks', role: 'read' },
  { method: 'GET', path: '/admin/v1/registrations', role: 'read' },
  { method: 'GET', path: '/admin/v1/companies/:id/members', role: 'read' },
  { method: 'POST', path: '/admin/v1/companies/:id/keys', role: 'keys' },
  { method: 'POST', path: '/admin/v1/keys/:keyId/rotate', role: 'keys' },
  { method: 'DELETE', path: '/admin/v1/keys/:keyId', role: 'keys' },
  { method: 'POST', path: '/admin/v1/companies', role: 'admin' },
  { method: 'PATCH', path: '/admin/v1/companies/:id', role: 'admin' },
  { method: 'PATCH', path: '/admin/v1/keys/:keyId', role: 'admin' },
  { method: 'POST', path: '/admin/v1/companies/:id/webhooks', role: 'admin' },
  { method: 'DELETE', path: '/admin/v1/companies/:id/webhooks/:webhookId', role: 'admin' },
  { method: 'POST', path: '/admin/v1/webhooks/deliveries/:deliveryId/retry', role: 'admin' },
];

/** Whether `have` includes `need`. */
export function hasRole(have: AdminRole, need: AdminRole): boolean {
  return ADMIN_ROLES.indexOf(have) >= ADMIN_ROLES.indexOf(need);
}

/** The least role for `method` on `path` (a path without its query), from {@link ADMIN_ROUTE_ROLES}. */
export function requiredRole(method: string, path: string): AdminRole {
  const m = method === 'HEAD' ? 'GET' : method;
  const segments = (path.length > 1 ? path.replace(/\/$/, '') : path).split('/');
  const hit = ADMIN_ROUTE_ROLES.find((r) => {
    if (r.method !== m) return false;
    const want = r.path.split('/');
    return (
      want.length === segments.length &&
      want.every((w, i) => w === segments[i] || (w.startsWith(':') && segments[i] !== ''))
    );
  });
  return hit?.role ?? 'admin';
}

/** The SHA-256 (hex) of a token, as `admin.tokens[].sha256` holds it. */
export function sha256Hex(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The identities an admin API accepts: the single `admin.token` (name `admin`, role `admin`) and
 * every `admin.tokens` entry. Empty when neither is set (tokenless, loopback only).
 */
export function adminIdentities(
  token: string | null,
  tokens: readonly AdminTokenEntry[] = [],
): AdminTokenEntry[] {
  const legacy = token ? [{ name: 'admin', role: 'admin' as const, sha256: sha256Hex(token) }] : [];
  return [
    ...legacy,
    ...tokens.map((t) => ({ ...t, sha256: t.sha256.replace(/^sha256:/, '').toLowerCase() })),
  ];
}

/**
 * The identity a presented bearer token belongs to, or null. The token is hashed and compared
 * with EVERY entry's hash in constant time (no early exit), so neither which entry matched, nor
 * the token's length or a prefix of it, shows in the timing.
 */
export function identify(
  presented: string | undefined,
  entries: readonly AdminTokenEntry[],
): AdminIdentity | null {
  if (!presented) return null;
  const hash = createHash('sha256').update(presented).digest();
  let found: AdminTokenEntry | null = null;
  for (const e of entries) {
    const want = Buffer.from(e.sha256, 'hex');
    const same = want.length === hash.length && timingSafeEqual(hash, want);
    if (same && !found) found = e;
  }
  return found ? { name: found.name, role: found.role } : null;
}

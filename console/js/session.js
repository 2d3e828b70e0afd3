// Who is signed in: the token's name and role, from GET /admin/v1/whoami. Views ask `can(role)`
// before they draw a write control, so a read token sees no button it could not use.
import { api, ApiError } from './api.js';

const ROLES = ['read', 'keys', 'admin'];

/** The caller as the admin API knows it, or null before sign-in. */
export const session = { identity: null };

/**
 * Asks the admin API who the held token is (no token: loopback mode). Resolves true when signed in,
 * false on 401; other failures throw.
 */
export async function loadIdentity() {
  try {
    session.identity = await api('GET', '/admin/v1/whoami');
    return true;
  } catch (err) {
    session.identity = null;
    if (err instanceof ApiError && err.status === 401) return false;
    throw err;
  }
}

/** Whether the signed-in token has at least `need` (`read`, `keys`, `admin`). */
export function can(need) {
  const have = session.identity?.role;
  return have !== undefined && ROLES.indexOf(have) >= ROLES.indexOf(need);
}

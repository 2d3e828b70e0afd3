import type { Route } from '../config/schema.js';

/**
 * Builds the route matcher: the longest prefix that matches on a path-segment boundary wins
 * (`/notify/v1` matches `/notify/v1` and `/notify/v1/otps`, never `/notify/v10`).
 *
 * @example
 * const match = createRouteMatcher([{ prefix: '/notify/v1', target: 'http://backend:9090' }]);
 * match('/notify/v1/otps')?.prefix // '/notify/v1'
 */
export function createRouteMatcher<R extends Pick<Route, 'prefix'>>(
  routes: readonly R[],
): (path: string) => R | null {
  const sorted = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return function matchRoute(path: string): R | null {
    for (const r of sorted) {
      if (r.prefix === '/') return r;
      if (
        path.startsWith(r.prefix) &&
        (path.length === r.prefix.length || path.charCodeAt(r.prefix.length) === 47)
      ) {
        return r;
      }
    }
    return null;
  };
}

/**
 * Whether a request target is a plain origin-form path the gateway can route safely: starts with
 * `/`, holds no dot segments (plain or %-encoded) that an upstream could resolve to a path outside
 * the matched route, and no backslash or NUL.
 */
export function isSafeRequestPath(path: string): boolean {
  // Empty segments (`//`): the path is forwarded as sent, but many servers merge them, so an
  // upstream could resolve `/a//b` to another route than the one matched here. Fragments are
  // never part of a request target.
  if (path.charCodeAt(0) !== 47 || path.includes('//') || path.includes('#')) return false;
  if (path.includes('\\') || path.includes('%00') || path.includes('%5c') || path.includes('%5C'))
    return false;
  if (!path.includes('.') && !path.includes('%2')) return true;
  const decoded = path.replace(/%2e/gi, '.').replace(/%2f/gi, '/');
  // `..;x` counts too: some servers (Tomcat) strip matrix parameters before resolving dot segments.
  return !/(^|\/)\.{1,2}(\/|;|$)/.test(decoded);
}

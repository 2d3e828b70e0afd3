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

/**
 * Methods the gateway never forwards, whatever the route: `TRACE` and `TRACK` echo the request
 * back, headers the gateway added (company id, signature) included; `CONNECT` asks for a tunnel.
 */
export const REFUSED_METHODS: ReadonlySet<string> = new Set(['TRACE', 'TRACK', 'CONNECT']);

/** What a route without its own `methods` list forwards. */
export const DEFAULT_ROUTE_METHODS: readonly string[] = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
];

/** Which methods a route forwards, and the `Allow` header value of its 405 answers. */
export interface MethodRule {
  allows(method: string): boolean;
  /** `Allow` header value: the methods in config order, `HEAD` after `GET` when implied. */
  allow: string;
}

const rules = new WeakMap<object, MethodRule>();

/**
 * The method rule of a route (computed once per route object): its `methods` list, or
 * `DEFAULT_ROUTE_METHODS` without one. `GET` implies `HEAD` (a HEAD is a GET without the body,
 * RFC 9110 §9.3.2). `REFUSED_METHODS` are never allowed, even when listed.
 *
 * @example
 * methodRuleOf({ prefix: '/a', methods: ['GET', 'POST'] }).allow // 'GET, HEAD, POST'
 */
export function methodRuleOf(route: { methods?: readonly string[] | undefined }): MethodRule {
  let rule = rules.get(route);
  if (rule) return rule;
  const listed = route.methods ?? DEFAULT_ROUTE_METHODS;
  const methods: string[] = [];
  for (const m of listed) {
    if (REFUSED_METHODS.has(m) || methods.includes(m)) continue;
    methods.push(m);
    if (m === 'GET' && !listed.includes('HEAD')) methods.push('HEAD');
  }
  const set = new Set(methods);
  rule = { allows: (method) => set.has(method), allow: methods.join(', ') };
  rules.set(route, rule);
  return rule;
}

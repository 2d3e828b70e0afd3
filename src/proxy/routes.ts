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
      // `;` ends a segment too: Tomcat and Spring read `/notify/v1;x` as `/notify/v1` (a matrix
      // parameter), so it must not fall through to another route such as a catch-all `/`.
      const next = path.charCodeAt(r.prefix.length);
      if (path.startsWith(r.prefix) && (path.length === r.prefix.length || next === 47 || next === 59)) {
        return r;
      }
    }
    return null;
  };
}

// Fixed three-character patterns, no quantifier: a match attempt never backtracks. One native regex
// pass is much cheaper than a substring search per escape (each `%` is a partial match for those).
// Escapes refused outright: NUL and backslash; IIS/Jetty `%uXXXX`; overlong UTF-8 (`%c0%ae` is a
// dot to some decoders, never valid UTF-8); and a double-encoded dot, slash, backslash, `;` or NUL
// (`%252e`), which a server that decodes twice resolves as a dot segment.
const REFUSED_ESCAPE = /%(?:00|5[cC]|[uU]|[cC][01]|[eE]0%[89]|[fF]0%8|25(?:2[eEfF]|5[cC]|3[bB]|00))/;
const ENCODED_DOT = /%2[eE]/g;
const ENCODED_SLASH = /%2[fF]/g;
const ENCODED_SEMICOLON = /%3[bB]/g;

/**
 * Whether a request target is a plain origin-form path the gateway can route safely: starts with
 * `/`, holds no dot segments (plain or %-encoded) that an upstream could resolve to a path outside
 * the matched route (also `..;`, `%3b`-encoded, double-encoded, `%u` and overlong forms), and no
 * backslash or NUL.
 *
 * Cost: linear, at most about a dozen native passes over the path; no backtracking, never throws.
 */
export function isSafeRequestPath(path: string): boolean {
  // Empty segments (`//`): the path is forwarded as sent, but many servers merge them, so an
  // upstream could resolve `/a//b` to another route than the one matched here. Fragments are
  // never part of a request target.
  if (path.charCodeAt(0) !== 47 || path.includes('//') || path.includes('#') || path.includes('\\'))
    return false;
  const escaped = path.includes('%');
  if (escaped && REFUSED_ESCAPE.test(path)) return false;
  const d = escaped
    ? path.replace(ENCODED_DOT, '.').replace(ENCODED_SLASH, '/').replace(ENCODED_SEMICOLON, ';')
    : path;
  // The path starts with `/`, so every segment follows one: look for a segment of one or two dots.
  if (!d.includes('/.')) return true;
  // `..;x` counts too: some servers (Tomcat) strip matrix parameters before resolving dot segments.
  return !(
    d.includes('/./') ||
    d.includes('/../') ||
    d.includes('/.;') ||
    d.includes('/..;') ||
    d.endsWith('/.') ||
    d.endsWith('/..')
  );
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

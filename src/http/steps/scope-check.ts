import type { RequestHandler } from 'express';
import { isUnder } from '../../config/limits.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import type { Scope } from '../../store/types.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';
import { pathOf } from '../request-url.js';

export interface ScopeCheckOptions {
  /** `gateway_scope_denied_total`. */
  metrics: Pick<GatewayMetrics, 'scopeDenied'>;
}

/**
 * Whether a scope list lets `method` reach `path` on the matched `route` prefix: `null` allows
 * everything; otherwise one scope must name the route, list the method (when it lists methods;
 * `GET` implies `HEAD`) and hold the path under one of its paths (when it lists paths). The path
 * is compared raw: the transport guard (`isSafeRequestPath`, before) has refused every path that a
 * decoding of it would resolve elsewhere (dot segments, also double-encoded), so raw prefixes hold
 * at the upstream too.
 *
 * @example
 * allowsRequest([{ route: '/notify/v1', methods: ['POST'] }], '/notify/v1', 'POST', '/notify/v1/otps') // true
 */
export function allowsRequest(
  scopes: readonly Scope[] | null,
  route: string,
  method: string,
  path: string,
): boolean {
  if (scopes === null) return true;
  return scopes.some(
    (s) =>
      s.route === route &&
      (!s.methods || s.methods.includes(method) || (method === 'HEAD' && s.methods.includes('GET'))) &&
      (!s.paths || s.paths.some((p) => isUnder(path, p))),
  );
}

/**
 * Step 10, scopes: the company's scopes and then the key's (a key narrows its company, never widens
 * it: a request must pass both) → 403 `SCOPE_DENIED`, counted by route and whose scope refused.
 * It runs before the rate limit, so a refused request consumes no quota. Needs `req.gw.route`,
 * `req.gw.company` and `req.gw.key` (set by route match and authenticate).
 *
 * @example
 * const scopeCheck = createScopeCheck({ metrics });
 */
export function createScopeCheck(opts: ScopeCheckOptions): RequestHandler {
  assertFunction(opts.metrics?.scopeDenied?.inc, 'metrics.scopeDenied.inc');
  const { metrics } = opts;
  return function scopeCheck(req, res, next) {
    const st = req.gw;
    const company = st.company!;
    const key = st.key;
    if (company.scopes === null && (!key || key.scopes === null)) return next();
    const path = pathOf(req.url);
    const method = req.method ?? 'GET';
    let refusedBy: 'company' | 'key' | null = null;
    if (!allowsRequest(company.scopes, st.route, method, path)) refusedBy = 'company';
    else if (key && !allowsRequest(key.scopes, st.route, method, path)) refusedBy = 'key';
    if (!refusedBy) return next();
    st.denyReason = `${refusedBy}_scope`;
    metrics.scopeDenied.inc({ route: st.route, reason: refusedBy });
    deny(req, res, 'SCOPE_DENIED');
  };
}

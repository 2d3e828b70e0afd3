import type { RequestHandler } from 'express';
import helmet from 'helmet';
import { isHttps } from '../forwarded.js';
import { captureHeaders } from '../pipeline.js';

/** The gateway's security headers, computed once (helmet's do not depend on the request). */
export interface SecurityHeaderSet {
  /** Sent on every gateway-made answer: everything but HSTS. */
  common: readonly (readonly [string, string])[];
  /** `Strict-Transport-Security`: only over HTTPS (RFC 6797 §7.2: never over plain HTTP). */
  hsts: readonly [string, string] | null;
  /** Lowercase names of all of them, HSTS included (what the route proxy fills, overrides or drops). */
  names: readonly string[];
}

let computed: SecurityHeaderSet | null = null;

/**
 * helmet's policy with a deny-all content security policy (no content may load, no framing),
 * captured once per process.
 */
export function securityHeaderSet(): SecurityHeaderSet {
  if (computed) return computed;
  const all = captureHeaders(
    helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } }),
  );
  const isHsts = ([name]: readonly [string, string]) => name.toLowerCase() === 'strict-transport-security';
  computed = Object.freeze({
    common: Object.freeze(all.filter((h) => !isHsts(h))),
    hsts: all.find(isHsts) ?? null,
    names: Object.freeze(all.map(([name]) => name.toLowerCase())),
  });
  return computed;
}

/**
 * Step 2, security headers: the precomputed set (`securityHeaderSet`) on every response, HSTS only
 * when the request came over HTTPS (own TLS, or `X-Forwarded-Proto: https` from a trusted proxy).
 * Gateway-made answers keep them all; on a proxied answer the route proxy applies
 * `securityHeaders.proxied` (fill: the upstream's own values win; override; off). Never stops a
 * request. `X-Powered-By` is disabled on the app, not here. Needs `req.gw`.
 *
 * @example
 * const securityHeaders = createSecurityHeaders();
 */
export function createSecurityHeaders(): RequestHandler {
  const { common, hsts } = securityHeaderSet();
  return function securityHeaders(req, res, next) {
    for (const [name, value] of common) res.setHeader(name, value);
    if (hsts && isHttps(req)) res.setHeader(hsts[0], hsts[1]);
    next();
  };
}

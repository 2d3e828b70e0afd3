import type { RequestHandler } from 'express';
import helmet from 'helmet';
import { captureHeaders } from '../pipeline.js';

/**
 * Step 2, security headers: helmet's policy (no content may load, no framing), computed once at
 * creation (its headers do not depend on the request), then set on every response. Never stops a
 * request. `X-Powered-By` is disabled on the app, not here.
 *
 * @example
 * const securityHeaders = createSecurityHeaders();
 */
export function createSecurityHeaders(): RequestHandler {
  const helmetHeaders = captureHeaders(
    helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } }),
  );
  return function securityHeaders(_req, res, next) {
    for (const [name, value] of helmetHeaders) res.setHeader(name, value);
    next();
  };
}

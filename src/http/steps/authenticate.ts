import type { RequestHandler } from 'express';
import type { Counter } from 'prom-client';
import type { KeyVerifier } from '../../auth/verify.js';
import { childCache } from '../../observability/metrics.js';
import type { AuthFailureLimiter } from '../../ratelimit/tier-limiter.js';
import type { KeyRecord } from '../../store/types.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface AuthenticateOptions {
  /** Checks the `X-API-Key` header value (format, record, company). */
  verifier: Pick<KeyVerifier, 'verify'>;
  /** Per-address failed-authentication budget; `null` when disabled. */
  authFailures: Pick<AuthFailureLimiter, 'blockedFor' | 'recordFailure'> | null;
  /** `gateway_auth_failures_total`, counted by deny reason. */
  failureCounter: Pick<Counter<'reason'>, 'labels'>;
  /** An expired key was presented (audit). */
  onKeyExpired?: (key: KeyRecord) => void;
}

/**
 * Step 7, `X-API-Key` → key record → company, setting `req.gw.key` and `req.gw.company`. An address
 * over its failed-authentication budget → 429 `AUTH_RATE_LIMITED` with `Retry-After` (no lookup);
 * a denial → the verifier's code (401 `MISSING_KEY`/`INVALID_KEY`, 403 company codes), and a
 * missing or invalid key counts against the address. A verifier that throws (store unavailable)
 * goes to the error handler. Needs `req.gw`.
 *
 * @example
 * const authenticate = createAuthenticate({ verifier, authFailures, failureCounter: metrics.authFailures });
 */
export function createAuthenticate(opts: AuthenticateOptions): RequestHandler {
  assertFunction(opts.verifier?.verify, 'verifier.verify');
  assertFunction(opts.failureCounter?.labels, 'failureCounter.labels');
  if (opts.authFailures !== null) assertFunction(opts.authFailures?.blockedFor, 'authFailures.blockedFor');
  const { verifier, authFailures, onKeyExpired } = opts;
  const failuresBy = childCache(opts.failureCounter);
  return async function authenticate(req, res, next) {
    const st = req.gw;
    if (authFailures) {
      const wait = await authFailures.blockedFor(st.clientIp);
      if (wait > 0) {
        res.setHeader('Retry-After', String(wait));
        st.denyReason = 'auth_failures';
        return deny(req, res, 'AUTH_RATE_LIMITED');
      }
    }
    const result = await verifier.verify(req.headers['x-api-key']);
    if (!result.ok) {
      st.denyReason = result.reason;
      failuresBy(result.reason).inc();
      if (result.reason === 'expired' && result.key) onKeyExpired?.(result.key);
      if (result.code === 'MISSING_KEY' || result.code === 'INVALID_KEY')
        await authFailures?.recordFailure(st.clientIp);
      return deny(req, res, result.code);
    }
    st.key = result.key;
    st.company = result.company;
    next();
  };
}

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
  authFailures: Pick<AuthFailureLimiter, 'reserve' | 'release'> | null;
  /** `gateway_auth_failures_total`, counted by deny reason. */
  failureCounter: Pick<Counter<'reason'>, 'labels'>;
  /** An expired key was presented (audit). */
  onKeyExpired?: (key: KeyRecord) => void;
}

/**
 * Step 8, `X-API-Key` → key record → company, setting `req.gw.key` and `req.gw.company`. Before the
 * lookup, the request reserves one slot of its address's failed-authentication budget; an address
 * with no slot left → 429 `AUTH_RATE_LIMITED` with `Retry-After` (no lookup). A denial → the
 * verifier's code (401 `MISSING_KEY`/`INVALID_KEY`, 403 company codes): a missing or invalid key
 * keeps its slot (one failure), anything else gives it back — so the budget is exact per address
 * however many lookups are in flight. A verifier that throws (store unavailable) gives the slot
 * back and goes to the error handler. Needs `req.gw`.
 *
 * @example
 * const authenticate = createAuthenticate({ verifier, authFailures, failureCounter: metrics.authFailures });
 */
export function createAuthenticate(opts: AuthenticateOptions): RequestHandler {
  assertFunction(opts.verifier?.verify, 'verifier.verify');
  assertFunction(opts.failureCounter?.labels, 'failureCounter.labels');
  if (opts.authFailures !== null) {
    assertFunction(opts.authFailures?.reserve, 'authFailures.reserve');
    assertFunction(opts.authFailures?.release, 'authFailures.release');
  }
  const { verifier, authFailures, onKeyExpired } = opts;
  const failuresBy = childCache(opts.failureCounter);
  return async function authenticate(req, res, next) {
    const st = req.gw;
    // Reserved before the lookup, in the same turn as the check: a burst of concurrent bad keys
    // cannot all pass the check while their lookups are in flight (INVARIANTS #7).
    const wait = authFailures ? authFailures.reserve(st.clientIp) : 0;
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      st.denyReason = 'auth_failures';
      return deny(req, res, 'AUTH_RATE_LIMITED');
    }
    let result: Awaited<ReturnType<typeof verifier.verify>>;
    try {
      result = await verifier.verify(req.headers['x-api-key']);
    } catch (err) {
      // No answer about the key (store unavailable): not a failed guess.
      authFailures?.release(st.clientIp);
      throw err;
    }
    const failed = !result.ok && (result.code === 'MISSING_KEY' || result.code === 'INVALID_KEY');
    if (!failed) authFailures?.release(st.clientIp);
    if (!result.ok) {
      st.denyReason = result.reason;
      failuresBy(result.reason).inc();
      if (result.reason === 'expired' && result.key) onKeyExpired?.(result.key);
      return deny(req, res, result.code);
    }
    st.key = result.key;
    st.company = result.company;
    next();
  };
}

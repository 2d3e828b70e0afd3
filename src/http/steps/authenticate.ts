import type { Request, RequestHandler, Response } from 'express';
import type { Counter } from 'prom-client';
import type { KeyVerifier, Verification } from '../../auth/verify.js';
import { childCache } from '../../observability/metrics.js';
import { TRACING_OFF, type Tracing } from '../../observability/tracing.js';
import type { AuthFailureLimiter } from '../../ratelimit/tier-limiter.js';
import type { KeyRecord } from '../../store/types.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface AuthenticateOptions {
  /**
   * Checks the `X-API-Key` header value (format, record, company); `verifyCached`, when given,
   * answers from cached records without a promise.
   */
  verifier: Pick<KeyVerifier, 'verify'> & Partial<Pick<KeyVerifier, 'verifyCached'>>;
  /** Per-address failed-authentication budget; `null` when disabled. */
  authFailures: Pick<AuthFailureLimiter, 'blockedFor' | 'tryRecordFailure'> | null;
  /** `gateway_auth_failures_total`, counted by deny reason. */
  failureCounter: Pick<Counter<'reason'>, 'labels'>;
  /** An expired key was presented (audit). */
  onKeyExpired?: (key: KeyRecord) => void;
  /** A child span around the key lookup (OpenTelemetry); off by default. */
  tracing?: Tracing;
}

/**
 * Step 8, `X-API-Key` → key record → company, setting `req.gw.key` and `req.gw.company`. An address
 * that has used its failed-authentication budget → 429 `AUTH_RATE_LIMITED` with `Retry-After`, no
 * lookup. A missing or invalid key is counted in the same synchronous step that picks its answer:
 * 401 while the budget has room, else 429 — so at most `points` answers of 401 per address and
 * window however many lookups are in flight (INVARIANTS #7). Any other outcome (valid key, 403
 * company codes) is answered 429 too once the budget ran out during its lookup, so a burst cannot
 * tell a valid guess apart; valid keys never use the budget. A verifier that throws (store
 * unavailable) goes to the error handler, uncounted. Needs `req.gw`.
 *
 * @example
 * const authenticate = createAuthenticate({ verifier, authFailures, failureCounter: metrics.authFailures });
 */
export function createAuthenticate(opts: AuthenticateOptions): RequestHandler {
  assertFunction(opts.verifier?.verify, 'verifier.verify');
  assertFunction(opts.failureCounter?.labels, 'failureCounter.labels');
  if (opts.authFailures !== null) {
    assertFunction(opts.authFailures?.blockedFor, 'authFailures.blockedFor');
    assertFunction(opts.authFailures?.tryRecordFailure, 'authFailures.tryRecordFailure');
  }
  const { verifier, authFailures, onKeyExpired } = opts;
  const tracing = opts.tracing ?? TRACING_OFF;
  const failuresBy = childCache(opts.failureCounter);
  const refuse = (req: Request, res: Response, wait: number): void => {
    res.setHeader('Retry-After', String(wait));
    req.gw.denyReason = 'auth_failures';
    deny(req, res, 'AUTH_RATE_LIMITED');
  };
  const decide = (req: Request, res: Response, next: () => void, result: Verification): void => {
    const st = req.gw;
    // From here to the answer is one synchronous step: the count decides the status, and no
    // other request of the address can slip in between (the check before the lookup was before
    // an await).
    if (!result.ok && (result.code === 'MISSING_KEY' || result.code === 'INVALID_KEY')) {
      const wait = authFailures ? authFailures.tryRecordFailure(st.clientIp) : 0;
      if (wait > 0) return refuse(req, res, wait);
    } else {
      const wait = authFailures ? authFailures.blockedFor(st.clientIp) : 0;
      if (wait > 0) return refuse(req, res, wait);
    }
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
  // Not async: a key whose records are cached is answered without a promise (`verifyCached`).
  return function authenticate(req, res, next) {
    const before = authFailures ? authFailures.blockedFor(req.gw.clientIp) : 0;
    if (before > 0) return refuse(req, res, before);
    const raw = req.headers['x-api-key'];
    if (tracing.on) {
      const span = tracing.startChild(req.gw, 'key lookup');
      return verifier.verify(raw).then((result) => {
        tracing.endChild(span, result.ok ? 'ok' : result.code);
        decide(req, res, next, result);
      });
    }
    const cached = verifier.verifyCached?.(raw);
    if (cached !== undefined) return decide(req, res, next, cached);
    return verifier.verify(raw).then((result) => decide(req, res, next, result));
  };
}

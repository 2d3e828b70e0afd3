import type { RequestHandler } from 'express';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { TRACING_OFF, type Tracing } from '../../observability/tracing.js';
import type { RateDecision, TierRateLimiter } from '../../ratelimit/tier-limiter.js';
import { deny } from '../deny.js';
import { assertBoolean, assertFunction } from '../option-checks.js';

export interface RateLimitOptions {
  /** The company tier limiter (shared through Redis when configured). */
  limiter: Pick<TierRateLimiter, 'consume'>;
  metrics: Pick<GatewayMetrics, 'limiterFallback' | 'rateLimited'>;
  /** Label `gateway_rate_limited_total` with the company id (else `''`). */
  companyLabel: boolean;
  /** A child span around the limiter (OpenTelemetry); off by default. */
  tracing?: Tracing;
}

/**
 * Step 11, the company's windows (its own `limits`, else its tier's) and its key's own windows:
 * sets `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (the window closest to
 * exhaustion) and `RateLimit-Policy` (every window, e.g. `10;w=1, 600;w=60`) on every answer from
 * here on; over any window → 429 `RATE_LIMITED` with `Retry-After` of the window that refused, and
 * nothing counted in the others. A limiter that throws (policy `closed`) goes to the error
 * handler. Needs `req.gw.company` (set by authenticate); requests refused before it consumed nothing.
 *
 * @example
 * const rateLimit = createRateLimit({ limiter, metrics, companyLabel: false });
 */
export function createRateLimit(opts: RateLimitOptions): RequestHandler {
  assertFunction(opts.limiter?.consume, 'limiter.consume');
  assertBoolean(opts.companyLabel, 'companyLabel');
  const { limiter, metrics, companyLabel } = opts;
  const tracing = opts.tracing ?? TRACING_OFF;
  return async function rateLimit(req, res, next) {
    const company = req.gw.company!;
    const span = tracing.on ? tracing.startChild(req.gw, 'rate limit') : null;
    const key = req.gw.key;
    const d = await limiter.consume(company.id, company.tier, {
      companyLimits: company.limits,
      ...(key ? { keyId: key.id, keyLimits: key.limits } : {}),
    });
    if (span) tracing.endChild(span, d.allowed ? `allowed (${d.source})` : `limited (${d.source})`);
    if (d.source !== 'primary') metrics.limiterFallback.inc({ policy: d.source });
    res.setHeader('RateLimit-Limit', String(d.limit));
    res.setHeader('RateLimit-Remaining', String(d.remaining));
    res.setHeader('RateLimit-Reset', String(d.resetSeconds));
    const policy = policyOf(d);
    if (policy) res.setHeader('RateLimit-Policy', policy);
    if (!d.allowed) {
      res.setHeader('Retry-After', String(d.resetSeconds));
      metrics.rateLimited.inc({ tier: company.tier, company: companyLabel ? company.id : '' });
      return deny(req, res, 'RATE_LIMITED');
    }
    next();
  };
}

/** `RateLimit-Policy` (IETF httpapi rate-limit headers draft): `<points>;w=<seconds>` per window. */
export function policyOf(d: Pick<RateDecision, 'windows'>): string {
  return (d.windows ?? []).map((w) => `${w.points};w=${w.duration}`).join(', ');
}

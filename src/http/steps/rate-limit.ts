import type { RequestHandler } from 'express';
import type { GatewayMetrics } from '../../observability/metrics.js';
import { TRACING_OFF, type Tracing } from '../../observability/tracing.js';
import type { TierRateLimiter } from '../../ratelimit/tier-limiter.js';
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
 * Step 9, the company's tier limit: sets `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset` on every answer from here on; over the limit → 429 `RATE_LIMITED` with
 * `Retry-After`. A limiter that throws (policy `closed`) goes to the error handler. Needs
 * `req.gw.company` (set by authenticate); requests refused before it consumed nothing.
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
    const d = await limiter.consume(company.id, company.tier);
    if (span) tracing.endChild(span, d.allowed ? `allowed (${d.source})` : `limited (${d.source})`);
    if (d.source !== 'primary') metrics.limiterFallback.inc({ policy: d.source });
    res.setHeader('RateLimit-Limit', String(d.limit));
    res.setHeader('RateLimit-Remaining', String(d.remaining));
    res.setHeader('RateLimit-Reset', String(d.resetSeconds));
    if (!d.allowed) {
      res.setHeader('Retry-After', String(d.resetSeconds));
      metrics.rateLimited.inc({ tier: company.tier, company: companyLabel ? company.id : '' });
      return deny(req, res, 'RATE_LIMITED');
    }
    next();
  };
}

import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { LRUCache } from 'lru-cache';
import type { Tier } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { LeaseLimiter } from './lease-limiter.js';

/** What the limiter does while Redis fails (`rateLimit.failurePolicy`). */
export type FailurePolicy = 'insurance' | 'open' | 'closed';

/** The limiter's answer for one request; `source` says which limiter counted it. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  source: 'primary' | 'insurance' | 'open';
}

/** The tier table, the shared Redis (optional) and the failure policy. */
export interface TierLimiterOptions {
  tiers: readonly Tier[];
  /** When given, counts are shared by every instance through Redis (exact across instances). */
  redis?: RedisClient;
  keyPrefix: string;
  failurePolicy: FailurePolicy;
  onStoreError?: (err: unknown) => void;
  /**
   * Lease sizing with Redis (`rateLimit.lease`): a lease is at most `maxSize` points and at most
   * 1/`divisor` of the quota left. Default { maxSize: 1 }: one Redis call per request.
   */
  lease?: { maxSize: number; divisor: number };
}

interface TierLimiters {
  tier: Tier;
  /** With Redis: the shared lease limiter; else null and `memory` counts. */
  shared: LeaseLimiter | null;
  memory: RateLimiterMemory;
  insurance: RateLimiterMemory;
}

/**
 * Per-company limits by tier. With Redis, counts are shared through leases (`LeaseLimiter`): one
 * atomic Lua call takes a batch of quota that the instance spends locally, so most requests cost no
 * round trip; never over the limit, under-admission bounded (bench/README.md). Without Redis,
 * rate-limiter-flexible counts in memory. When Redis fails the configured policy applies:
 * `insurance` counts in process memory (per instance), `open` lets requests through, `closed`
 * refuses them with 503. Recovery is automatic: the next request tries Redis again.
 */
export class TierRateLimiter {
  private readonly byTier = new Map<string, TierLimiters>();

  constructor(private readonly opts: TierLimiterOptions) {
    for (const tier of opts.tiers) {
      const common = {
        points: tier.points,
        duration: tier.duration,
        keyPrefix: `${opts.keyPrefix}rl:${tier.name}`,
      };
      const lease = opts.lease ?? { maxSize: 1, divisor: 1 };
      const shared = opts.redis
        ? new LeaseLimiter({
            redis: opts.redis,
            points: tier.points,
            duration: tier.duration,
            keyPrefix: common.keyPrefix,
            maxLease: lease.maxSize,
            divisor: lease.divisor,
          })
        : null;
      const memory = new RateLimiterMemory(common);
      this.byTier.set(tier.name, { tier, shared, memory, insurance: new RateLimiterMemory(common) });
    }
  }

  /**
   * Counts one request for `companyId` against `tierName`. Resolves with the decision; rejects only
   * with `GatewayError('RATE_LIMITER_UNAVAILABLE')` under the `closed` policy, or for an unknown
   * tier (`INTERNAL`: the admin API refuses such tiers, so this is a bug or a shrunk tier table).
   */
  async consume(companyId: string, tierName: string): Promise<RateDecision> {
    const l = this.byTier.get(tierName);
    if (!l) throw new GatewayError('INTERNAL', `tier "${tierName}" is not configured`);
    try {
      if (l.shared) {
        const d = await l.shared.consume(companyId);
        return {
          allowed: d.allowed,
          limit: l.tier.points,
          remaining: d.remaining,
          resetSeconds: Math.max(1, Math.ceil(d.msBeforeNext / 1000)),
          source: 'primary',
        };
      }
      return toDecision(l.tier, await l.memory.consume(companyId), true, 'primary');
    } catch (res) {
      if (res instanceof RateLimiterRes) return toDecision(l.tier, res, false, 'primary');
      this.opts.onStoreError?.(res);
      return this.fallback(l, companyId, res);
    }
  }

  /** Gives unused leased quota back to Redis (on shutdown, before the Redis client closes). */
  async close(): Promise<void> {
    await Promise.all([...this.byTier.values()].map((l) => l.shared?.close()));
  }

  private async fallback(l: TierLimiters, companyId: string, cause: unknown): Promise<RateDecision> {
    switch (this.opts.failurePolicy) {
      case 'open':
        return {
          allowed: true,
          limit: l.tier.points,
          remaining: l.tier.points,
          resetSeconds: l.tier.duration,
          source: 'open',
        };
      case 'closed':
        throw new GatewayError('RATE_LIMITER_UNAVAILABLE', undefined, { cause });
      case 'insurance':
        try {
          return toDecision(l.tier, await l.insurance.consume(companyId), true, 'insurance');
        } catch (res) {
          if (res instanceof RateLimiterRes) return toDecision(l.tier, res, false, 'insurance');
          throw res;
        }
    }
  }
}

function toDecision(
  tier: Tier,
  res: RateLimiterRes,
  allowed: boolean,
  source: RateDecision['source'],
): RateDecision {
  return {
    allowed,
    limit: tier.points,
    remaining: Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    source,
  };
}

/**
 * Per-address limiter of failed authentications (brute-force guard). Kept in process memory on
 * purpose: checking it costs no round trip, and with N instances an attacker gets at most N times
 * the budget — still far below what guessing a 190-bit key needs.
 */
export class AuthFailureLimiter {
  private readonly limiter: RateLimiterMemory;
  /** Addresses with a failure in the current window: every other address skips the limiter. */
  private readonly failing: LRUCache<string, true>;
  constructor(private readonly opts: { points: number; duration: number }) {
    this.limiter = new RateLimiterMemory({ points: opts.points, duration: opts.duration });
    this.failing = new LRUCache({ max: 100_000, ttl: opts.duration * 1000 });
  }

  /** Seconds to wait when `address` has used its failures, else 0. */
  async blockedFor(address: string): Promise<number> {
    if (!this.failing.has(address)) return 0;
    const res = await this.limiter.get(address);
    if (!res || res.consumedPoints < this.opts.points) return 0;
    return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  }

  async recordFailure(address: string): Promise<void> {
    this.failing.set(address, true);
    await this.limiter.penalty(address, 1);
  }
}

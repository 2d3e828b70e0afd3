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
  /**
   * Gateway processes sharing the limit through Redis (`rateLimit.instances` × workers). Each
   * instance's insurance admits at most `insurancePoints(points, instances)` per window. Default 1.
   */
  instances?: number;
}

interface TierLimiters {
  tier: Tier;
  /** With Redis: the shared lease limiter; else null and `memory` counts. */
  shared: LeaseLimiter | null;
  memory: RateLimiterMemory;
  insurance: RateLimiterMemory;
  /**
   * Companies whose requests stay on the insurance until their insurance window ends (Date.now()
   * ms): once Redis failed for a company, Redis does not count what the insurance admitted, so
   * going back to Redis in the same window would admit those requests a second time.
   */
  onInsurance: Map<string, number>;
}

/**
 * This instance's share of a limit while Redis fails: `floor(points / instances)`, so that all
 * instances' insurance together never admits more than `points` (a ceiling could exceed it by up
 * to `instances − 1`). 0 when there are more instances than points: refuse rather than exceed.
 */
export function insurancePoints(points: number, instances: number): number {
  return Math.floor(points / Math.max(1, Math.floor(instances)));
}

/**
 * The insurance limiter of one tier: the instance's share (`insurancePoints`) per window, in process
 * memory. It counts every request this instance admits (through Redis too), so a fallback in the
 * middle of a window admits only what is left of the share; kept in one function so the limiter's
 * other parts can change around it.
 */
export function createInsurance(tier: Tier, instances: number, keyPrefix: string): RateLimiterMemory {
  return new RateLimiterMemory({
    points: insurancePoints(tier.points, instances),
    duration: tier.duration,
    keyPrefix: `${keyPrefix}:insurance`,
  });
}

/**
 * Per-company limits by tier. With Redis, counts are shared through leases (`LeaseLimiter`): one
 * atomic Lua call takes a batch of quota that the instance spends locally, so most requests cost no
 * round trip; never over the limit, under-admission bounded (bench/README.md). Without Redis,
 * rate-limiter-flexible counts in memory. When Redis fails the configured policy applies:
 * `insurance` admits this process's share of the limit (`createInsurance`; what it admitted through
 * Redis in the window counts, and a company stays on the insurance until that window ends, so Redis
 * never admits the same requests again), so all instances together stay within the limit; `open` lets requests through; `closed` refuses
 * them with 503. Recovery is automatic: the next request tries Redis again.
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
      const insurance = createInsurance(tier, opts.instances ?? 1, common.keyPrefix);
      this.byTier.set(tier.name, { tier, shared, memory, insurance, onInsurance: new Map() });
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
        if (this.stillInsured(l, companyId)) return await this.insured(l, companyId);
        const d = await l.shared.consume(companyId);
        // Counted against the insurance too: a fallback later in this window admits only what is
        // left of this instance's share, never a full share on top of what Redis already admitted.
        if (d.allowed) await l.insurance.penalty(companyId, 1);
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
        return this.insured(l, companyId);
    }
  }

  /** Counts on the insurance; with Redis, keeps the company there until its insurance window ends. */
  private async insured(l: TierLimiters, companyId: string): Promise<RateDecision> {
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await l.insurance.consume(companyId);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
      allowed = false;
    }
    if (l.shared && !l.onInsurance.has(companyId)) {
      if (l.onInsurance.size >= 10_000) this.sweepInsured(l);
      l.onInsurance.set(companyId, Date.now() + res.msBeforeNext);
    }
    return toDecision(l.tier, res, allowed, 'insurance');
  }

  /** Whether `companyId` is still in the insurance window it fell back in (Redis not asked). */
  private stillInsured(l: TierLimiters, companyId: string): boolean {
    const until = l.onInsurance.get(companyId);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    l.onInsurance.delete(companyId);
    return false;
  }

  /** Drops companies whose insurance window is over. */
  private sweepInsured(l: TierLimiters): void {
    const now = Date.now();
    for (const [id, until] of l.onInsurance) if (until <= now) l.onInsurance.delete(id);
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

/** One address's failures in its current window. */
interface FailureWindow {
  failures: number;
  /** Date.now() at which the window ends and the count starts again from 0. */
  resetAt: number;
}

/**
 * Per-address budget of failed authentications (brute-force guard): `points` failures per address
 * in a fixed window of `duration` seconds that starts with the address's first failure.
 *
 * **Per process**, on purpose: checking it costs no round trip, and with N instances an attacker
 * gets at most N times the budget — still far below what guessing a 190-bit key needs.
 *
 * Exact per address, also while store lookups are in flight: callers check `blockedFor` before a
 * lookup and count with `tryRecordFailure` when the answer is decided, and that count is a
 * synchronous check-and-increment, so however many lookups of one address are in flight, at most
 * `points` of them are answered as failures; the rest must be answered 429. Valid keys never use
 * the budget, so a burst of valid requests from one address (a sidecar's single peer) of any size
 * is not refused.
 *
 * Windows live in an LRU of `maxAddresses` (least recently used evicted first): an address that
 * keeps failing stays recent, so a flood of other addresses cannot evict its count.
 */
export class AuthFailureLimiter {
  private readonly windows: LRUCache<string, FailureWindow>;
  private readonly points: number;
  private readonly durationMs: number;
  constructor(opts: { points: number; duration: number; maxAddresses?: number }) {
    if (!Number.isInteger(opts.points) || opts.points < 1)
      throw new TypeError('points must be a positive integer');
    if (!(opts.duration > 0)) throw new TypeError('duration must be a positive number of seconds');
    this.points = opts.points;
    this.durationMs = opts.duration * 1000;
    this.windows = new LRUCache({ max: opts.maxAddresses ?? 100_000 });
  }

  /** Seconds to wait when `address` has used its budget, else 0. Reads only. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.windows.get(address);
    if (!w || w.resetAt <= now || w.failures < this.points) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  /**
   * Counts one failure of `address` if its budget has room: 0 when counted (answer the failure),
   * else the seconds to wait (answer 429 `Retry-After`; nothing counted). Check and count are one
   * synchronous step, so two concurrent callers can never both take the last failure.
   */
  tryRecordFailure(address: string, now = Date.now()): number {
    const w = this.current(address, now);
    if (w.failures >= this.points) return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
    w.failures++;
    return 0;
  }

  /** Counts one failure of `address` whatever its budget (e.g. to seed a test or import a ban). */
  recordFailure(address: string, now = Date.now()): void {
    this.current(address, now).failures++;
  }

  private current(address: string, now: number): FailureWindow {
    let w = this.windows.get(address);
    if (!w || w.resetAt <= now) {
      w = { failures: 0, resetAt: now + this.durationMs };
      this.windows.set(address, w);
    }
    return w;
  }
}

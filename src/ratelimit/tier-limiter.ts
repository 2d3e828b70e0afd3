import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Tier } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { LeaseLimiter, type LeaseDecision, type LeaseWindow } from './lease-limiter.js';
import { Insurance, SETTLE_INTERVAL_MS, type InsuranceDebt } from './insurance.js';
import { MemoryWindowLimiter } from './memory-windows.js';
import { reportCounted, reportTaken, type WindowUse } from './window-use.js';

export { insurancePoints } from './insurance.js';

/** What the limiter does while Redis fails (`rateLimit.failurePolicy`). */
export type FailurePolicy = 'insurance' | 'open' | 'closed';

/** One window: `points` requests per `duration` seconds (the store's `RateWindow`). */
export interface LimitWindow {
  points: number;
  duration: number;
}

/** One window's state after a request, as the `RateLimit-*` headers report it. */
export interface WindowDecision extends LimitWindow {
  /** Whose window it is: the company's (its tier's or its own) or the key's own. */
  owner: 'company' | 'key';
  remaining: number;
  /** Seconds until this window resets (≥ 1). */
  resetSeconds: number;
}

/**
 * The limiter's answer for one request; `source` says which limiter counted it. `limit`,
 * `remaining` and `resetSeconds` are those of the window that refused, else of the window closest
 * to exhaustion (fewest requests left; of equals, the one that resets last); `windows` lists all.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the reported window resets. */
  resetSeconds: number;
  source: 'primary' | 'insurance' | 'open';
  windows: WindowDecision[];
}

/** Whose quota a request spends: the company (its own limits, else its tier's), and its key's own limits. */
export interface LimitSubject {
  companyId: string;
  tier: string;
  /** The company's own windows; `null`/absent = the tier's. */
  companyLimits?: readonly LimitWindow[] | null;
  keyId?: string;
  /** The key's own windows, enforced on top of the company's; `null`/absent = none. */
  keyLimits?: readonly LimitWindow[] | null;
}

/** The tier table, the shared Redis (optional) and the failure policy. */
export interface TierLimiterOptions {
  /** Tiers as the config parses them (`windows`), or in the one-window shorthand. */
  tiers: readonly (Tier | { name: string; points: number; duration: number })[];
  /** When given, counts are shared by every instance through Redis (exact across instances). */
  redis?: RedisClient;
  keyPrefix: string;
  failurePolicy: FailurePolicy;
  /** Called for each request whose limiter call to Redis failed. */
  onStoreError?: (err: unknown) => void;
  /**
   * Lease sizing with Redis (`rateLimit.lease`): a lease is at most `maxSize` points and at most
   * 1/`divisor` of the quota left. Default { maxSize: 1 }: one Redis call per request.
   */
  lease?: { maxSize: number; divisor: number };
  /**
   * Gateway processes sharing the limit through Redis (`rateLimit.instances` × workers). While
   * Redis fails, each process's insurance admits at most `insurancePoints(points, instances)` per
   * window. Default 1.
   */
  instances?: number;
  /** Monotonic clock, ms (tests). Default `performance.now`; the lease limiter shares it. */
  now?: () => number;
  /**
   * Told the count of each window of a day or longer when the limiter learns it: after each lease
   * taken from Redis, or each request counted in memory; never on the insurance. Must not throw.
   */
  onWindowUse?: (u: WindowUse) => void;
}

/** A window with its owner and counter name. */
interface SubjectWindow extends LeaseWindow {
  owner: 'company' | 'key';
}

/**
 * Per-company (and per-key) limits over one or more windows. A company's windows are its own
 * `limits`, else its tier's; a key's own windows are enforced on top (so a key is never wider).
 * A request is counted against all of them at once, or against none when any is full. With
 * Redis, counts are shared through leases (`LeaseLimiter`): one atomic Lua call takes a batch of
 * quota from every window, which the instance spends locally, so most requests cost no round trip;
 * never over a limit, under-admission bounded (bench/README.md). Without Redis, the windows are
 * counted in memory (`MemoryWindowLimiter`), just as atomically. When Redis fails the configured
 * policy applies: `open` lets requests through, `closed` refuses them with 503, and `insurance`
 * admits this process's share of each window in memory (`Insurance`: what Redis admitted counts
 * against the share, and what the insurance admitted is written to Redis when it answers again).
 * Recovery is automatic.
 */
export class TierRateLimiter {
  private readonly tiers = new Map<string, Tier>();
  private readonly shared: LeaseLimiter | null;
  private readonly memory = new MemoryWindowLimiter();
  /** This process's counts and its insurance (with Redis, under the `insurance` policy). */
  private readonly insurance: Insurance | null;
  /** Names this process's insurance admissions in Redis (`LeaseLimiter.settle`). */
  private readonly id = randomUUID();
  private readonly now: () => number;
  /** Settle calls in flight, per Cluster hash tag (one company's counters). */
  private readonly settling = new Map<string, Promise<void>>();
  private settleTimer: NodeJS.Timeout | null = null;
  private settleRound: Promise<void> | null = null;
  private settleTurn = 0;

  constructor(private readonly opts: TierLimiterOptions) {
    for (const t of opts.tiers)
      this.tiers.set(
        t.name,
        'windows' in t ? t : { name: t.name, windows: [{ points: t.points, duration: t.duration }] },
      );
    this.now = opts.now ?? (() => performance.now());
    const lease = opts.lease ?? { maxSize: 1, divisor: 1 };
    const report = opts.onWindowUse;
    const onTaken =
      report && ((s: string, w: Parameters<typeof reportTaken>[1]) => reportTaken(s, w, report));
    this.shared = opts.redis
      ? new LeaseLimiter({
          redis: opts.redis,
          maxLease: lease.maxSize,
          divisor: lease.divisor,
          now: this.now,
          ...(onTaken && { onTaken }),
        })
      : null;
    this.insurance =
      this.shared && opts.failurePolicy === 'insurance' ? new Insurance(opts.instances ?? 1) : null;
  }

  /**
   * Counts one request for `companyId` against its windows: `extra.companyLimits`, else the
   * windows of `tierName`, plus `extra.keyLimits` of key `extra.keyId`. Resolves with the decision;
   * rejects only with `GatewayError('RATE_LIMITER_UNAVAILABLE')` under the `closed` policy, or for
   * an unknown tier without company limits (`INTERNAL`: the admin API refuses such tiers, so this
   * is a bug or a shrunk tier table).
   */
  async consume(
    companyId: string,
    tierName: string,
    extra: Omit<LimitSubject, 'companyId' | 'tier'> = {},
  ): Promise<RateDecision> {
    const windows = this.windowsOf({ companyId, tier: tierName, ...extra });
    if (!this.shared) {
      const d = this.memory.consume(windows, this.now());
      // The threshold event names when the window resets: wall-clock time, not the limiter's clock.
      if (this.opts.onWindowUse)
        reportCounted(companyId, extra.keyId ?? null, windows, d, Date.now(), this.opts.onWindowUse);
      return toDecision(windows, d, 'primary');
    }
    const subject = extra.keyLimits?.length && extra.keyId ? `${companyId}\n${extra.keyId}` : companyId;
    if (this.insurance) return this.consumeInsured(this.shared, this.insurance, subject, windows);
    try {
      return toDecision(windows, await this.shared.consume(subject, windows), 'primary');
    } catch (err) {
      this.opts.onStoreError?.(err);
      if (this.opts.failurePolicy === 'closed')
        throw new GatewayError('RATE_LIMITER_UNAVAILABLE', undefined, { cause: err });
      const all = windows.map((w) => ({ ...w, remaining: w.points, msBeforeReset: w.duration * 1000 }));
      return toDecision(windows, { allowed: true, refusedBy: -1, windows: all }, 'open');
    }
  }

  /**
   * Gives unused leased quota back to Redis and writes what the insurance admitted (on shutdown,
   * before the Redis client closes; each bounded by the client's command timeout).
   */
  async close(): Promise<void> {
    if (this.settleTimer) clearInterval(this.settleTimer);
    this.settleTimer = null;
    await this.settleRound;
    await this.settleAll();
    await this.shared?.close();
  }

  /** Redis, with this process's counts beside it and the insurance when Redis fails. */
  private async consumeInsured(
    shared: LeaseLimiter,
    ins: Insurance,
    subject: string,
    windows: SubjectWindow[],
  ): Promise<RateDecision> {
    if (ins.onStay(subject, windows, this.now())) return this.insured(ins, subject, windows);
    try {
      // What the insurance admitted in these windows goes to Redis before Redis admits more in them.
      for (let round = 0; round < 3; round++) {
        const debts = ins.owed(windows, this.now());
        if (!debts) break;
        await this.settle(debts);
      }
    } catch (err) {
      this.opts.onStoreError?.(err);
      return this.insured(ins, subject, windows);
    }
    const capped = ins.reserve(windows, this.now());
    if (capped) return toDecision(windows, asConfigured(windows, capped), 'insurance');
    let d: LeaseDecision;
    try {
      d = await shared.consume(subject, windows);
    } catch (err) {
      ins.release(windows);
      this.opts.onStoreError?.(err);
      return this.insured(ins, subject, windows);
    }
    if (d.allowed) ins.align(windows, d, this.now());
    else ins.release(windows);
    return toDecision(windows, d, 'primary');
  }

  /** Admits on the insurance (this process's share); its debts are then written as soon as Redis answers. */
  private insured(ins: Insurance, subject: string, windows: SubjectWindow[]): RateDecision {
    const d = ins.admit(subject, windows, this.now());
    if (d.allowed && !this.settleTimer) {
      this.settleTimer = setInterval(() => {
        this.settleRound ??= this.settleAll().finally(() => (this.settleRound = null));
      }, SETTLE_INTERVAL_MS);
      this.settleTimer.unref();
    }
    // The headers keep describing the company's limit; what is left is this process's share.
    return toDecision(windows, asConfigured(windows, d), 'insurance');
  }

  /**
   * Writes every debt to Redis: one company first (while Redis is down, one call per round, not
   * one per company), then the others, 16 at a time. Stops the loop when nothing is owed.
   */
  private async settleAll(): Promise<void> {
    if (!this.insurance) return;
    const groups = [...this.insurance.owedByTag(this.now()).values()];
    if (groups.length === 0) {
      if (this.settleTimer) clearInterval(this.settleTimer);
      this.settleTimer = null;
      return;
    }
    // A different company first each round: on Cluster, one shard down does not hold up the others.
    const first = this.settleTurn++ % groups.length;
    try {
      await this.settle(groups[first]!);
    } catch {
      return; // still down (requests that fall back report it): the next round tries again
    }
    const rest = groups.filter((_, i) => i !== first);
    for (let i = 0; i < rest.length; i += 16)
      await Promise.allSettled(rest.slice(i, i + 16).map((g) => this.settle(g)));
  }

  /** Writes one company's debts (one Cluster slot), one call at a time per company. */
  private settle(debts: InsuranceDebt[]): Promise<void> {
    const key = debts[0]!.key;
    const company = key.slice(0, key.indexOf('}') + 1) || key;
    let inFlight = this.settling.get(company);
    if (!inFlight) {
      inFlight = this.shared!.settle(this.id, debts)
        .then(() => this.insurance!.acknowledge(debts, this.now()))
        .finally(() => this.settling.delete(company));
      this.settling.set(company, inFlight);
    }
    return inFlight;
  }

  private windowsOf(s: LimitSubject): SubjectWindow[] {
    let company = s.companyLimits?.length ? s.companyLimits : null;
    if (!company) {
      const tier = this.tiers.get(s.tier);
      if (!tier) throw new GatewayError('INTERNAL', `tier "${s.tier}" is not configured`);
      company = tier.windows;
    }
    // One hash tag per company: all counters of a request live in one Cluster slot, so one script
    // can check and count them all. A counter is named by its window length (unique per list).
    const base = `${this.opts.keyPrefix}rl:{${s.companyId}}:`;
    const out: SubjectWindow[] = company.map((w) => ({
      ...w,
      owner: 'company' as const,
      key: `${base}c${w.duration}`,
    }));
    if (s.keyId && s.keyLimits?.length)
      for (const w of s.keyLimits) out.push({ ...w, owner: 'key', key: `${base}k:${s.keyId}:${w.duration}` });
    return out;
  }
}

/** An insurance decision with the windows' configured points (its own are this process's shares). */
function asConfigured(windows: SubjectWindow[], d: LeaseDecision): LeaseDecision {
  return { ...d, windows: d.windows.map((w, i) => ({ ...w, points: windows[i]!.points })) };
}

function toDecision(
  windows: SubjectWindow[],
  d: LeaseDecision,
  source: RateDecision['source'],
): RateDecision {
  const all: WindowDecision[] = d.windows.map((w, i) => ({
    points: w.points,
    duration: w.duration,
    owner: windows[i]!.owner,
    remaining: w.remaining,
    resetSeconds: Math.max(1, Math.ceil(w.msBeforeReset / 1000)),
  }));
  let shown = d.refusedBy >= 0 ? all[d.refusedBy]! : all[0]!;
  if (d.refusedBy < 0)
    for (const w of all)
      if (
        w.remaining < shown.remaining ||
        (w.remaining === shown.remaining && w.resetSeconds > shown.resetSeconds)
      )
        shown = w;
  return {
    allowed: d.allowed,
    limit: shown.points,
    remaining: shown.remaining,
    resetSeconds: shown.resetSeconds,
    source,
    windows: all,
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
    // Bounded by a size of 1 per entry, not `max`, which would preallocate every slot at start
    // (as auth/lru.ts does it).
    this.windows = new LRUCache({ maxSize: opts.maxAddresses ?? 100_000, sizeCalculation: () => 1 });
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

import { performance } from 'node:perf_hooks';
import type { RedisClient } from '../redis/connection.js';

/**
 * Takes a lease from the window counter `KEYS[1]`: `points` per window of `duration` s, a lease of
 * `floor(free / divisor)` clamped to [1, maxLease] while quota is left, else 0. The counter is the one
 * rate-limiter-flexible's RateLimiterRedis keeps (same key, `SET NX EX` then `INCRBY`), so both can
 * count the same window during a rolling upgrade; it is only incremented by what is granted, so the
 * sum of all grants in a window never exceeds `points`. Returns {grant, used after the grant, PTTL,
 * window end in Redis's clock (ms)}; the end identifies the window for a later release.
 */
const TAKE_LUA = `
local points = tonumber(ARGV[1])
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local used = tonumber(redis.call('get', KEYS[1]))
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * tonumber(ARGV[2])
end
local grant = 0
local free = points - used
if free > 0 then
  grant = math.floor(free / tonumber(ARGV[4]))
  if grant > tonumber(ARGV[3]) then grant = tonumber(ARGV[3]) end
  if grant < 1 then grant = 1 end
  used = redis.call('incrby', KEYS[1], grant)
end
local t = redis.call('time')
return {grant, used, ttl, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl}
`;

/**
 * Gives `ARGV[1]` unused points back to the window counter, only if it is still the window the lease
 * came from (same end, ±2 ms of PTTL rounding): giving them to a later window would let it exceed
 * its limit. Never below 0. Returns what was given back.
 */
const RELEASE_LUA = `
local ttl = redis.call('pttl', KEYS[1])
if ttl <= 0 then return 0 end
local t = redis.call('time')
local ends = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
if math.abs(ends - tonumber(ARGV[2])) > 2 then return 0 end
local used = tonumber(redis.call('get', KEYS[1]) or '0')
local n = math.min(tonumber(ARGV[1]), used)
if n > 0 then redis.call('decrby', KEYS[1], n) end
return n
`;

type LeaseRedis = RedisClient & {
  gwLeaseTake(key: string, points: number, duration: number, max: number, divisor: number): Promise<number[]>;
  gwLeaseRelease(key: string, amount: number, windowEnd: number): Promise<number>;
};

/** One tier's limit and the lease sizing (`rateLimit.lease`). */
export interface LeaseLimiterOptions {
  redis: RedisClient;
  /** Requests per window. */
  points: number;
  /** Window length, seconds (a fixed window starting at its first request, as RateLimiterRedis). */
  duration: number;
  /** Counter key prefix; the counter is `${keyPrefix}:${key}`. */
  keyPrefix: string;
  /** Largest lease (≥ 1); 1 = one Redis call per request. */
  maxLease: number;
  /** A lease is at most 1/divisor of the quota left in Redis, so leases shrink to 1 near the end. */
  divisor: number;
  /** Monotonic clock, ms (tests). */
  now?: () => number;
}

/** The answer for one request. `remaining` counts this instance's lease plus what Redis has left. */
export interface LeaseDecision {
  allowed: boolean;
  remaining: number;
  msBeforeNext: number;
}

interface Lease {
  /** Points of the current lease not spent yet. */
  left: number;
  /** The counter after the last grant (all instances' grants). */
  used: number;
  /** Local monotonic time the lease's window ends (conservative: measured from the request's send). */
  localEnd: number;
  /** The window's end in Redis's clock, for the release. */
  redisEnd: number;
  /** Redis granted nothing in this window. */
  exhausted: boolean;
  pending: Promise<void> | null;
}

/**
 * A Redis-shared fixed-window limiter that takes quota in leases: one atomic Lua call grants a batch
 * of points, which the instance then spends locally with no round trip. It never admits more than
 * `points` per window across all instances (Redis only ever hands out what is left, and a lease dies
 * with its window). It may under-admit: when one instance is refused, others may still hold unused
 * lease points — at most `(instances − 1) × leaseSize(points)` per window (see bench/README.md).
 * Unused points go back to Redis on `close()`. Redis failures reject (the caller applies its failure
 * policy); a lease already held keeps serving while Redis is down.
 *
 * @example
 * const l = new LeaseLimiter({ redis, points: 600, duration: 60, keyPrefix: 'rl:standard', maxLease: 100, divisor: 64 });
 * const d = await l.consume('acme');
 */
export class LeaseLimiter {
  private readonly leases = new Map<string, Lease>();
  private readonly redis: LeaseRedis;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly opts: LeaseLimiterOptions) {
    if (!Number.isInteger(opts.maxLease) || opts.maxLease < 1)
      throw new TypeError('maxLease must be an integer >= 1');
    if (!Number.isInteger(opts.divisor) || opts.divisor < 1)
      throw new TypeError('divisor must be an integer >= 1');
    this.now = opts.now ?? (() => performance.now());
    const redis = opts.redis as LeaseRedis;
    // defineCommand: EVALSHA, falling back to EVAL once per connection (and per Cluster node).
    if (typeof redis.gwLeaseTake !== 'function') {
      redis.defineCommand('gwLeaseTake', { numberOfKeys: 1, lua: TAKE_LUA });
      redis.defineCommand('gwLeaseRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
    }
    this.redis = redis;
  }

  /** The largest lease this limiter takes: the under-admission bound per other instance and window. */
  static leaseSize(points: number, maxLease: number, divisor: number): number {
    return Math.max(1, Math.min(maxLease, Math.floor(points / divisor)));
  }

  /** Counts one request for `key`; rejects only when Redis must be asked and fails. */
  async consume(key: string): Promise<LeaseDecision> {
    for (;;) {
      const lease = this.leaseOf(key);
      const now = this.now();
      if (now >= lease.localEnd) Object.assign(lease, { left: 0, exhausted: false });
      if (lease.left > 0) {
        lease.left--;
        return this.decision(lease, true, now);
      }
      if (lease.exhausted) return this.decision(lease, false, now);
      // One Redis call per key at a time: concurrent requests share the lease it brings.
      lease.pending ??= this.take(key, lease).finally(() => (lease.pending = null));
      await lease.pending;
    }
  }

  /** Gives every unused lease back to Redis (bounded by the client's command timeout); idempotent. */
  async close(): Promise<void> {
    // From now on leases are single points: nothing is left over to give back later.
    this.closed = true;
    const now = this.now();
    const releases: Promise<unknown>[] = [];
    for (const [key, lease] of this.leases) {
      const left = lease.left;
      // Spent nowhere once it is given back: zero it before the call.
      lease.left = 0;
      if (left > 0 && now < lease.localEnd) {
        releases.push(this.redis.gwLeaseRelease(this.counterKey(key), left, lease.redisEnd));
      }
    }
    await Promise.allSettled(releases);
  }

  private counterKey(key: string): string {
    return `${this.opts.keyPrefix}:${key}`;
  }

  private leaseOf(key: string): Lease {
    let lease = this.leases.get(key);
    if (!lease) {
      if (this.leases.size >= 10_000) this.sweep();
      lease = { left: 0, used: 0, localEnd: 0, redisEnd: 0, exhausted: false, pending: null };
      this.leases.set(key, lease);
    }
    return lease;
  }

  /** Drops leases of past windows (nothing to spend or give back). */
  private sweep(): void {
    const now = this.now();
    for (const [key, lease] of this.leases)
      if (now >= lease.localEnd && !lease.pending) this.leases.delete(key);
  }

  private async take(key: string, lease: Lease): Promise<void> {
    if (this.redis.status !== 'ready') throw new Error(`Redis is not ready (${this.redis.status})`);
    const sentAt = this.now();
    const { points, duration, divisor } = this.opts;
    const max = this.closed ? 1 : this.opts.maxLease;
    const [grant, used, ttl, redisEnd] = await this.redis.gwLeaseTake(
      this.counterKey(key),
      points,
      duration,
      max,
      divisor,
    );
    // The window ended `ttl` after the script ran, which was after `sentAt`: ending the lease at
    // sentAt + ttl never spends it in the next window.
    lease.localEnd = sentAt + Number(ttl);
    lease.redisEnd = Number(redisEnd);
    lease.used = Number(used);
    lease.left = Number(grant);
    lease.exhausted = lease.left === 0;
  }

  private decision(lease: Lease, allowed: boolean, now: number): LeaseDecision {
    return {
      allowed,
      remaining: Math.max(0, this.opts.points - lease.used) + lease.left,
      msBeforeNext: Math.max(0, lease.localEnd - now),
    };
  }
}

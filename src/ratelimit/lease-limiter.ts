import { performance } from 'node:perf_hooks';
import type { RedisClient } from '../redis/connection.js';

/**
 * Takes one lease from every window counter of a subject at once (KEYS = the counters; ARGV = max
 * lease, divisor, carry, then points, duration and previous end per window). Each window grants
 * `floor(free / divisor)` clamped to [1, max lease] while it has quota; the lease is the smallest
 * of those, taken from every window, or 0 from all of them when any window is full: a request
 * refused by one window consumes none of the others. Before taking, `carry` unused points of the
 * previous lease go back to each window that is still the one they came from (same end, within
 * END_TOLERANCE_MS): a lease ends with its shortest window, and its rest was counted in the longer
 * ones too. Counters have the format of rate-limiter-flexible's RateLimiterRedis (`SET NX EX`,
 * `INCRBY`); they grow by what is granted and by what an insurance admitted (SETTLE_LUA), and a
 * grant is only ever what is left, so the grants in any window never sum over its `points`
 * minus what the insurance admitted before them. Returns {grant, index of the
 * refusing window (the full one that resets last; 0 = none), then used, PTTL and end (Redis clock,
 * ms) per window}.
 */
/**
 * How far apart two readings of one window's end (Redis TIME + PTTL, taken by two scripts) may be
 * and still be the same window. PTTL counts from the server's cached command time, TIME from the
 * clock: on a busy server the two drift by a few milliseconds (±2 ms was once too tight: a lease
 * was not given back). A later window of the same counter ends at least 1 s later (durations are
 * whole seconds), so 100 ms never mistakes one for the other.
 */
const END_TOLERANCE_MS = 100;

const TAKE_LUA = `
local max, div, carry = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used, ttl = {}, {}
local grant, refuse = max, 0
for i = 1, #KEYS do
  local points, dur, prev = tonumber(ARGV[3 * i + 1]), ARGV[3 * i + 2], tonumber(ARGV[3 * i + 3])
  redis.call('set', KEYS[i], 0, 'EX', dur, 'NX')
  local u = tonumber(redis.call('get', KEYS[i]))
  local p = redis.call('pttl', KEYS[i])
  if p < 0 then
    redis.call('expire', KEYS[i], dur)
    p = 1000 * tonumber(dur)
  end
  if carry > 0 and prev > 0 and math.abs(now + p - prev) <= ${END_TOLERANCE_MS} then
    local back = math.min(carry, u)
    if back > 0 then u = redis.call('decrby', KEYS[i], back) end
  end
  used[i], ttl[i] = u, p
  local free = points - u
  if free <= 0 then
    if refuse == 0 or p > ttl[refuse] then refuse = i end
  else
    local g = math.floor(free / div)
    if g > max then g = max end
    if g < 1 then g = 1 end
    if g < grant then grant = g end
  end
end
if refuse > 0 then grant = 0 end
local out = {grant, refuse}
for i = 1, #KEYS do
  if grant > 0 then used[i] = redis.call('incrby', KEYS[i], grant) end
  out[#out + 1] = used[i]
  out[#out + 1] = ttl[i]
  out[#out + 1] = now + ttl[i]
end
return out
`;

/**
 * Gives `ARGV[1]` unused points back to each counter (KEYS) whose window is still the one the lease
 * came from (its end ARGV[i + 1], within END_TOLERANCE_MS): giving them to a later window would let
 * it exceed its limit. Never below 0.
 */
const RELEASE_LUA = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  local ttl = redis.call('pttl', KEYS[i])
  if ttl > 0 and math.abs(now + ttl - tonumber(ARGV[i + 1])) <= ${END_TOLERANCE_MS} then
    local used = tonumber(redis.call('get', KEYS[i]) or '0')
    local n = math.min(tonumber(ARGV[1]), used)
    if n > 0 then redis.call('decrby', KEYS[i], n) end
  end
end
return 1
`;

/**
 * Writes what one process's insurance admitted while Redis failed into the counters (KEYS: counter,
 * then its record `<counter>:ins`, per window; ARGV: the process's id, then per window the ms left
 * of its insurance window and the total the insurance admitted in it). A counter Redis no longer
 * has starts with that many ms left (the window the insurance counted in). The record keeps the
 * total written per process, and only the difference is added: a retried or late command (one that
 * timed out while Redis hung runs when it resumes) never counts the same requests twice.
 */
const SETTLE_LUA = `
local id = ARGV[1]
for i = 1, #KEYS, 2 do
  local ms, total = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  redis.call('set', KEYS[i], 0, 'PX', ms, 'NX')
  local ttl = redis.call('pttl', KEYS[i])
  if ttl < 0 then
    redis.call('pexpire', KEYS[i], ms)
    ttl = ms
  end
  local before = tonumber(redis.call('hget', KEYS[i + 1], id) or '0')
  if total > before then
    redis.call('incrby', KEYS[i], total - before)
    redis.call('hset', KEYS[i + 1], id, total)
    redis.call('pexpire', KEYS[i + 1], ttl)
  end
end
return 1
`;

type LeaseRedis = RedisClient & {
  gwLeaseTakeN(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  gwLeaseReleaseN(numKeys: number, ...args: (string | number)[]): Promise<number>;
  gwLeaseSettleN(numKeys: number, ...args: (string | number)[]): Promise<number>;
};

/** Requests admitted outside Redis in one window, for `LeaseLimiter.settle`. */
export interface AdmittedElsewhere {
  /** The window's counter key. */
  key: string;
  /** Ms left of the window in which they were admitted (≥ 1). */
  msLeft: number;
  /** All requests this process admitted there outside Redis so far (a total, not an increment). */
  total: number;
}

/** One window of a subject: its Redis counter key, `points` per `duration` seconds. */
export interface LeaseWindow {
  /** The counter's key. All windows of one subject must share a Cluster slot (a `{hash tag}`). */
  key: string;
  points: number;
  /** Seconds (a fixed window starting at its first request, as RateLimiterRedis). */
  duration: number;
}

/** One window's shared count after a take: `granted` points were added, making it `used`. */
export interface TakenWindow extends LeaseWindow {
  used: number;
  granted: number;
  /** The window's end, Redis clock (ms). */
  endsAt: number;
}

/** The lease sizing (`rateLimit.lease`). */
export interface LeaseLimiterOptions {
  redis: RedisClient;
  /** After each take that granted points: the deployment's counts (quota thresholds). Must not throw. */
  onTaken?: (subject: string, windows: readonly TakenWindow[]) => void;
  /** Largest lease (≥ 1); 1 = one Redis call per request. */
  maxLease: number;
  /** A lease is at most 1/divisor of the quota left in Redis, so leases shrink to 1 near the end. */
  divisor: number;
  /** Monotonic clock, ms (tests). */
  now?: () => number;
}

/** One window's state after a request: quota left (this instance's lease included) and time to reset. */
export interface WindowState {
  points: number;
  duration: number;
  remaining: number;
  msBeforeReset: number;
}

/** The answer for one request: per window, in the order given; `refusedBy` = the refusing window's index, or -1. */
export interface LeaseDecision {
  allowed: boolean;
  windows: WindowState[];
  refusedBy: number;
}

/** One window of the current lease. */
interface LeasePart {
  key: string;
  points: number;
  duration: number;
  /** The counter after the last grant (all instances' grants). */
  used: number;
  /** Local monotonic time this window ends (conservative: measured from the request's send). */
  localEnd: number;
  /** The window's end in Redis's clock, for a give-back. */
  redisEnd: number;
}

interface Lease {
  subject: string;
  /** Points of the current lease not spent yet. */
  left: number;
  /** Points of an ended lease, still counted in its longer windows: given back with the next take. */
  carry: number;
  parts: LeasePart[];
  /** Local time the lease ends: its shortest window's end. */
  localEnd: number;
  /** Index of the window that refused, while it is full (until `refusedUntil`); else -1. */
  refusedBy: number;
  refusedUntil: number;
  pending: Promise<void> | null;
}

/**
 * A Redis-shared fixed-window limiter over several windows per subject (e.g. 10/s, 600/min and a
 * key's own 100/min) that takes quota in leases: one atomic Lua call grants a batch of points from
 * every window at once, which the instance then spends locally with no round trip. It never admits
 * more than `points` per window across all instances (Redis only ever hands out what is left in
 * every window, and a lease dies with its shortest window). It may under-admit: when one instance
 * is refused, others may still hold unused lease points — at most `(instances − 1) × leaseSize`
 * per window, where the lease size is the smallest of the windows' (see bench/README.md). Unused
 * points go back to Redis on `close()`, and to the longer windows when the shortest one ends.
 * Redis failures reject (the caller applies its failure policy); a lease already held keeps
 * serving while Redis is down.
 *
 * @example
 * const l = new LeaseLimiter({ redis, maxLease: 100, divisor: 64 });
 * const d = await l.consume('acme', [
 *   { key: 'rl:{acme}:c1', points: 10, duration: 1 },
 *   { key: 'rl:{acme}:c60', points: 600, duration: 60 },
 * ]);
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
    if (typeof redis.gwLeaseTakeN !== 'function') {
      redis.defineCommand('gwLeaseTakeN', { lua: TAKE_LUA });
      redis.defineCommand('gwLeaseReleaseN', { lua: RELEASE_LUA });
      redis.defineCommand('gwLeaseSettleN', { lua: SETTLE_LUA });
    }
    this.redis = redis;
  }

  /** The largest lease for one window: the under-admission bound per other instance and window. */
  static leaseSize(points: number, maxLease: number, divisor: number): number {
    return Math.max(1, Math.min(maxLease, Math.floor(points / divisor)));
  }

  /**
   * Counts one request of `subject` against every window in `windows` (at least one); rejects only
   * when Redis must be asked and fails. A subject's windows may change between calls (a new limit):
   * the lease then starts again.
   */
  async consume(subject: string, windows: readonly LeaseWindow[]): Promise<LeaseDecision> {
    if (windows.length === 0) throw new TypeError('at least one window is needed');
    for (;;) {
      const lease = this.leaseOf(subject, windows);
      const now = this.now();
      if (now >= lease.localEnd && lease.left > 0) {
        lease.carry += lease.left;
        lease.left = 0;
      }
      if (lease.refusedBy >= 0 && now < lease.refusedUntil) return this.decision(lease, false, now);
      if (lease.left > 0 && now < lease.localEnd) {
        lease.left--;
        return this.decision(lease, true, now);
      }
      // One Redis call per subject at a time: concurrent requests share the lease it brings.
      lease.pending ??= this.take(lease).finally(() => (lease.pending = null));
      await lease.pending;
    }
  }

  /**
   * Counts in Redis what process `id` admitted outside it (its insurance) in the given windows,
   * which must share one Cluster slot (one subject's, or one company's). Idempotent per `id` and
   * window (`total` is a running total). Rejects when Redis fails; then nothing may have been
   * written, or all of it.
   */
  async settle(id: string, windows: readonly AdmittedElsewhere[]): Promise<void> {
    if (windows.length === 0) return;
    if (this.redis.status !== 'ready') throw new Error(`Redis is not ready (${this.redis.status})`);
    const keys = windows.flatMap((w) => [w.key, `${w.key}:ins`]);
    const args = windows.flatMap((w) => [Math.max(1, Math.ceil(w.msLeft)), w.total]);
    await this.redis.gwLeaseSettleN(keys.length, ...keys, id, ...args);
  }

  /** Gives every unused lease back to Redis (bounded by the client's command timeout); idempotent. */
  async close(): Promise<void> {
    // From now on leases are single points: nothing is left over to give back later.
    this.closed = true;
    const now = this.now();
    const releases: Promise<unknown>[] = [];
    for (const lease of this.leases.values()) {
      const live = lease.parts.filter((p) => now < p.localEnd);
      const left = now < lease.localEnd ? lease.left : lease.carry + lease.left;
      // Spent nowhere once it is given back: zero it before the call.
      lease.left = 0;
      lease.carry = 0;
      if (left > 0 && live.length > 0) {
        releases.push(
          this.redis.gwLeaseReleaseN(
            live.length,
            ...live.map((p) => p.key),
            left,
            ...live.map((p) => p.redisEnd),
          ),
        );
      }
    }
    await Promise.allSettled(releases);
  }

  private leaseOf(subject: string, windows: readonly LeaseWindow[]): Lease {
    let lease = this.leases.get(subject);
    if (lease && !sameWindows(lease.parts, windows)) {
      // A new limit: its windows start from what Redis says; the old lease is dropped.
      this.leases.delete(subject);
      lease = undefined;
    }
    if (!lease) {
      if (this.leases.size >= 10_000) this.sweep();
      lease = {
        subject,
        left: 0,
        carry: 0,
        parts: windows.map((w) => ({ ...w, used: 0, localEnd: 0, redisEnd: 0 })),
        localEnd: 0,
        refusedBy: -1,
        refusedUntil: 0,
        pending: null,
      };
      this.leases.set(subject, lease);
    }
    return lease;
  }

  /** Drops leases whose every window has passed (nothing to spend or give back). */
  private sweep(): void {
    const now = this.now();
    for (const [subject, lease] of this.leases)
      if (!lease.pending && lease.parts.every((p) => now >= p.localEnd)) this.leases.delete(subject);
  }

  private async take(lease: Lease): Promise<void> {
    if (this.redis.status !== 'ready') throw new Error(`Redis is not ready (${this.redis.status})`);
    const sentAt = this.now();
    const max = this.closed ? 1 : this.opts.maxLease;
    const carry = lease.carry;
    const args: (string | number)[] = lease.parts.map((p) => p.key);
    args.push(max, this.opts.divisor, carry);
    for (const p of lease.parts) args.push(p.points, p.duration, p.redisEnd);
    const r = (await this.redis.gwLeaseTakeN(lease.parts.length, ...args)).map(Number);
    // Given back (or its windows are gone): either way it is not ours any more.
    lease.carry -= carry;
    lease.parts.forEach((p, i) => {
      p.used = r[2 + 3 * i]!;
      // The window ended `ttl` after the script ran, which was after `sentAt`: ending the lease at
      // sentAt + ttl never spends it in the next window.
      p.localEnd = sentAt + r[3 + 3 * i]!;
      p.redisEnd = r[4 + 3 * i]!;
    });
    lease.localEnd = Math.min(...lease.parts.map((p) => p.localEnd));
    lease.left = r[0]!;
    lease.refusedBy = r[1]! - 1;
    lease.refusedUntil = lease.refusedBy >= 0 ? lease.parts[lease.refusedBy]!.localEnd : 0;
    if (r[0]! > 0 && this.opts.onTaken) this.reportTake(lease, r[0]!);
  }

  /** The take's counts to `onTaken`; a throw there must not fail the request (it is not Redis's). */
  private reportTake(lease: Lease, granted: number): void {
    const taken = lease.parts.map((p) => ({
      key: p.key,
      points: p.points,
      duration: p.duration,
      used: p.used,
      granted,
      endsAt: p.redisEnd,
    }));
    try {
      this.opts.onTaken!(lease.subject, taken);
    } catch {
      // a bug in the listener; the limiter goes on
    }
  }

  private decision(lease: Lease, allowed: boolean, now: number): LeaseDecision {
    return {
      allowed,
      refusedBy: allowed ? -1 : lease.refusedBy,
      windows: lease.parts.map((p, i) => ({
        points: p.points,
        duration: p.duration,
        remaining:
          !allowed && i === lease.refusedBy
            ? 0
            : Math.max(0, p.points - p.used) + (now < lease.localEnd ? lease.left : 0),
        msBeforeReset: Math.max(0, p.localEnd - now),
      })),
    };
  }
}

function sameWindows(parts: readonly LeasePart[], windows: readonly LeaseWindow[]): boolean {
  return (
    parts.length === windows.length &&
    parts.every((p, i) => {
      const w = windows[i]!;
      return p.key === w.key && p.points === w.points && p.duration === w.duration;
    })
  );
}

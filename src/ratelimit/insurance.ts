import type { LeaseDecision } from './lease-limiter.js';

/**
 * How often a process whose insurance admitted requests that Redis has not been told of yet tries
 * to tell it (ms). One call per interval while Redis stays down; when it answers, every company's
 * admissions are written at once, and subjects leave the insurance.
 */
export const SETTLE_INTERVAL_MS = 250;

/**
 * How long after a subject leaves the insurance this process still admits at most its share of
 * each of the subject's windows, through Redis too (ms). Other processes may still be on their
 * insurance, with admissions Redis has not seen yet; each of them writes those within
 * `SETTLE_INTERVAL_MS` of reaching Redis, and reconnects after an outage within about 1 s of each
 * other (the client's back-off), so 2 s covers the gap. Test: test/unit/ratelimit/tier-limiter.test.ts,
 * "caps: an instance back on Redis admits at most its share while another one is not back yet".
 */
export const CAP_MS = 2_000;

/**
 * This process's share of a limit while Redis fails: `floor(points / instances)`, so that all
 * instances' insurance together never admits more than `points` (a ceiling could exceed it by up
 * to `instances − 1`). 0 when there are more instances than points: refuse rather than exceed.
 */
export function insurancePoints(points: number, instances: number): number {
  return Math.floor(points / Math.max(1, Math.floor(instances)));
}

/** One window of a subject, as the limiter names it: its Redis counter and its configured limit. */
export interface InsuranceWindow {
  key: string;
  points: number;
  duration: number;
}

/** What this process's insurance admitted in one window and Redis has not acknowledged. */
export interface InsuranceDebt {
  /** The window's Redis counter. */
  key: string;
  /** Ms left in the window (this process's clock): Redis starts a window it no longer has with this length. */
  msLeft: number;
  /** Every request the insurance admitted in the window: a total, so writing it twice changes nothing. */
  total: number;
  /** The counter it was read from (acknowledging a replaced counter changes nothing). */
  counter: Counter;
}

/** This process's count of one window. */
interface Counter {
  /** Requests this process admitted in the window: through Redis, and on the insurance. */
  used: number;
  /** Of those, admitted on the insurance. */
  insured: number;
  /** Of `insured`, how many Redis has acknowledged. */
  settled: number;
  /** Local time (ms) the window ends: Redis's end once Redis has admitted a request in it. */
  end: number;
  /** Until then (local ms), requests admitted through Redis must fit this process's share too. */
  capUntil: number;
  /** Local time Redis last acknowledged this window's insurance admissions (-1: never). */
  ackAt: number;
}

/** A subject on the insurance: Redis is not asked until `until`, or until it answered after `since`. */
interface Stay {
  since: number;
  until: number;
}

/**
 * A full table is swept at most this often (ms): when every entry is live, a sweep per new entry
 * would cost a pass over the table per request. Live entries are never dropped, so the tables
 * hold what is live: counters per window of every subject served in it, stays per subject that
 * fell back (both bounded by the companies and keys in the store, not by what clients send).
 */
const SWEEP_EVERY_MS = 1_000;

/**
 * This process's counts of every window it serves while Redis is shared, and the insurance that
 * admits requests while Redis fails (policy `insurance`). Every count survives the move between
 * Redis and the insurance, both ways:
 *
 * - **Redis → insurance.** Each request Redis admits is counted here too, in the window Redis
 *   counted it in (its end is Redis's). The insurance then admits only what is left of this
 *   process's share (`insurancePoints`) of each window, never a full share on top.
 * - **Insurance → Redis.** What the insurance admitted is a debt of its window: it is written to
 *   Redis (`LeaseLimiter.settle`, idempotent) before the subject asks Redis again, and by the
 *   limiter's settle loop as soon as Redis answers. Redis then counts it in every window, however
 *   long: a day's quota does not start again after an outage.
 * - **The gap between processes.** For `CAP_MS` after a subject leaves the insurance, requests
 *   admitted through Redis must also fit this process's share, so a process that is back does not
 *   spend what another process, not back yet, admitted on its insurance.
 *
 * A subject that falls back stays on the insurance until Redis acknowledges a debt of one of its
 * windows, or until its shortest window ends (so requests do not each wait for a Redis timeout).
 * Everything here is synchronous: two concurrent requests can never both take a share's last point.
 * Bound and test: docs/operations.md, test/integration/outage-limits.test.ts.
 *
 * @example
 * const ins = new Insurance(2); // two processes: a share of 5 of 10
 * const w = [{ key: 'rl:{acme}:c60', points: 10, duration: 60 }];
 * ins.reserve(w, now); // null: counted; then ins.align(w, redisDecision, now), or ins.release(w)
 * ins.admit('acme', w, now).allowed; // Redis failed: admitted while the share has room
 * await lease.settle(id, ins.owed(w, now) ?? []); // Redis answers again: it counts them too
 */
export class Insurance {
  private readonly counters = new Map<string, Counter>();
  private readonly stays = new Map<string, Stay>();
  /** Counters with debts, until acknowledged or ended. */
  private readonly owing = new Set<string>();
  private countersSweptAt = -Infinity;
  private staysSweptAt = -Infinity;

  /**
   * `instances`: processes sharing the limits (the share is `insurancePoints(points, instances)`).
   * Ended counters are swept once `maxCounters` are held, ended stays once `maxStays` are.
   */
  constructor(
    private readonly instances: number,
    private readonly maxCounters = 100_000,
    private readonly maxStays = 10_000,
  ) {}

  /** This process's share of `points`. */
  share(points: number): number {
    return insurancePoints(points, this.instances);
  }

  /**
   * Whether `subject` is on the insurance (Redis not to be asked). A stay that is over ends here,
   * and its windows are capped at this process's share for `CAP_MS`.
   */
  onStay(subject: string, windows: readonly InsuranceWindow[], now: number): boolean {
    const stay = this.stays.get(subject);
    if (!stay) return false;
    const answered = windows.some((w) => (this.counters.get(w.key)?.ackAt ?? -1) >= stay.since);
    if (now < stay.until && !answered) return true;
    this.stays.delete(subject);
    for (const w of windows) this.counter(w, now).capUntil = now + CAP_MS;
    return false;
  }

  /**
   * Admits one request on the insurance: counted in every window when each has room in this
   * process's share, else in none. Starts the subject's stay. The decision's `points` are the shares.
   */
  admit(subject: string, windows: readonly InsuranceWindow[], now: number): LeaseDecision {
    const cs = windows.map((w) => this.counter(w, now));
    let stay = this.stays.get(subject);
    if (!stay) {
      if (this.stays.size >= this.maxStays && now - this.staysSweptAt >= SWEEP_EVERY_MS) {
        this.staysSweptAt = now;
        for (const [s, st] of this.stays) if (st.until <= now) this.stays.delete(s);
      }
      stay = { since: now, until: Math.min(...cs.map((c) => c.end)) };
      this.stays.set(subject, stay);
    }
    // Capped until CAP_MS after the stay, also when the stay is never looked at again (swept).
    for (const c of cs) c.capUntil = Math.max(c.capUntil, stay.until + CAP_MS);
    const refusedBy = this.fullest(windows, cs, () => true);
    if (refusedBy < 0) {
      for (const [i, c] of cs.entries()) {
        c.used++;
        c.insured++;
        this.owing.add(windows[i]!.key);
      }
    }
    return this.decision(windows, cs, refusedBy, now);
  }

  /**
   * Counts a request that Redis is about to decide, in every window. Returns null when counted;
   * a refusal (nothing counted) when a capped window has no room left in this process's share.
   */
  reserve(windows: readonly InsuranceWindow[], now: number): LeaseDecision | null {
    const cs = windows.map((w) => this.counter(w, now));
    const refusedBy = this.fullest(windows, cs, (c) => c.capUntil > now);
    if (refusedBy >= 0) return this.decision(windows, cs, refusedBy, now);
    for (const c of cs) c.used++;
    return null;
  }

  /** Un-counts a reserved request that Redis refused, or that failed. */
  release(windows: readonly InsuranceWindow[]): void {
    for (const w of windows) {
      const c = this.counters.get(w.key);
      if (c && c.used > 0) c.used--;
    }
  }

  /** Redis admitted the reserved request: its windows' ends (`d`, at `now`) become the counters'. */
  align(windows: readonly InsuranceWindow[], d: LeaseDecision, now: number): void {
    windows.forEach((w, i) => {
      const c = this.counters.get(w.key);
      const ms = d.windows[i]?.msBeforeReset ?? 0;
      if (c && ms > 0) c.end = now + ms;
    });
  }

  /** The debts of `windows` still running, or null when Redis knows all their admissions. */
  owed(windows: readonly InsuranceWindow[], now: number): InsuranceDebt[] | null {
    let out: InsuranceDebt[] | null = null;
    for (const w of windows) {
      const c = this.counters.get(w.key);
      if (c && c.end > now && c.insured > c.settled)
        (out ??= []).push({ key: w.key, msLeft: Math.ceil(c.end - now), total: c.insured, counter: c });
    }
    return out;
  }

  /** Every debt, grouped by Cluster hash tag (one Redis call each); ended windows are dropped. */
  owedByTag(now: number): Map<string, InsuranceDebt[]> {
    const out = new Map<string, InsuranceDebt[]>();
    for (const key of this.owing) {
      const c = this.counters.get(key);
      if (!c || c.end <= now || c.insured <= c.settled) {
        this.owing.delete(key);
        continue;
      }
      const tag = hashTagOf(key);
      let list = out.get(tag);
      if (!list) out.set(tag, (list = []));
      list.push({ key, msLeft: Math.ceil(c.end - now), total: c.insured, counter: c });
    }
    return out;
  }

  /** Redis counted `debts` (at `now`): stays of their subjects may end. */
  acknowledge(debts: readonly InsuranceDebt[], now: number): void {
    for (const d of debts) {
      d.counter.settled = Math.max(d.counter.settled, d.total);
      d.counter.ackAt = now;
    }
  }

  /** Counters held (ended ones included until swept). */
  get size(): number {
    return this.counters.size;
  }

  /** Of the windows for which `check` holds and which have no room, the one that resets last; else -1. */
  private fullest(
    windows: readonly InsuranceWindow[],
    cs: Counter[],
    check: (c: Counter) => boolean,
  ): number {
    let refusedBy = -1;
    cs.forEach((c, i) => {
      if (!check(c) || c.used < this.share(windows[i]!.points)) return;
      if (refusedBy < 0 || c.end > cs[refusedBy]!.end) refusedBy = i;
    });
    return refusedBy;
  }

  private decision(
    windows: readonly InsuranceWindow[],
    cs: Counter[],
    refusedBy: number,
    now: number,
  ): LeaseDecision {
    return {
      allowed: refusedBy < 0,
      refusedBy,
      windows: windows.map((w, i) => {
        const share = this.share(w.points);
        return {
          points: share,
          duration: w.duration,
          remaining: Math.max(0, share - cs[i]!.used),
          msBeforeReset: cs[i]!.end - now,
        };
      }),
    };
  }

  /** The window's counter; a new one when it has ended (caps and acknowledgements carry over). */
  private counter(w: InsuranceWindow, now: number): Counter {
    let c = this.counters.get(w.key);
    if (!c || c.end <= now) {
      if (this.counters.size >= this.maxCounters && now - this.countersSweptAt >= SWEEP_EVERY_MS) {
        this.countersSweptAt = now;
        this.sweep(now);
      }
      c = {
        used: 0,
        insured: 0,
        settled: 0,
        end: now + w.duration * 1000,
        capUntil: c?.capUntil ?? 0,
        ackAt: c?.ackAt ?? -1,
      };
      this.counters.set(w.key, c);
    }
    return c;
  }

  private sweep(now: number): void {
    for (const [key, c] of this.counters)
      if (c.end <= now && c.capUntil <= now) {
        this.counters.delete(key);
        this.owing.delete(key);
      }
  }
}

/** A counter's Cluster hash tag (`{company}`); the key itself when it has none. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open, close + 1) : key;
}

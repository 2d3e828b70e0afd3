import type { LeaseDecision } from './lease-limiter.js';

/** One window to count in memory: its counter name, `points` per `duration` seconds. */
export interface MemoryWindow {
  key: string;
  points: number;
  duration: number;
}

interface Counter {
  used: number;
  /** Date.now() at which the window ends. */
  end: number;
}

/**
 * Fixed windows counted in process memory (the limiter without Redis; with Redis, `Insurance`).
 * A request is checked against every window and counted in all of them in one synchronous step,
 * or in none when any window is full: two concurrent requests can never both take the last point,
 * and a refusal consumes nothing. A window starts with its first request, as in Redis. Ended
 * windows are swept once the table holds `maxCounters` entries (at most once a second); live ones
 * are kept, so the table holds one entry per window of every subject served in it.
 *
 * @example
 * const m = new MemoryWindowLimiter();
 * m.consume([{ key: 'acme:1', points: 10, duration: 1 }], Date.now()).allowed;
 */
export class MemoryWindowLimiter {
  private readonly counters = new Map<string, Counter>();
  private sweptAt = -Infinity;
  constructor(private readonly maxCounters = 100_000) {}

  /** Counts one request against every window (at `now`, ms); the answer has the shape of a lease decision. */
  consume(windows: readonly MemoryWindow[], now: number): LeaseDecision {
    // At most one sweep a second: a table full of live windows would otherwise cost a pass per request.
    if (this.counters.size >= this.maxCounters && now - this.sweptAt >= 1000) this.sweep(now);
    const counters = windows.map((w) => this.counter(w, now));
    let refusedBy = -1;
    counters.forEach((c, i) => {
      if (c.used >= windows[i]!.points && (refusedBy < 0 || c.end > counters[refusedBy]!.end)) refusedBy = i;
    });
    if (refusedBy < 0) for (const c of counters) c.used++;
    return {
      allowed: refusedBy < 0,
      refusedBy,
      windows: windows.map((w, i) => ({
        points: w.points,
        duration: w.duration,
        remaining: Math.max(0, w.points - counters[i]!.used),
        msBeforeReset: counters[i]!.end - now,
      })),
    };
  }

  /** Counters held, ended ones included until swept (the table's memory, bounded by the sweep). */
  get size(): number {
    return this.counters.size;
  }

  private counter(w: MemoryWindow, now: number): Counter {
    let c = this.counters.get(w.key);
    if (!c || c.end <= now) {
      c = { used: 0, end: now + w.duration * 1000 };
      this.counters.set(w.key, c);
    }
    return c;
  }

  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [key, c] of this.counters) if (c.end <= now) this.counters.delete(key);
  }
}

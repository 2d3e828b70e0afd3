import type { ErrorCode } from '../errors.js';
import { countsFor, emptyCounts, hourStart, USAGE_FIELDS, type UsageCounts } from './counts.js';
import type { UsageDelta, UsageStore } from './usage-store.js';

/** The store flushed to, the flush interval, and a hook for each flush's outcome (metrics, logs). */
export interface UsageRecorderOptions {
  store: UsageStore;
  /** How often the aggregated counts are written (ms); 0 = only by `flush()`/`close()`. */
  flushIntervalMs: number;
  onFlush?: (result: { ok: true; entries: number } | { ok: false; entries: number; error: unknown }) => void;
  now?: () => number;
}

/**
 * Counts requests per company and hour without a store round trip per request: `record` adds to
 * an in-memory table (synchronous, no I/O); every `flushIntervalMs` the table is swapped out and
 * written in one `store.add` (one Redis pipeline). A failed flush puts its counts back, to be
 * retried with the next one (a pipeline cut half-way may then count part of it twice).
 * `close()` stops the timer and flushes what is left (call it on shutdown).
 */
export class UsageRecorder {
  /** Counts not yet written, by company, then by hour start. */
  private pending = new Map<string, Map<number, UsageDelta>>();
  private readonly timer: NodeJS.Timeout | null;
  private flushing: Promise<void> | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: UsageRecorderOptions) {
    this.now = opts.now ?? Date.now;
    this.timer = opts.flushIntervalMs > 0 ? setInterval(() => void this.flush(), opts.flushIntervalMs) : null;
    this.timer?.unref();
  }

  /**
   * Counts one finished request of a known company (see `countsFor`), and of its key when the
   * key is known: one more map lookup per request, a new entry only for a key's first request
   * of the hour.
   */
  record(companyId: string, error: ErrorCode | undefined, status: number, keyId?: string): void {
    const fields = countsFor(error, status);
    if (!fields.length) return;
    const delta = this.deltaOf(companyId, hourStart(this.now()));
    for (const f of fields) delta.counts[f]++;
    if (keyId === undefined) return;
    const byKey = keyCountsOf(delta, keyId);
    for (const f of fields) byKey[f]++;
  }

  private deltaOf(companyId: string, hour: number): UsageDelta {
    let hours = this.pending.get(companyId);
    if (!hours) {
      hours = new Map();
      this.pending.set(companyId, hours);
    }
    let d = hours.get(hour);
    if (!d) {
      d = { companyId, hour, counts: emptyCounts() };
      hours.set(hour, d);
    }
    return d;
  }

  /** Writes the counts gathered so far; resolves when written (or put back after a failure). */
  flush(): Promise<void> {
    // One flush at a time: a slow Redis must not get overlapping pipelines of the same counts.
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()].flatMap((hours) => [...hours.values()]);
    this.pending = new Map();
    try {
      await this.opts.store.add(batch);
      this.opts.onFlush?.({ ok: true, entries: batch.length });
    } catch (error) {
      for (const d of batch) {
        const back = this.deltaOf(d.companyId, d.hour);
        for (const f of USAGE_FIELDS) back.counts[f] += d.counts[f];
        for (const [keyId, counts] of d.keys ?? []) {
          const byKey = keyCountsOf(back, keyId);
          for (const f of USAGE_FIELDS) byKey[f] += counts[f];
        }
      }
      this.opts.onFlush?.({ ok: false, entries: batch.length, error });
    }
  }

  /** Stops the timer and flushes the rest (after a running flush, if any). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }
}

/** The counts of one key in a delta, created at its first request of the hour. */
function keyCountsOf(delta: UsageDelta, keyId: string): UsageCounts {
  delta.keys ??= new Map();
  let c = delta.keys.get(keyId);
  if (!c) delta.keys.set(keyId, (c = emptyCounts()));
  return c;
}

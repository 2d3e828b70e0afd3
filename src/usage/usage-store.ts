import { DAY_MS, HOUR_MS, USAGE_FIELDS, type UsageCounts } from './counts.js';
import type { UsageReader } from './query.js';

/** One company-hour of counts to add. */
export interface UsageDelta {
  companyId: string;
  /** Hour start, ms. */
  hour: number;
  counts: UsageCounts;
}

/**
 * Where flushed usage goes: Redis (shared, exact across instances) or this process's memory. `add`
 * applies every delta of one flush; it rejects on an outage, and the caller keeps the deltas.
 */
export interface UsageStore extends UsageReader {
  readonly kind: 'memory' | 'redis';
  add(deltas: UsageDelta[]): Promise<void>;
}

/**
 * Usage in process memory (memory and file stores without `rateLimit.redisUrl`): counts of this
 * instance only, lost on restart; hours older than the retention are dropped on each add.
 */
export class MemoryUsageStore implements UsageStore {
  readonly kind = 'memory' as const;
  private readonly hours = new Map<string, UsageCounts>();

  constructor(
    private readonly retentionDays: number,
    private readonly now: () => number = Date.now,
  ) {}

  async add(deltas: UsageDelta[]): Promise<void> {
    for (const d of deltas) {
      const k = `${d.companyId} ${d.hour}`;
      const cur = this.hours.get(k);
      if (!cur) this.hours.set(k, { ...d.counts });
      else for (const f of USAGE_FIELDS) cur[f] += d.counts[f];
    }
    const oldest = this.now() - this.retentionDays * DAY_MS - HOUR_MS;
    for (const k of this.hours.keys()) if (Number(k.split(' ')[1]) < oldest) this.hours.delete(k);
  }

  async readHours(companyId: string, hours: number[]): Promise<Map<number, UsageCounts>> {
    const out = new Map<number, UsageCounts>();
    for (const h of hours) {
      const c = this.hours.get(`${companyId} ${h}`);
      if (c) out.set(h, { ...c });
    }
    return out;
  }
}

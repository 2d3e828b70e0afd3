import { DAY_MS, HOUR_MS, USAGE_FIELDS, type UsageCounts } from './counts.js';
import type { UsageReader } from './query.js';

/** One company-hour of counts to add: the company's, and each key's share of them. */
export interface UsageDelta {
  companyId: string;
  /** Hour start, ms. */
  hour: number;
  counts: UsageCounts;
  /** The same counts by key id (requests with a known key; bounded by the company's keys). */
  keys?: Map<string, UsageCounts>;
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
      this.addTo(`${d.companyId} ${d.hour}`, d.counts);
      for (const [keyId, counts] of d.keys ?? []) this.addTo(`${d.companyId} ${d.hour} ${keyId}`, counts);
    }
    const oldest = this.now() - this.retentionDays * DAY_MS - HOUR_MS;
    for (const k of this.hours.keys()) if (Number(k.split(' ')[1]) < oldest) this.hours.delete(k);
  }

  private addTo(k: string, counts: UsageCounts): void {
    const cur = this.hours.get(k);
    if (!cur) this.hours.set(k, { ...counts });
    else for (const f of USAGE_FIELDS) cur[f] += counts[f];
  }

  async readHours(companyId: string, hours: number[], keyId?: string): Promise<Map<number, UsageCounts>> {
    const out = new Map<number, UsageCounts>();
    const suffix = keyId === undefined ? '' : ` ${keyId}`;
    for (const h of hours) {
      const c = this.hours.get(`${companyId} ${h}${suffix}`);
      if (c) out.set(h, { ...c });
    }
    return out;
  }
}

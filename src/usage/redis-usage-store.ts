import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { emptyCounts, HOUR_MS, hourTag, USAGE_FIELDS, type UsageCounts } from './counts.js';
import type { UsageDelta, UsageStore } from './usage-store.js';

/**
 * Usage in Redis, shared by every instance: one hash per company and hour,
 * `<prefix>u:<companyId>:<YYYYMMDDHH>`, fields `allowed`, `rateLimited`, ..., and each key's
 * share in the same hash as `k:<keyId>:allowed`, ... (no key of its own, so no second expiry;
 * a key id holds no `:`). A flush is ONE
 * pipeline of `HINCRBY`s (only non-zero counters) and an `EXPIREAT` per hash: the end of its hour
 * plus the retention, the same instant from every instance. On Redis Cluster the hashes live on
 * different slots, so the commands are sent side by side instead (ioredis routes each).
 */
export class RedisUsageStore implements UsageStore {
  readonly kind = 'redis' as const;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly retentionDays: number,
  ) {}

  private keyOf(companyId: string, hour: number): string {
    return `${this.prefix}u:${companyId}:${hourTag(hour)}`;
  }

  async add(deltas: UsageDelta[]): Promise<void> {
    const commands: [string, ...(string | number)[]][] = [];
    for (const d of deltas) {
      const key = this.keyOf(d.companyId, d.hour);
      for (const f of USAGE_FIELDS) if (d.counts[f] > 0) commands.push(['hincrby', key, f, d.counts[f]]);
      for (const [keyId, counts] of d.keys ?? [])
        for (const f of USAGE_FIELDS)
          if (counts[f] > 0) commands.push(['hincrby', key, `k:${keyId}:${f}`, counts[f]]);
      const expireAt = Math.floor((d.hour + HOUR_MS) / 1000) + this.retentionDays * 86_400;
      commands.push(['expireat', key, expireAt]);
    }
    if (!commands.length) return;
    if (this.client instanceof Cluster) {
      await Promise.all(commands.map(([cmd, ...args]) => this.client.call(cmd, ...args)));
      return;
    }
    const results = await this.client.pipeline(commands).exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0] as Error;
  }

  async readHours(companyId: string, hours: number[], keyId?: string): Promise<Map<number, UsageCounts>> {
    const keys = hours.map((h) => this.keyOf(companyId, h));
    // The wanted fields only: a company's hash also holds its keys' shares.
    const fields = keyId === undefined ? [...USAGE_FIELDS] : USAGE_FIELDS.map((f) => `k:${keyId}:${f}`);
    let rows: (string | null)[][];
    if (this.client instanceof Cluster) {
      rows = await Promise.all(keys.map((k) => this.client.hmget(k, ...fields)));
    } else {
      const results = (await this.client.pipeline(keys.map((k) => ['hmget', k, ...fields])).exec()) ?? [];
      rows = results.map(([err, v]) => {
        if (err) throw err;
        return v as (string | null)[];
      });
    }
    const out = new Map<number, UsageCounts>();
    rows.forEach((row, i) => {
      if (row.every((v) => v === null)) return;
      const counts = emptyCounts();
      USAGE_FIELDS.forEach((f, j) => (counts[f] = Number(row[j] ?? 0) || 0));
      out.set(hours[i]!, counts);
    });
    return out;
  }
}

import { isoSeconds, parseInstant, TIMESTAMP_PATTERN } from '../time.js';
import { DAY_MS, emptyCounts, HOUR_MS, USAGE_FIELDS, type UsageBucket, type UsageCounts } from './counts.js';

/** Reads stored hourly counts (Redis or this process's memory). */
export interface UsageReader {
  /**
   * Counts of `companyId` (or of its key `keyId`) for each hour start (ms) asked; hours without
   * counts may be absent.
   */
  readHours(companyId: string, hours: number[], keyId?: string): Promise<Map<number, UsageCounts>>;
}

/** Bucket size of a usage answer. */
export type Granularity = 'hour' | 'day';

/** The answer of `GET /admin/v1/companies/:id/usage` and `notify-gateway usage --json`. */
export interface UsageReport {
  companyId: string;
  granularity: Granularity;
  /** Start of the first bucket. */
  from: string;
  /** End of the last bucket (exclusive). */
  to: string;
  buckets: UsageBucket[];
}

/** A validated usage query: bucket-aligned `[fromMs, toMs)`. */
export interface UsageRange {
  granularity: Granularity;
  fromMs: number;
  toMs: number;
}

/** Most buckets one query may ask for, per granularity (31 days of hours, 400 days). */
export const MAX_BUCKETS: Readonly<Record<Granularity, number>> = { hour: 744, day: 400 };

const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Validates `from`, `to` and `granularity` (strings as sent, or absent) into a bucket-aligned range.
 * `from`/`to` are UTC timestamps (`YYYY-MM-DDTHH:MM:SSZ`) or dates (`YYYY-MM-DD`, midnight UTC);
 * `from` rounds down and `to` up to a bucket boundary. Defaults: `to` the end of the current
 * bucket, `from` 24 hours (hour)
 * or 7 days (day) before `to`. A problem is a value naming the parameter; never echoes the input.
 */
export function parseUsageRange(
  q: { from?: unknown; to?: unknown; granularity?: unknown },
  now: number,
): { ok: true; range: UsageRange } | { ok: false; details: string } {
  const g = q.granularity ?? 'hour';
  if (g !== 'hour' && g !== 'day') return { ok: false, details: 'granularity: must be one of hour, day' };
  const size = g === 'hour' ? HOUR_MS : DAY_MS;
  // Default: up to the end of the current bucket, so the last bucket is the one being counted.
  const to = q.to === undefined ? Math.floor(now / size) * size + size : instantOf(q.to);
  if (to === null) return { ok: false, details: `to: ${INSTANT_HELP}` };
  const from = q.from === undefined ? to - (g === 'hour' ? DAY_MS : 7 * DAY_MS) : instantOf(q.from);
  if (from === null) return { ok: false, details: `from: ${INSTANT_HELP}` };
  if (from >= to) return { ok: false, details: 'from: must be before to' };
  const fromMs = Math.floor(from / size) * size;
  const toMs = Math.ceil(to / size) * size;
  if ((toMs - fromMs) / size > MAX_BUCKETS[g])
    return {
      ok: false,
      details: `to: the range may cover at most ${MAX_BUCKETS[g]} ${g}s with granularity=${g}`,
    };
  return { ok: true, range: { granularity: g, fromMs, toMs } };
}

const INSTANT_HELP = 'must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ or a date YYYY-MM-DD';

function instantOf(v: unknown): number | null {
  if (typeof v !== 'string') return null;
  if (DATE_PATTERN.test(v)) return parseInstant(`${v}T00:00:00Z`);
  return TIMESTAMP_PATTERN.test(v) ? parseInstant(v) : null;
}

/**
 * The usage report of one company (or of one of its keys, `opts.keyId`) over a validated range: every bucket of the range, in order,
 * zeros included. Hours older than the retention are not read (they have expired). Rejects only
 * when the reader does (store outage).
 */
export async function readUsage(
  reader: UsageReader,
  companyId: string,
  range: UsageRange,
  opts: { now: number; retentionDays: number; keyId?: string },
): Promise<UsageReport> {
  const oldest = opts.now - opts.retentionDays * DAY_MS - HOUR_MS;
  const hours: number[] = [];
  for (let h = Math.max(range.fromMs, Math.floor(oldest / HOUR_MS) * HOUR_MS); h < range.toMs; h += HOUR_MS) {
    if (h <= opts.now) hours.push(h);
  }
  const stored = hours.length
    ? await reader.readHours(companyId, hours, opts.keyId)
    : new Map<number, UsageCounts>();
  const size = range.granularity === 'hour' ? HOUR_MS : DAY_MS;
  const buckets: UsageBucket[] = [];
  for (let b = range.fromMs; b < range.toMs; b += size)
    buckets.push({ start: isoSeconds(b), ...emptyCounts() });
  for (const [h, counts] of stored) {
    const bucket = buckets[Math.floor((h - range.fromMs) / size)];
    if (!bucket) continue;
    for (const f of USAGE_FIELDS) bucket[f] += counts[f];
  }
  return {
    companyId,
    granularity: range.granularity,
    from: isoSeconds(range.fromMs),
    to: isoSeconds(range.toMs),
    buckets,
  };
}

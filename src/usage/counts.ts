import { isoSeconds } from '../time.js';

/** The counters kept per company and hour, in the order tables and answers show them. */
export const USAGE_FIELDS = [
  'allowed',
  'rateLimited',
  'scopeDenied',
  'upstream2xx',
  'upstream4xx',
  'upstream5xx',
] as const;

/** One counter name. */
export type UsageField = (typeof USAGE_FIELDS)[number];

/** Counts of one company in one bucket (hour or day). */
export type UsageCounts = Record<UsageField, number>;

/** One bucket of a usage answer: its start (UTC timestamp) and its counts. */
export type UsageBucket = { start: string } & UsageCounts;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** All counters at zero. */
export function emptyCounts(): UsageCounts {
  return { allowed: 0, rateLimited: 0, scopeDenied: 0, upstream2xx: 0, upstream4xx: 0, upstream5xx: 0 };
}

/** Gateway answers that mean "the upstream failed": counted as the upstream's 5xx. */
const UPSTREAM_ERRORS: ReadonlySet<string> = new Set(['UPSTREAM_UNREACHABLE', 'UPSTREAM_TIMEOUT']);

/**
 * The counters one finished request adds, from what the pipeline left in `req.gw`: a request of a
 * known company (authenticated) refused by the rate limit (`RATE_LIMITED`) or by its scopes
 * (`SCOPE_DENIED`) counts there; one refused because the limiter was unavailable counts nowhere;
 * every other one was admitted (`allowed`) and, when the answer came from the upstream (or the
 * upstream failed: 502/504), also by its status class. 1xx/3xx answers, aborted requests and
 * answers the gateway made after admission (413, key in the URL) count only as `allowed`.
 */
export function countsFor(error: string | undefined, status: number): UsageField[] {
  if (error === 'RATE_LIMITED') return ['rateLimited'];
  if (error === 'SCOPE_DENIED') return ['scopeDenied'];
  if (error === 'RATE_LIMITER_UNAVAILABLE') return [];
  if (error !== undefined && !UPSTREAM_ERRORS.has(error)) return ['allowed'];
  if (status >= 200 && status < 300) return ['allowed', 'upstream2xx'];
  if (status >= 400 && status < 500) return ['allowed', 'upstream4xx'];
  if (status >= 500 && status < 600) return ['allowed', 'upstream5xx'];
  return ['allowed'];
}

/** Start (ms) of the UTC hour holding `ms`. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** `YYYYMMDDHH` of an hour start: the hour's part of a storage key. */
export function hourTag(hourMs: number): string {
  return isoSeconds(hourMs).slice(0, 13).replace(/[-T]/g, '');
}

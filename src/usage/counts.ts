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
export function countsFor(error: string | undefined, status: number): readonly UsageField[] {
  if (error === 'RATE_LIMITED') return RATE_LIMITED;
  if (error === 'SCOPE_DENIED') return SCOPE_DENIED;
  if (error === 'RATE_LIMITER_UNAVAILABLE') return NONE;
  if (error !== undefined && !UPSTREAM_ERRORS.has(error)) return ALLOWED;
  if (status >= 200 && status < 300) return ALLOWED_2XX;
  if (status >= 400 && status < 500) return ALLOWED_4XX;
  if (status >= 500 && status < 600) return ALLOWED_5XX;
  return ALLOWED;
}

// Shared answers of countsFor: no allocation per request.
const RATE_LIMITED: readonly UsageField[] = ['rateLimited'];
const SCOPE_DENIED: readonly UsageField[] = ['scopeDenied'];
const NONE: readonly UsageField[] = [];
const ALLOWED: readonly UsageField[] = ['allowed'];
const ALLOWED_2XX: readonly UsageField[] = ['allowed', 'upstream2xx'];
const ALLOWED_4XX: readonly UsageField[] = ['allowed', 'upstream4xx'];
const ALLOWED_5XX: readonly UsageField[] = ['allowed', 'upstream5xx'];

/** Start (ms) of the UTC hour holding `ms`. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** `YYYYMMDDHH` of an hour start: the hour's part of a storage key. */
export function hourTag(hourMs: number): string {
  return isoSeconds(hourMs).slice(0, 13).replace(/[-T]/g, '');
}

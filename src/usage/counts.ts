import type { ErrorCode } from '../errors.js';
import { isoSeconds } from '../time.js';

/** The counters kept per company and hour, in the order tables and answers show them. */
export const USAGE_FIELDS = [
  'allowed',
  'rateLimited',
  'scopeDenied',
  'refused',
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
  return Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0])) as UsageCounts;
}

/** What an answer was, for usage: exactly one of these per answer of a known company. */
export type UsageOutcome = 'allowed' | 'rateLimited' | 'scopeDenied' | 'refused';

/**
 * The outcome of every answer the gateway makes itself, by registry code (src/errors.ts): a new
 * code does not compile until it is listed here. `allowed`: the request went to the upstream (a
 * 502/504 is the upstream failing). `refused`: the gateway answered it after authentication, for
 * another reason than the rate limit or the scopes (a key in the URL, a body over the limit or
 * with a method override, the limiter or the store unavailable, an internal error); the codes that
 * come before authentication are never counted (no company is known), but are listed as what
 * they are. Admin codes never answer the public port.
 */
export const USAGE_OF_ERROR: { readonly [C in ErrorCode]: UsageOutcome } = {
  MISSING_KEY: 'refused',
  INVALID_KEY: 'refused',
  KEY_IN_URL: 'refused',
  METHOD_OVERRIDE_IN_URL: 'refused',
  METHOD_OVERRIDE_IN_BODY: 'refused',
  UNSUPPORTED_FORM_ENCODING: 'refused',
  COMPANY_INACTIVE: 'refused',
  API_ACCESS_DISABLED: 'refused',
  TIER_NOT_CONFIGURED: 'refused',
  SCOPE_DENIED: 'scopeDenied',
  HTTPS_REQUIRED: 'refused',
  BROWSER_REQUEST: 'refused',
  NOT_FOUND: 'refused',
  METHOD_NOT_ALLOWED: 'refused',
  PAYLOAD_TOO_LARGE: 'refused',
  RATE_LIMITED: 'rateLimited',
  AUTH_RATE_LIMITED: 'refused',
  BAD_REQUEST: 'refused',
  REQUEST_TIMEOUT: 'refused',
  HEADERS_TOO_LARGE: 'refused',
  INTERNAL: 'refused',
  UPSTREAM_UNREACHABLE: 'allowed',
  STORE_UNAVAILABLE: 'refused',
  RATE_LIMITER_UNAVAILABLE: 'refused',
  OVERLOADED: 'refused',
  UPSTREAM_TIMEOUT: 'allowed',
  UPSTREAM_CONNECT_TIMEOUT: 'allowed',
  UPSTREAM_TOTAL_TIMEOUT: 'allowed',
  UPSTREAM_BUSY: 'refused',
  NO_HEALTHY_UPSTREAM: 'refused',
  ADMIN_INVALID_REQUEST: 'refused',
  ADMIN_INVALID_JSON: 'refused',
  ADMIN_UNAUTHORIZED: 'refused',
  ADMIN_BROWSER_REQUEST: 'refused',
  ADMIN_LOOPBACK_ONLY: 'refused',
  ADMIN_FORBIDDEN: 'refused',
  ADMIN_NOT_FOUND: 'refused',
  ADMIN_UNKNOWN_ID: 'refused',
  ADMIN_METHOD_NOT_ALLOWED: 'refused',
  ADMIN_DUPLICATE_COMPANY: 'refused',
  ADMIN_KEY_CAP_REACHED: 'refused',
  ADMIN_KEY_INACTIVE: 'refused',
  ADMIN_READ_ONLY_STORE: 'refused',
  ADMIN_PAYLOAD_TOO_LARGE: 'refused',
  ADMIN_UNSUPPORTED_MEDIA_TYPE: 'refused',
  // Dashboard codes never answer the public port either.
  DASHBOARD_SIGN_IN_REQUIRED: 'refused',
  DASHBOARD_CODE_REFUSED: 'refused',
  DASHBOARD_CROSS_ORIGIN: 'refused',
  DASHBOARD_OWNER_ONLY: 'refused',
  DASHBOARD_REGISTRATION_CLOSED: 'refused',
  DASHBOARD_NOT_FOUND: 'refused',
  DASHBOARD_ADDRESS_TAKEN: 'refused',
  DASHBOARD_LAST_OWNER: 'refused',
  DASHBOARD_REGISTRATION_DECIDED: 'refused',
  DASHBOARD_TOO_MANY_ATTEMPTS: 'refused',
};

/**
 * The counters one finished request of a known company adds, from what the pipeline left in
 * `req.gw`: exactly one outcome (`USAGE_OF_ERROR` for the gateway's own answers; `allowed` for the
 * upstream's), and for an allowed request the class of the answer when it has one (a 502/504
 * from a failed upstream is 5xx; 1xx/3xx answers and aborted requests have none).
 */
export function countsFor(error: ErrorCode | undefined, status: number): readonly UsageField[] {
  // `?? 'refused'`: a code from a newer registry than this table (a plugin's own) is a refusal.
  const outcome = error === undefined ? 'allowed' : (USAGE_OF_ERROR[error] ?? 'refused');
  if (outcome !== 'allowed') return ONLY[outcome];
  if (status >= 200 && status < 300) return ALLOWED_2XX;
  if (status >= 400 && status < 500) return ALLOWED_4XX;
  if (status >= 500 && status < 600) return ALLOWED_5XX;
  return ALLOWED;
}

// Shared answers of countsFor: no allocation per request.
const ONLY: Record<Exclude<UsageOutcome, 'allowed'>, readonly UsageField[]> = {
  rateLimited: ['rateLimited'],
  scopeDenied: ['scopeDenied'],
  refused: ['refused'],
};
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

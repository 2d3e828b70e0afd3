import { maskKeyMaterial, maskUrlsInText } from './redact.js';

/**
 * The one registry of gateway-made answers. Every error the gateway writes comes from here, with the
 * spec's body shape `{ "error": "...", "details": "..." }`. `docs/errors.md` documents each code and a
 * unit test fails when a code is missing there.
 */
export const ERRORS = {
  MISSING_KEY: { status: 401, error: 'Unauthorized', details: 'Missing API key' },
  INVALID_KEY: { status: 401, error: 'Unauthorized', details: 'Invalid API key' },
  KEY_IN_URL: {
    status: 401,
    error: 'Unauthorized',
    details: 'API key must be sent in the X-API-Key header, not in the URL',
  },
  METHOD_OVERRIDE_IN_URL: {
    status: 400,
    error: 'Bad Request',
    details: 'Method overrides in the URL are not accepted',
  },
  METHOD_OVERRIDE_IN_BODY: {
    status: 400,
    error: 'Bad Request',
    details: 'Method overrides in a request body are not accepted',
  },
  UNSUPPORTED_FORM_ENCODING: {
    status: 415,
    error: 'Unsupported Media Type',
    details: 'Form and JSON bodies are accepted uncompressed and in an ASCII-compatible charset only',
  },
  COMPANY_INACTIVE: { status: 403, error: 'Forbidden', details: 'Company is not active' },
  API_ACCESS_DISABLED: {
    status: 403,
    error: 'Forbidden',
    details: 'API access is disabled for this company',
  },
  SCOPE_DENIED: { status: 403, error: 'Forbidden', details: 'This API key may not call this route' },
  HTTPS_REQUIRED: { status: 403, error: 'Forbidden', details: 'HTTPS is required' },
  BROWSER_REQUEST: {
    status: 403,
    error: 'Forbidden',
    details: 'API keys are for server-side use only; browser requests are refused',
  },
  NOT_FOUND: { status: 404, error: 'Not Found', details: 'No route matches this path' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    error: 'Method Not Allowed',
    details: 'This method is not allowed here; the Allow header lists the methods that are',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    error: 'Payload Too Large',
    details: 'Request body exceeds the size limit',
  },
  RATE_LIMITED: {
    status: 429,
    error: 'Too Many Requests',
    details: 'Rate limit exceeded; retry after the delay in Retry-After',
  },
  AUTH_RATE_LIMITED: {
    status: 429,
    error: 'Too Many Requests',
    details: 'Too many failed authentications from this address; retry after the delay in Retry-After',
  },
  BAD_REQUEST: { status: 400, error: 'Bad Request', details: 'Malformed request' },
  REQUEST_TIMEOUT: { status: 408, error: 'Request Timeout', details: 'The request was not received in time' },
  HEADERS_TOO_LARGE: {
    status: 431,
    error: 'Request Header Fields Too Large',
    details: 'Request headers exceed the size limit',
  },
  INTERNAL: { status: 500, error: 'Internal Server Error', details: 'Unexpected error' },
  UPSTREAM_UNREACHABLE: { status: 502, error: 'Bad Gateway', details: 'Upstream service is unreachable' },
  STORE_UNAVAILABLE: {
    status: 503,
    error: 'Service Unavailable',
    details: 'Key store is unavailable; retry shortly',
  },
  RATE_LIMITER_UNAVAILABLE: {
    status: 503,
    error: 'Service Unavailable',
    details: 'Rate limiter is unavailable; retry shortly',
  },
  TIER_NOT_CONFIGURED: {
    status: 503,
    error: 'Service Unavailable',
    details: "The company's rate-limit tier is not configured on this gateway; the operator must fix it",
  },
  OVERLOADED: {
    status: 503,
    error: 'Service Unavailable',
    details: 'The gateway is at capacity; retry after the delay in Retry-After',
  },
  UPSTREAM_TIMEOUT: {
    status: 504,
    error: 'Gateway Timeout',
    details: 'Upstream service did not answer in time',
  },
  UPSTREAM_CONNECT_TIMEOUT: {
    status: 504,
    error: 'Gateway Timeout',
    details: 'Upstream service did not accept a connection in time',
  },
  UPSTREAM_TOTAL_TIMEOUT: {
    status: 504,
    error: 'Gateway Timeout',
    details: 'Upstream service did not complete the request in time',
  },
  UPSTREAM_BUSY: {
    status: 503,
    error: 'Service Unavailable',
    details:
      'Too many requests of this company in flight on this route; retry after the delay in Retry-After',
  },
  NO_HEALTHY_UPSTREAM: {
    status: 503,
    error: 'Service Unavailable',
    details: 'No healthy upstream target for this route; retry shortly',
  },

  // Admin API (its own port). `details` is the default; most answers replace it with specifics
  // (the field at fault, the id not found). Store outages answer STORE_UNAVAILABLE (503), anything
  // else unexpected INTERNAL (500).
  ADMIN_INVALID_REQUEST: {
    status: 400,
    error: 'Bad Request',
    details: 'Invalid request: the details name the field at fault',
  },
  ADMIN_INVALID_JSON: { status: 400, error: 'Bad Request', details: 'Body is not valid JSON' },
  ADMIN_UNAUTHORIZED: { status: 401, error: 'Unauthorized', details: 'Missing or invalid admin token' },
  ADMIN_BROWSER_REQUEST: {
    status: 403,
    error: 'Forbidden',
    details: 'The admin API does not serve browser requests',
  },
  ADMIN_LOOPBACK_ONLY: {
    status: 403,
    error: 'Forbidden',
    details: 'Without ADMIN_TOKEN the admin API answers loopback host names only',
  },
  ADMIN_FORBIDDEN: {
    status: 403,
    error: 'Forbidden',
    details: "This admin token's role may not use this route",
  },
  ADMIN_NOT_FOUND: { status: 404, error: 'Not Found', details: 'No admin route matches this path' },
  ADMIN_UNKNOWN_ID: { status: 404, error: 'Not Found', details: 'Company or key not found' },
  ADMIN_METHOD_NOT_ALLOWED: {
    status: 405,
    error: 'Method Not Allowed',
    details: 'This admin path does not serve this method; the Allow header lists the methods it does',
  },
  ADMIN_DUPLICATE_COMPANY: { status: 409, error: 'Conflict', details: 'The company exists already' },
  ADMIN_KEY_CAP_REACHED: {
    status: 409,
    error: 'Conflict',
    details: 'The company has its maximum of active keys; revoke one first',
  },
  ADMIN_KEY_INACTIVE: {
    status: 409,
    error: 'Conflict',
    details: 'The key is no longer active; create a new key instead',
  },
  ADMIN_READ_ONLY_STORE: {
    status: 409,
    error: 'Conflict',
    details: 'The key store is read-only (file store): change the YAML file instead',
  },
  ADMIN_PAYLOAD_TOO_LARGE: {
    status: 413,
    error: 'Payload Too Large',
    details: 'Admin request bodies are limited to 64 KiB',
  },
  ADMIN_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    error: 'Unsupported Media Type',
    details: 'Content-Type must be application/json',
  },

  // Company dashboard (its own port, docs/dashboard.md).
  DASHBOARD_SIGN_IN_REQUIRED: {
    status: 401,
    error: 'Unauthorized',
    details: 'Sign in first: there is no session, or it has ended',
  },
  DASHBOARD_CODE_REFUSED: {
    status: 401,
    error: 'Unauthorized',
    details: 'The code is wrong, expired or used up; ask for a new one',
  },
  DASHBOARD_CROSS_ORIGIN: {
    status: 403,
    error: 'Forbidden',
    details: 'Dashboard writes must come from the dashboard page itself',
  },
  DASHBOARD_OWNER_ONLY: {
    status: 403,
    error: 'Forbidden',
    details: 'Only an owner of the company may do this',
  },
  DASHBOARD_REGISTRATION_CLOSED: {
    status: 403,
    error: 'Forbidden',
    details: 'Registration is closed; ask the operator for an invitation',
  },
  DASHBOARD_NOT_FOUND: { status: 404, error: 'Not Found', details: 'Not found' },
  DASHBOARD_ADDRESS_TAKEN: {
    status: 409,
    error: 'Conflict',
    details: 'This address belongs to a member already',
  },
  DASHBOARD_LAST_OWNER: {
    status: 409,
    error: 'Conflict',
    details: 'The last owner of a company cannot be removed; invite another owner first',
  },
  DASHBOARD_REGISTRATION_DECIDED: {
    status: 409,
    error: 'Conflict',
    details: 'The registration was approved or rejected already',
  },
  DASHBOARD_TOO_MANY_ATTEMPTS: {
    status: 429,
    error: 'Too Many Requests',
    details: 'Too many sign-in attempts; retry after the delay in Retry-After',
  },
} as const satisfies Record<string, { status: number; error: string; details: string }>;

/** A key of the error registry (`ERRORS`). */
export type ErrorCode = keyof typeof ERRORS;

/**
 * The gateway's one error class. Thrown for infrastructure failures and by admin validation;
 * expected request outcomes (bad key, over limit) are values, not throws.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: string;
  constructor(code: ErrorCode, details?: string, options?: { cause?: unknown }) {
    super(details ?? ERRORS[code].details, options);
    this.name = 'GatewayError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = details ?? ERRORS[code].details;
  }
}

/** Error body of the spec (section 2): `{ error, details }`. */
export interface ErrorBody {
  error: string;
  details: string;
}

/** Pre-serialised bodies: the hot path writes a constant buffer, no JSON.stringify per denial. */
const BODIES = new Map<ErrorCode, Buffer>(
  (Object.keys(ERRORS) as ErrorCode[]).map((c) => [
    c,
    Buffer.from(JSON.stringify({ error: ERRORS[c].error, details: ERRORS[c].details })),
  ]),
);

/** Serialises the spec body for a code, with an optional replacement for `details`. */
export function errorBody(code: ErrorCode, details?: string): Buffer {
  if (details === undefined) return BODIES.get(code)!;
  return Buffer.from(JSON.stringify({ error: ERRORS[code].error, details }));
}

/**
 * A complete raw HTTP/1.1 error response, for answers written straight to a socket (parser errors,
 * header overflow, slow clients, `CONNECT`) where no response object exists, with `headers` (e.g.
 * the security headers, `Allow`) added as given. Always closes the connection.
 */
export function rawErrorResponse(
  code: ErrorCode,
  headers: readonly (readonly [string, string])[] = [],
): string {
  const e = ERRORS[code];
  const body = BODIES.get(code)!;
  let extra = '';
  for (const [name, value] of headers) extra += `${name}: ${value}\r\n`;
  return (
    `HTTP/1.1 ${e.status} ${e.error}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${body.length}\r\nCache-Control: no-store\r\n${extra}Connection: close\r\n\r\n${body.toString()}`
  );
}

/** Minimal writer interface shared by Express responses and raw `ServerResponse`s. */
interface Writable {
  headersSent: boolean;
  statusCode: number;
  setHeader(name: string, value: string | number): unknown;
  end(body: Buffer): unknown;
}

/** Writes a gateway error. Callers must check `headersSent` themselves when it can be true. */
export function sendError(res: Writable, code: ErrorCode, details?: string): void {
  const body = errorBody(code, details);
  res.statusCode = ERRORS[code].status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

/**
 * An error's first line with anything that could be a key or a key hash masked, and the
 * credentials of any URL in it (a Redis URL with its password), for logging errors
 * that come from below (Redis, the store): their text is not ours and may quote what failed.
 */
export function safeMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // Masked before the cut, so a cut cannot split a URL and leave its password unmasked.
  return maskUrlsInText(maskKeyMaterial(text.split('\n')[0] ?? '')).slice(0, 300);
}

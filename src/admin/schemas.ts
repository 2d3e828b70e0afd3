import { z } from 'zod';
import {
  companyStatusSchema,
  emailSchema,
  environmentSchema,
  holdsKeyMaterial,
  idSchema,
  labelSchema,
  limitsSchema,
  nameSchema,
  scopesSchema,
  tierNameSchema,
  timestampSchema,
} from '../config/fields.js';
import type { ErrorCode } from '../errors.js';
import {
  companyWebhookCreateSchema,
  createdWebhookSchema,
  deliveryQuerySchema,
  deliveryViewSchema,
  webhookViewSchema,
} from '../events/schemas.js';
import { AUDIT_EVENTS } from './audit-query.js';
import { requiredRole, type AdminRole } from './roles.js';
import { TIMESTAMP_PATTERN } from '../time.js';

// The admin API's one source of truth: the schemas that validate its requests (AdminService), the
// shapes of its answers, and the table of its operations. The OpenAPI document (openapi.ts) is
// generated from this module, and the test suite checks every admin answer against it. Each field
// comes from config/fields.ts, the one rule per field that the CLI, `apply`, the key file and the
// company dashboard use too.

// ---- requests

const companyStatus = companyStatusSchema;

/**
 * How long the old key keeps working after a rotation when the body gives no grace period: 7
 * days. Every rotation schedules the old key's revocation, so the old key leaves the active-key
 * cap at once and the cap holds again when the grace period ends (see `rotateKey`).
 */
export const DEFAULT_ROTATION_GRACE_SECONDS = 7 * 86_400;

/** `POST /admin/v1/companies`. */
export const companyCreateSchema = z
  .object({
    id: idSchema,
    name: nameSchema.optional(),
    tier: tierNameSchema.default('free'),
    status: companyStatus.default('active'),
    apiAccess: z.boolean().default(true),
    /** Routes its keys may call; null or absent = every route. */
    scopes: scopesSchema.optional(),
    /** Its own windows; null or absent = its tier's. */
    limits: limitsSchema.nullable().optional(),
  })
  .strict();

/** `PATCH /admin/v1/companies/:id`: at least one field. */
export const companyPatchSchema = z
  .object({
    name: nameSchema.optional(),
    tier: tierNameSchema.optional(),
    status: companyStatus.optional(),
    apiAccess: z.boolean().optional(),
    scopes: scopesSchema.optional(),
    limits: limitsSchema.nullable().optional(),
  })
  .strict()
  .refine(
    (p) => Object.keys(p).length > 0,
    'at least one of name, tier, status, apiAccess, scopes, limits is required',
  );

/** `PATCH /admin/v1/keys/:keyId`: the key's own scopes (narrower only) and windows. */
export const keyPatchSchema = z
  .object({
    scopes: scopesSchema.optional(),
    limits: limitsSchema.nullable().optional(),
  })
  .strict()
  .refine((p) => Object.keys(p).length > 0, 'at least one of scopes, limits is required');

/** `POST /admin/v1/companies/:id/keys` (the body may be absent). */
export const keyCreateSchema = z
  .object({
    label: labelSchema.optional(),
    environment: environmentSchema.default('live'),
    expiresAt: timestampSchema.optional(),
  })
  .strict();

/** `POST /admin/v1/keys/:keyId/rotate` (the body may be absent). */
export const keyRotateSchema = z
  .object({
    /** Seconds the old key keeps working (0: revoked at once); absent = 7 days. */
    gracePeriodSeconds: z
      .number()
      .int()
      .min(0)
      .max(90 * 86_400)
      .default(DEFAULT_ROTATION_GRACE_SECONDS),
    label: labelSchema.optional(),
  })
  .strict();

/** `POST /admin/v1/companies/:id/members` and the dashboard's invitation: an address and a role. */
export const memberInviteSchema = z
  .object({ email: emailSchema, role: z.enum(['owner', 'developer']).default('developer') })
  .strict();

/**
 * `GET /admin/v1/audit` query (rules in audit-query.ts `parseAuditQuery`): `limit` clamped to
 * 1-1000 (default 100); `companyId` a company id; `event` event names separated by commas;
 * `from`/`to` UTC timestamps or dates; `before`/`after` an entry id from an earlier answer (the
 * next page: the last entry's id as `before`). Like every admin query, each parameter at most
 * once, as `name=value` (`findQueryProblems`).
 */
export const auditQuerySchema = z.object({
  limit: z.coerce.number().int().optional(),
  companyId: idSchema.optional(),
  event: z
    .string()
    .optional()
    .describe(`Comma-separated: ${AUDIT_EVENTS.join(', ')}`),
  from: z.string().optional(),
  to: z.string().optional(),
  before: z.string().optional(),
  after: z.string().optional(),
});

/** `GET /admin/v1/audit/export` query: the audit filters and `after`, no limit and no `before`. */
export const auditExportQuerySchema = auditQuerySchema.omit({ limit: true, before: true });

/** `GET /admin/v1/keys` query: the start of a display prefix (`nk_live_AbC`). */
export const keySearchQuerySchema = z.object({ prefix: z.string() });

// ---- answers (strict: a field the document does not name, such as a key hash, fails the check)

const instant = z.string().regex(TIMESTAMP_PATTERN);
/**
 * A key's revocation or expiry as stored. Written as a UTC timestamp, but a stored value that does
 * not parse (a hand-edited record) is shown as it is, and the key counts as revoked or expired.
 */
const storedInstant = z.string();

/** A company as the admin API answers it. */
export const companySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    tier: z.string(),
    status: companyStatus,
    apiAccess: z.boolean(),
    /** Routes its keys may call; null = every route. */
    scopes: scopesSchema,
    /** Its own windows; null = its tier's. */
    limits: limitsSchema.nullable(),
    createdAt: instant,
    updatedAt: instant,
  })
  .strict();

/** What lists show of a key: never the key, never its hash. */
export const keyViewSchema = z
  .object({
    id: z.string(),
    companyId: z.string(),
    prefix: z.string(),
    label: z.string().nullable(),
    environment: z.string().nullable(),
    /** `disabled`: reversibly (`disabledAt`), e.g. by `apply --prune`; it still counts toward the cap. */
    status: z.enum(['active', 'revoked', 'expired', 'revoking', 'disabled']),
    createdAt: instant,
    lastUsedAt: instant.nullable(),
    expiresAt: storedInstant.nullable(),
    revokedAt: storedInstant.nullable(),
    exposedAt: instant.nullable(),
    rotatedTo: z.string().nullable(),
    /** Disabled since (reversibly, status `disabled`); present only while the key is disabled. */
    disabledAt: storedInstant.optional(),
    /** The key's own scopes (narrowing its company's); null = the company's. */
    scopes: scopesSchema,
    /** The key's own windows (on top of its company's); null = none. */
    limits: limitsSchema.nullable(),
    /** Older than the rotation age (default 90 days). */
    rotationDue: z.boolean(),
  })
  .strict();

/** The create answer: the only place the plaintext key ever appears. */
export const createdKeySchema = z
  .object({
    id: z.string(),
    key: z.string(),
    prefix: z.string(),
    companyId: z.string(),
    label: z.string().nullable(),
    environment: z.string(),
    createdAt: instant,
    expiresAt: instant.nullable(),
  })
  .strict();

/** The rotate answer: the new key, the key it replaces and when that one stops working. */
export const rotatedKeySchema = createdKeySchema
  .extend({ replaces: z.string(), oldKeyRevokesAt: instant.nullable() })
  .strict();

/** A company's registration in the dashboard (its id is the company's). */
export const registrationSchema = z
  .object({
    id: z.string(),
    companyName: z.string(),
    email: z.string(),
    status: z.enum(['pending', 'approved', 'rejected']),
    createdAt: instant,
    decidedAt: instant.nullable(),
    decidedBy: z.string().nullable(),
  })
  .strict();

/** A member of a company in the dashboard: `owner` (members, keys) or `developer` (keys). */
export const memberSchema = z
  .object({
    companyId: z.string(),
    email: z.string(),
    role: z.enum(['owner', 'developer']),
    createdAt: instant,
    addedBy: z.string(),
  })
  .strict();

/** One audit trail event. Never holds a key or a hash. */
export const auditEntrySchema = z
  .object({
    id: z.string().optional(),
    at: instant,
    event: z.string(),
    companyId: z.string().optional(),
    keyId: z.string().optional(),
    keyPrefix: z.string().optional(),
    actor: z.string().optional(),
    details: z.record(z.unknown()).optional(),
  })
  .strict();

/**
 * What is wrong with a request's query string (empty when nothing): every parameter must be one of
 * `declared` (the operation's `query`; none for most), given once, as `name=value`. A repeated
 * parameter (`companyId=a&companyId=b`), a bracket form (`companyId[]=a`, `limit[x]=1`) or any
 * other shape that does not parse to one string is refused rather than one value picked or the
 * filter dropped; an unknown parameter rather than ignored. Each problem names the parameter; a
 * name that looks like a key, or is not a plain name, is not echoed.
 */
export function findQueryProblems(query: Record<string, unknown>, declared: readonly string[]): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    const bracket = name.indexOf('[');
    const base = bracket > 0 ? name.slice(0, bracket) : name;
    const shown = isShownName(base) ? base : '(a name that is not shown)';
    if (!declared.includes(base))
      problems.push(
        `${shown}: not a query parameter of this operation (${declared.length ? `it takes ${declared.join(', ')}` : 'it takes none'})`,
      );
    else if (bracket > 0 || typeof value !== 'string')
      problems.push(`${shown}: must be given once, as ${shown}=value`);
  }
  return problems;
}

function isShownName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,32}$/.test(name) && !holdsKeyMaterial(name);
}

/** `GET /admin/v1/companies/:id/usage` query (rules in src/usage/query.ts: 400 naming the parameter). */
export const usageQuerySchema = z.object({
  from: z.string().optional(),
  to: z.string().optional(),
  granularity: z.enum(['hour', 'day']).optional(),
});

/** Requests of a company per hour or day (src/usage/query.ts `UsageReport`). */
export const usageReportSchema = z
  .object({
    companyId: z.string(),
    granularity: z.enum(['hour', 'day']),
    from: instant,
    to: instant,
    buckets: z.array(
      z
        .object({
          start: instant,
          allowed: z.number().int(),
          rateLimited: z.number().int(),
          scopeDenied: z.number().int(),
          refused: z.number().int(),
          upstream2xx: z.number().int(),
          upstream4xx: z.number().int(),
          upstream5xx: z.number().int(),
        })
        .strict(),
    ),
  })
  .strict();

/** Requests of one key per hour or day: the company's report shape, with the key's id. */
export const keyUsageReportSchema = usageReportSchema.extend({ keyId: z.string() }).strict();

/** `GET /admin/v1/whoami`: the calling token's name (the audit trail's actor) and role. */
export const whoamiSchema = z.object({ name: z.string(), role: z.enum(['read', 'keys', 'admin']) }).strict();

/** `GET /admin/v1/upstreams`: every route's targets and their state (docs/upstreams.md). */
export const upstreamsSchema = z.array(
  z
    .object({
      route: z.string(),
      balancing: z.enum(['round-robin', 'least-requests', 'company-hash']),
      whenNoneHealthy: z.enum(['panic', 'refuse']),
      targets: z.array(
        z
          .object({
            url: z.string().describe('Credentials masked'),
            weight: z.number().int(),
            state: z
              .enum(['healthy', 'ejected', 'unhealthy'])
              .describe('`ejected`: by passive checks, until `ejectedUntil`; `unhealthy`: by active checks'),
            ejectedUntil: z.string().nullable(),
            inFlight: z.number().int(),
            ejections: z.number().int(),
            lastError: z.string().nullable(),
          })
          .strict(),
      ),
    })
    .strict(),
);

/** What `GET /admin/v1/upstreams` answers. */
export type UpstreamsView = z.infer<typeof upstreamsSchema>;

/** Every error answer: the spec's `{error, details}` (src/errors.ts). */
export const errorBodySchema = z.object({ error: z.string(), details: z.string() }).strict();

/** `GET /healthz`: the process is alive (never depends on Redis). */
export const healthSchema = z.object({ status: z.literal('ok') }).strict();

/**
 * `GET /readyz` (src/observability/readiness.ts): `checks` and `degraded` only with a valid admin
 * token (or on a tokenless loopback admin API); without one the status only, as on the public port.
 */
export const readinessSchema = z
  .object({
    status: z.enum(['ready', 'degraded', 'starting', 'draining', 'not ready']),
    checks: z.record(z.string()).optional(),
    degraded: z.array(z.string()).optional(),
  })
  .strict();

// ---- operations

/**
 * What an operation needs (`x-required-role` in the document), taken from the one route → role
 * table, `ADMIN_ROUTE_ROLES` in roles.ts: `read` for every GET, `keys` for key create, rotate and
 * revoke, `admin` for everything else.
 */
export type { AdminRole };

/** One admin API operation: what the router serves and the document describes. */
export interface AdminOperation {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express path from the admin app's root (`:name` parameters). */
  path: string;
  operationId: string;
  summary: string;
  /** `none`: served before the token check (the probes); else from `ADMIN_ROUTE_ROLES`. */
  role: AdminRole | 'none';
  /** The JSON body's schema; the body may be absent when `bodyOptional`. */
  body?: z.ZodTypeAny;
  bodyOptional?: boolean;
  query?: z.AnyZodObject;
  /** The success status and its JSON schema (`text` for a plain-text answer). */
  ok: { status: number; schema: z.ZodTypeAny; text?: string };
  /** Other answers that are not registry errors (`/readyz` 503 with its readiness body). */
  answers?: readonly { status: number; description: string; schema: z.ZodTypeAny }[];
  /** Registry codes this operation answers besides those of every admin request. */
  errors: readonly ErrorCode[];
}

/**
 * Answers of the probes, which need no token: a browser, a non-loopback `Host` without a token, a
 * body that is not JSON, a failed check.
 */
export const PROBE_ERRORS: readonly ErrorCode[] = [
  'ADMIN_BROWSER_REQUEST',
  'ADMIN_LOOPBACK_ONLY',
  'ADMIN_UNSUPPORTED_MEDIA_TYPE',
  'INTERNAL',
];

/** Answers any admin request can get: no token, a browser, a body that is not JSON, outages. */
export const COMMON_ADMIN_ERRORS: readonly ErrorCode[] = [
  'ADMIN_UNAUTHORIZED',
  'ADMIN_FORBIDDEN',
  'ADMIN_BROWSER_REQUEST',
  'ADMIN_LOOPBACK_ONLY',
  'ADMIN_UNSUPPORTED_MEDIA_TYPE',
  'ADMIN_INVALID_JSON',
  'ADMIN_PAYLOAD_TOO_LARGE',
  'BAD_REQUEST',
  'STORE_UNAVAILABLE',
  'INTERNAL',
];

const WRITE_ERRORS: readonly ErrorCode[] = ['ADMIN_INVALID_REQUEST', 'ADMIN_READ_ONLY_STORE'];
const V1 = '/admin/v1';

/** Every admin API route, in the router's order; each one's role comes from `ADMIN_ROUTE_ROLES`. */
export const ADMIN_OPERATIONS: readonly AdminOperation[] = (
  [
    {
      method: 'get',
      path: '/healthz',
      operationId: 'getHealth',
      summary: 'Liveness probe; no token needed (never depends on Redis)',
      role: 'none',
      ok: { status: 200, schema: healthSchema },
      errors: PROBE_ERRORS,
    },
    {
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary:
        'Readiness probe; no token needed. With a valid token it adds `checks` and `degraded` (503: starting, draining, or cannot serve)',
      role: 'none',
      ok: { status: 200, schema: readinessSchema },
      answers: [
        {
          status: 503,
          description: 'Not ready: starting, draining, or cannot serve',
          schema: readinessSchema,
        },
      ],
      errors: PROBE_ERRORS,
    },
    {
      method: 'get',
      path: '/metrics',
      operationId: 'getMetrics',
      summary: 'Prometheus metrics (this process, or every worker under --workers)',
      role: 'read',
      ok: { status: 200, schema: z.string(), text: 'text/plain; version=0.0.4' },
      errors: [],
    },
    {
      method: 'get',
      path: `${V1}/upstreams`,
      operationId: 'listUpstreams',
      summary:
        "Every route's upstream targets with their state, weight, requests in flight, last error and ejections",
      role: 'read',
      ok: { status: 200, schema: upstreamsSchema },
      errors: [],
    },
    {
      method: 'post',
      path: `${V1}/companies`,
      operationId: 'createCompany',
      summary: 'Create a company',
      role: 'admin',
      body: companyCreateSchema,
      ok: { status: 201, schema: companySchema },
      errors: [...WRITE_ERRORS, 'ADMIN_DUPLICATE_COMPANY'],
    },
    {
      method: 'get',
      path: `${V1}/companies`,
      operationId: 'listCompanies',
      summary: 'List companies',
      role: 'read',
      ok: { status: 200, schema: z.array(companySchema) },
      errors: [],
    },
    {
      method: 'get',
      path: `${V1}/companies/:id`,
      operationId: 'getCompany',
      summary: 'Read a company',
      role: 'read',
      ok: { status: 200, schema: companySchema },
      errors: ['ADMIN_UNKNOWN_ID'],
    },
    {
      method: 'patch',
      path: `${V1}/companies/:id`,
      operationId: 'updateCompany',
      summary: 'Change a company (takes effect on every instance within 1 s)',
      role: 'admin',
      body: companyPatchSchema,
      ok: { status: 200, schema: companySchema },
      errors: [...WRITE_ERRORS, 'ADMIN_UNKNOWN_ID'],
    },
    {
      method: 'post',
      path: `${V1}/companies/:id/keys`,
      operationId: 'createKey',
      summary: 'Create a key; the answer is the only place the key appears',
      role: 'keys',
      body: keyCreateSchema,
      bodyOptional: true,
      ok: { status: 201, schema: createdKeySchema },
      errors: [...WRITE_ERRORS, 'ADMIN_UNKNOWN_ID', 'ADMIN_KEY_CAP_REACHED'],
    },
    {
      method: 'get',
      path: `${V1}/companies/:id/usage`,
      operationId: 'readUsage',
      summary:
        'Requests of a company per hour or day (allowed, rate-limited, scope-denied, upstream classes)',
      role: 'read',
      query: usageQuerySchema,
      ok: { status: 200, schema: usageReportSchema },
      errors: ['ADMIN_INVALID_REQUEST', 'ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: `${V1}/companies/:id/keys`,
      operationId: 'listKeys',
      summary: "List a company's keys (never the key or its hash)",
      role: 'read',
      ok: { status: 200, schema: z.array(keyViewSchema) },
      errors: ['ADMIN_UNKNOWN_ID'],
    },
    {
      method: 'get',
      path: `${V1}/keys/:keyId`,
      operationId: 'getKey',
      summary: 'Read a key (never the key or its hash)',
      role: 'read',
      ok: { status: 200, schema: keyViewSchema },
      errors: ['ADMIN_UNKNOWN_ID'],
    },
    {
      method: 'patch',
      path: `${V1}/keys/:keyId`,
      operationId: 'updateKey',
      summary: "Change a key's own scopes (narrower only) and windows (on every instance within 1 s)",
      role: 'admin',
      body: keyPatchSchema,
      ok: { status: 200, schema: keyViewSchema },
      errors: [...WRITE_ERRORS, 'ADMIN_UNKNOWN_ID', 'ADMIN_KEY_INACTIVE'],
    },
    {
      method: 'delete',
      path: `${V1}/keys/:keyId`,
      operationId: 'revokeKey',
      summary: 'Revoke a key (final; refused on every instance within 1 s)',
      role: 'keys',
      ok: { status: 200, schema: keyViewSchema },
      errors: ['ADMIN_UNKNOWN_ID', 'ADMIN_READ_ONLY_STORE'],
    },
    {
      method: 'post',
      path: `${V1}/keys/:keyId/rotate`,
      operationId: 'rotateKey',
      summary: 'A new key for the same company; the old one works until revoked or the grace period ends',
      role: 'keys',
      body: keyRotateSchema,
      bodyOptional: true,
      ok: { status: 201, schema: rotatedKeySchema },
      errors: [...WRITE_ERRORS, 'ADMIN_UNKNOWN_ID', 'ADMIN_KEY_INACTIVE', 'ADMIN_KEY_CAP_REACHED'],
    },
    {
      method: 'get',
      path: `${V1}/audit`,
      operationId: 'readAudit',
      summary: 'The audit trail, newest first (Redis store)',
      role: 'read',
      query: auditQuerySchema,
      ok: { status: 200, schema: z.array(auditEntrySchema) },
      errors: ['ADMIN_INVALID_REQUEST'],
    },
    {
      method: 'get',
      path: `${V1}/audit/export`,
      operationId: 'exportAudit',
      summary:
        'The audit trail as JSON lines, oldest first, from after the given entry id (or the oldest kept): for a log store beyond the capped trail',
      role: 'read',
      query: auditExportQuerySchema,
      ok: { status: 200, schema: z.string(), text: 'application/x-ndjson' },
      errors: ['ADMIN_INVALID_REQUEST'],
    },
    {
      method: 'get',
      path: `${V1}/whoami`,
      operationId: 'whoami',
      summary: "The calling token's name and role (the console shows only what the role may do)",
      role: 'read',
      ok: { status: 200, schema: whoamiSchema },
      errors: [],
    },
    {
      method: 'get',
      path: `${V1}/keys`,
      operationId: 'findKeys',
      summary:
        'Keys of every company whose display prefix starts with `prefix`, at most 50 (never the key or its hash)',
      role: 'read',
      query: keySearchQuerySchema,
      ok: { status: 200, schema: z.array(keyViewSchema) },
      errors: ['ADMIN_INVALID_REQUEST'],
    },
    {
      method: 'get',
      path: `${V1}/keys/:keyId/usage`,
      operationId: 'readKeyUsage',
      summary: 'Requests of one key per hour or day (the same counters as the company usage)',
      role: 'read',
      query: usageQuerySchema,
      ok: { status: 200, schema: keyUsageReportSchema },
      errors: ['ADMIN_INVALID_REQUEST', 'ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: `${V1}/openapi.json`,
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      role: 'read',
      ok: { status: 200, schema: z.record(z.unknown()) },
      errors: [],
    },
    {
      method: 'get',
      path: `${V1}/webhooks`,
      operationId: 'listGatewayWebhooks',
      summary: "The gateway's own webhook endpoints (events.webhooks in the config; no secrets)",
      role: 'read',
      ok: { status: 200, schema: z.array(webhookViewSchema) },
      errors: ['ADMIN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: `${V1}/webhooks/deliveries`,
      operationId: 'listWebhookDeliveries',
      summary:
        'Webhook deliveries, newest first: pending, delivered (the last 1000) and dead letters (the last 1000)',
      role: 'read',
      query: deliveryQuerySchema,
      ok: { status: 200, schema: z.array(deliveryViewSchema) },
      errors: ['ADMIN_INVALID_REQUEST', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'post',
      path: `${V1}/webhooks/deliveries/:deliveryId/retry`,
      operationId: 'retryWebhookDelivery',
      summary: 'Send a dead letter again: back in the queue, due now, with a fresh set of attempts',
      role: 'admin',
      ok: { status: 200, schema: deliveryViewSchema },
      errors: ['ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: `${V1}/companies/:id/webhooks`,
      operationId: 'listCompanyWebhooks',
      summary: "A company's webhook endpoints (no secrets)",
      role: 'read',
      ok: { status: 200, schema: z.array(webhookViewSchema) },
      errors: ['ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'post',
      path: `${V1}/companies/:id/webhooks`,
      operationId: 'createCompanyWebhook',
      summary:
        "Add a company's webhook endpoint (at most 10); the answer holds its signing secret, shown once",
      role: 'admin',
      body: companyWebhookCreateSchema,
      ok: { status: 201, schema: createdWebhookSchema },
      errors: ['ADMIN_INVALID_REQUEST', 'ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'delete',
      path: `${V1}/companies/:id/webhooks/:webhookId`,
      operationId: 'deleteCompanyWebhook',
      summary: "Remove a company's webhook endpoint (its pending deliveries become dead letters)",
      role: 'admin',
      ok: { status: 200, schema: webhookViewSchema },
      errors: ['ADMIN_UNKNOWN_ID', 'ADMIN_NOT_FOUND'],
    },
    {
      method: 'get',
      path: `${V1}/registrations`,
      operationId: 'listRegistrations',
      summary: 'Company registrations from the dashboard, newest first (404 when the dashboard is off)',
      role: 'read',
      ok: { status: 200, schema: z.array(registrationSchema) },
      errors: ['ADMIN_NOT_FOUND'],
    },
    {
      method: 'post',
      path: `${V1}/registrations/:id/approve`,
      operationId: 'approveRegistration',
      summary: 'Approve a pending registration: the company becomes active and its contact is mailed',
      role: 'admin',
      ok: { status: 200, schema: registrationSchema },
      errors: [
        'ADMIN_NOT_FOUND',
        'DASHBOARD_NOT_FOUND',
        'DASHBOARD_REGISTRATION_DECIDED',
        'ADMIN_UNKNOWN_ID',
      ],
    },
    {
      method: 'post',
      path: `${V1}/registrations/:id/reject`,
      operationId: 'rejectRegistration',
      summary: 'Reject a pending registration: the company stays pending (it can never call the API)',
      role: 'admin',
      ok: { status: 200, schema: registrationSchema },
      errors: ['ADMIN_NOT_FOUND', 'DASHBOARD_NOT_FOUND', 'DASHBOARD_REGISTRATION_DECIDED'],
    },
    {
      method: 'get',
      path: `${V1}/companies/:id/members`,
      operationId: 'listMembers',
      summary: "A company's dashboard members",
      role: 'read',
      ok: { status: 200, schema: z.array(memberSchema) },
      errors: ['ADMIN_NOT_FOUND', 'ADMIN_UNKNOWN_ID'],
    },
    {
      method: 'post',
      path: `${V1}/companies/:id/members`,
      operationId: 'inviteMember',
      summary: 'Invite a member (an address belongs to one company); the address is mailed',
      role: 'admin',
      body: memberInviteSchema,
      ok: { status: 201, schema: memberSchema },
      errors: ['ADMIN_INVALID_REQUEST', 'ADMIN_NOT_FOUND', 'ADMIN_UNKNOWN_ID', 'DASHBOARD_ADDRESS_TAKEN'],
    },
    {
      method: 'delete',
      path: `${V1}/companies/:id/members/:email`,
      operationId: 'removeMember',
      summary: "Remove a member (never the company's last owner); its sessions end at once",
      role: 'admin',
      ok: { status: 200, schema: z.object({ removed: z.string() }).strict() },
      errors: ['ADMIN_NOT_FOUND', 'DASHBOARD_NOT_FOUND', 'DASHBOARD_LAST_OWNER'],
    },
  ] satisfies AdminOperation[]
).map((op): AdminOperation => {
  const errors: readonly ErrorCode[] = op.errors;
  return {
    ...op,
    // The probes are served before the token check; every other role comes from ADMIN_ROUTE_ROLES.
    role: op.role === 'none' ? op.role : requiredRole(op.method.toUpperCase(), op.path),
    // Every /admin/v1 operation checks its query string (`findQueryProblems`): 400 when it is off.
    errors:
      isQueryChecked(op) && !errors.includes('ADMIN_INVALID_REQUEST')
        ? [...errors, 'ADMIN_INVALID_REQUEST']
        : errors,
  };
});

/**
 * Whether an operation refuses query parameters it does not declare (`findQueryProblems`): every
 * `/admin/v1` one. Not `/metrics` and the probes: scrapers and probes may add their own.
 */
export function isQueryChecked(op: Pick<AdminOperation, 'path'>): boolean {
  return op.path.startsWith(`${V1}/`);
}

/** The operation serving `method` on a concrete path (no query), or undefined. */
export function findAdminOperation(method: string, path: string): AdminOperation | undefined {
  const m = method.toLowerCase();
  return ADMIN_OPERATIONS.find((op) => op.method === m && pathPattern(op.path).test(path));
}

/**
 * The methods served on a concrete path (`HEAD` with `GET`), for `Allow`; empty for an unknown path.
 * Matched as Express matches: any case, one optional trailing slash.
 */
export function allowedMethods(path: string): string[] {
  const methods = new Set<string>();
  for (const op of ADMIN_OPERATIONS) {
    if (!pathPattern(op.path).test(path)) continue;
    methods.add(op.method.toUpperCase());
    if (op.method === 'get') methods.add('HEAD');
  }
  return [...methods];
}

/**
 * What a request without a body (or with an empty one) misses, in the service's words: `body: a
 * JSON object is required`, then what the operation's schema requires (`id: Required`, or "at
 * least one of ..."), so the answer names the fields as any other validation error does.
 */
export function missingBodyDetails(schema: z.ZodTypeAny): string {
  const r = schema.safeParse({});
  const needs = r.success
    ? []
    : r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message));
  return ['body: a JSON object is required', ...needs].join('; ');
}

/** Express's matching of a route path: `:name` is one segment; any case; an optional trailing slash. */
function pathPattern(expressPath: string): RegExp {
  const escaped = expressPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z]+/g, '[^/]+');
  return new RegExp(`^${escaped}/?$`, 'i');
}

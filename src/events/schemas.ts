import { z } from 'zod';
import { EVENT_TYPES, eventFilterSchema, webhookUrlSchema } from '../config/events.js';
import { ID_PATTERN } from '../store/types.js';
import { TIMESTAMP_PATTERN } from '../time.js';

// The shapes of the events (what a receiver gets in `data`) and of the admin API's webhook routes.
// One source: the bus validates every emit against the first, admin/schemas.ts builds the
// operation table (router, roles, OpenAPI) from the second, and docs/events.md describes both.

const instant = z.string().regex(TIMESTAMP_PATTERN);
const id = z.string().regex(ID_PATTERN);

const keyRef = { companyId: id, keyId: id, keyPrefix: z.string().max(64) };

/** `data` of each event type. Strict: an emit with a field not listed here is a bug, refused. */
export const eventDataSchemas = {
  /** A valid key was seen in a request URL (never the key itself). */
  'key.exposed': z
    .object({
      ...keyRef,
      /** The client's address as the gateway saw it (after trusted proxies). */
      clientIp: z.string().max(64),
      /** The matched route prefix, or `-` when the URL was refused before a route matched. */
      route: z.string().max(256),
      requestId: z.string().max(128),
      /** The key was revoked for it (`keys.exposedKeys: revoke`). */
      revoked: z.boolean(),
    })
    .strict(),
  /** A key expires within 7 days. */
  'key.expiring': z
    .object({
      ...keyRef,
      label: z.string().nullable(),
      environment: z.string().nullable(),
      expiresAt: instant,
    })
    .strict(),
  /** A key is older than `keys.rotationAgeDays` and was not rotated. */
  'key.rotation_due': z
    .object({
      ...keyRef,
      label: z.string().nullable(),
      createdAt: instant,
      rotationAgeDays: z.number().int(),
    })
    .strict(),
  /** A rotated key's grace period ends within 24 hours (at once when it was shorter). */
  'key.grace_ending': z.object({ ...keyRef, revokesAt: instant, replacedBy: id.nullable() }).strict(),
  /** A key was revoked, or its grace period after a rotation ended. */
  'key.revoked': z
    .object({ ...keyRef, revokedAt: instant, reason: z.string().max(200), actor: z.string().max(64) })
    .strict(),
  /** A company's status became `suspended`. */
  'company.suspended': z
    .object({ companyId: id, previousStatus: z.enum(['active', 'pending']), actor: z.string().max(64) })
    .strict(),
  /** A company's (or a key's own) window of a day or longer reached 80 % or 100 % of its quota. */
  'quota.threshold': z
    .object({
      companyId: id,
      /** Set when the window is the key's own (`limits` on the key), null for the company's. */
      keyId: id.nullable(),
      threshold: z.union([z.literal(80), z.literal(100)]),
      limit: z.number().int(),
      windowSeconds: z.number().int(),
      used: z.number().int(),
      resetsAt: instant,
    })
    .strict(),
  /** A company registered in the company dashboard and awaits an operator's approval. */
  'registration.pending': z
    .object({
      companyId: id,
      name: z.string().max(200),
      /** The address that registered (the dashboard's sign-in address). */
      email: z.string().max(320),
      registeredAt: instant,
    })
    .strict(),
} as const satisfies Record<(typeof EVENT_TYPES)[number], z.AnyZodObject>;

/** What a receiver gets: the JSON body of a delivery, signed as sent. */
export const eventEnvelopeSchema = z
  .object({
    /** The event's id, also sent as `webhook-id`: the idempotency key (the same on every retry). */
    id: z.string(),
    type: z.enum(EVENT_TYPES),
    /** When the event happened (a retry keeps it; `webhook-timestamp` is the attempt's). */
    timestamp: instant,
    data: z.record(z.unknown()),
  })
  .strict();

// ---- admin API

/** `POST /admin/v1/companies/:id/webhooks`: a company's endpoint; the secret is made by the gateway. */
export const companyWebhookCreateSchema = z
  .object({
    url: webhookUrlSchema,
    events: eventFilterSchema.optional(),
  })
  .strict();

/** A webhook endpoint as the admin API shows it: never its secret; credentials in the URL masked. */
export const webhookViewSchema = z
  .object({
    id: z.string(),
    /** `gateway`: from the config (`events.webhooks`); `company`: set through the admin API. */
    scope: z.enum(['gateway', 'company']),
    companyId: z.string().nullable(),
    url: z.string(),
    events: z.array(z.string()),
    createdAt: instant.nullable(),
  })
  .strict();

/** The create answer: the only place a company endpoint's secret appears. */
export const createdWebhookSchema = webhookViewSchema.extend({ secret: z.string() }).strict();

const deliveryStatus = z.enum(['pending', 'delivered', 'dead']);

/** `GET /admin/v1/webhooks/deliveries` query. */
export const deliveryQuerySchema = z.object({
  status: deliveryStatus.optional(),
  companyId: z.string().regex(ID_PATTERN).optional(),
  limit: z.coerce.number().int().optional(),
});

/** One delivery of one event to one endpoint, and where it stands. */
export const deliveryViewSchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    type: z.enum(EVENT_TYPES),
    companyId: z.string().nullable(),
    endpoint: z.object({ scope: z.enum(['gateway', 'company']), id: z.string() }).strict(),
    status: deliveryStatus,
    attempts: z.number().int(),
    createdAt: instant,
    lastAttemptAt: instant.nullable(),
    /** When the next attempt is due (pending only). */
    nextAttemptAt: instant.nullable(),
    /** The last attempt's HTTP status, if the receiver answered. */
    lastStatus: z.number().int().nullable(),
    /** Why the last attempt failed (`HTTP 500`, `timeout`, `ECONNREFUSED`, ...). */
    lastError: z.string().nullable(),
    /** The event as delivered (the signed body, parsed). */
    event: eventEnvelopeSchema,
  })
  .strict();

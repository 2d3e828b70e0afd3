import { z } from 'zod';

// The `events` section of the config: which events exist, the gateway's own webhook endpoints and
// how deliveries are retried. The events themselves live in src/events/ (docs/events.md).

/** Every event the gateway emits (docs/events.md has each one's payload). */
export const EVENT_TYPES = [
  'key.exposed',
  'key.expiring',
  'key.rotation_due',
  'key.grace_ending',
  'key.revoked',
  'company.suspended',
  'quota.threshold',
  'registration.pending',
] as const;

/** One of {@link EVENT_TYPES}. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * An endpoint's event filter entry: an event type, a group (`key.*`, `company.*`) or `*`. Shared by
 * the config and the admin API, so both refuse the same typos.
 */
export const eventFilterSchema = z
  .array(
    z
      .string()
      .refine(
        (f) =>
          f === '*' ||
          (EVENT_TYPES as readonly string[]).includes(f) ||
          EVENT_TYPES.some((t) => f.endsWith('.*') && t.startsWith(f.slice(0, -1))),
        `must be an event type (${EVENT_TYPES.join(', ')}), a group such as key.*, or *`,
      ),
  )
  .min(1, 'list at least one event type, or leave events out for all of them')
  .max(16);

/** Whether an endpoint whose filter is `filter` receives events of `type`. */
export function matchesEventFilter(filter: readonly string[], type: EventType): boolean {
  return filter.some((f) => f === '*' || f === type || (f.endsWith('.*') && type.startsWith(f.slice(0, -1))));
}

/**
 * A receiver URL: http(s), at most 2048 characters, no fragment. Credentials in it
 * (`https://user:pw@host/`) are sent as Basic authentication and masked wherever the URL is shown.
 */
export const webhookUrlSchema = z
  .string()
  .max(2048)
  .url()
  .refine((v) => /^https?:\/\//i.test(v), 'must be an http:// or https:// URL')
  .refine((v) => !v.includes('#'), 'must not have a #fragment');

/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes (the spec's range),
 * e.g. from `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`.
 */
export const webhookSecretSchema = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be whsec_ followed by base64')
  .refine((s) => {
    const n = Buffer.from(s.slice(6), 'base64').length;
    return n >= 24 && n <= 64;
  }, 'must hold 24 to 64 bytes after whsec_ (base64)');

/** One of the gateway's own webhook endpoints (`events.webhooks[]`). */
export const gatewayWebhookSchema = z
  .object({
    /** Names the endpoint in deliveries, logs and metrics; default `gw-` + a hash of the URL. */
    id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,32}$/, 'must be 1-32 letters, digits, _ or -')
      .optional(),
    url: webhookUrlSchema,
    secret: webhookSecretSchema,
    /** Event types it receives (`key.*`, `*`); default every event. */
    events: eventFilterSchema.default(['*']),
  })
  .strict();

/** The `events` section. */
export const eventsConfigSchema = z
  .object({
    /** Emit events and deliver webhooks (per gateway and per company). */
    enabled: z.boolean().default(true),
    /** The gateway's own endpoints: every event they ask for, of every company. */
    webhooks: z
      .array(gatewayWebhookSchema)
      .max(16)
      .default([])
      .refine((l) => {
        const ids = l.map((w) => w.id).filter(Boolean);
        return new Set(ids).size === ids.length;
      }, 'two webhooks have the same id'),
    delivery: z
      .object({
        /** One attempt's time limit, connection to status line (a late receiver counts as failed). */
        timeoutMs: z.coerce.number().int().min(100).max(60_000).default(10_000),
        /** Attempts before a delivery becomes a dead letter (the first one included). */
        maxAttempts: z.coerce.number().int().min(1).max(50).default(12),
        /** Delay before the second attempt; each further one doubles it, with jitter. */
        backoffMs: z.coerce.number().int().min(10).max(3_600_000).default(10_000),
        /** The longest delay between two attempts (also caps a receiver's Retry-After). */
        maxBackoffMs: z.coerce.number().int().min(10).max(86_400_000).default(7_200_000),
        /** Deliveries in flight at once per gateway process. */
        concurrency: z.coerce.number().int().min(1).max(64).default(4),
        /** How often each process looks for due deliveries (new ones of its own go at once). */
        pollIntervalMs: z.coerce.number().int().min(50).max(60_000).default(1000),
      })
      .strict()
      .default({}),
    /** How often the keys are scanned for expiring, rotation-due and grace-ending keys (one process per interval). */
    scanIntervalMs: z.coerce.number().int().min(1000).max(86_400_000).default(900_000),
  })
  .strict()
  .default({});

/** One validated `events.webhooks[]` entry. */
export type GatewayWebhookConfig = z.infer<typeof gatewayWebhookSchema>;

/** The validated `events` section. */
export type EventsConfig = z.infer<typeof eventsConfigSchema>;

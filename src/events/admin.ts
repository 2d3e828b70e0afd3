import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { ERRORS, type ErrorCode } from '../errors.js';
import { maskUrlCredentials } from '../redact.js';
import { generateWebhookSecret } from '../signing.js';
import { ID_PATTERN, type AuditEntry, type KeyStore } from '../store/types.js';
import { isoSeconds } from '../time.js';
import {
  companyWebhookCreateSchema,
  deliveryQuerySchema,
  type createdWebhookSchema,
  type webhookViewSchema,
} from './schemas.js';
import { STORE_LIMITS, type EventStore } from './store.js';
import type { CompanyWebhook, DeliveryRecord, DeliveryView, Endpoint, EventEnvelope } from './types.js';

/** A webhook endpoint as the admin API shows it (`webhookViewSchema`). */
export type WebhookView = z.infer<typeof webhookViewSchema>;
/** The create answer, with the secret (`createdWebhookSchema`). */
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;

/** An answer of the webhook admin: the value, or a registry failure (the admin service's shape). */
export type WebhookResult<T> =
  { ok: true; value: T } | { ok: false; code: ErrorCode; status: number; error: string; details: string };

/** What the webhook routes need. */
export interface WebhookAdminOptions {
  store: EventStore;
  companies: Pick<KeyStore, 'getCompany'>;
  gatewayEndpoints: readonly Endpoint[];
  /** The admin service's audit (store stream and log line). */
  audit?: (e: Omit<AuditEntry, 'at'>) => Promise<void>;
  now?: () => number;
}

/** Deliveries looked at per status for one list (the stores keep at most 1000 dead or delivered). */
const SCAN = 1000;

/**
 * The admin API's webhook operations: the gateway's endpoints (read-only, from the config), a
 * company's endpoints (create with a new secret shown once, list, delete; at most 10 per company,
 * checked and added in one store step), the deliveries and the retry of a dead letter. Bad input is
 * a 400 naming the field, never echoing a value; unknown ids are 404. Secrets never leave but in
 * the create answer; URLs are shown with their credentials masked.
 */
export class WebhookAdmin {
  private readonly now: () => number;
  constructor(private readonly opts: WebhookAdminOptions) {
    this.now = opts.now ?? Date.now;
  }

  listGatewayWebhooks(): WebhookResult<WebhookView[]> {
    const value = this.opts.gatewayEndpoints.map((e) => ({
      id: e.ref.id,
      scope: 'gateway' as const,
      companyId: null,
      url: maskUrlCredentials(e.url),
      events: [...e.events],
      createdAt: null,
    }));
    return { ok: true, value };
  }

  async createCompanyWebhook(
    companyId: string,
    input: unknown,
    actor = 'admin',
  ): Promise<WebhookResult<CreatedWebhook>> {
    const parsed = companyWebhookCreateSchema.safeParse(input);
    if (!parsed.success) return fail('ADMIN_INVALID_REQUEST', issues(parsed.error));
    const missing = await this.unknownCompany(companyId);
    if (missing) return missing;
    const w: CompanyWebhook = {
      id: `wh_${randomBytes(12).toString('base64url')}`,
      companyId,
      url: parsed.data.url,
      secret: generateWebhookSecret(),
      events: parsed.data.events ?? ['*'],
      createdAt: isoSeconds(this.now()),
    };
    if (!(await this.opts.store.addWebhook(w, STORE_LIMITS.maxWebhooksPerCompany)))
      return fail(
        'ADMIN_INVALID_REQUEST',
        `company ${companyId} has ${STORE_LIMITS.maxWebhooksPerCompany} webhooks, the most it may have; delete one first`,
      );
    await this.opts.audit?.({
      event: 'webhook.created',
      companyId,
      actor,
      details: { webhookId: w.id, events: w.events },
    });
    return { ok: true, value: { ...view(w), secret: w.secret } };
  }

  async listCompanyWebhooks(companyId: string): Promise<WebhookResult<WebhookView[]>> {
    const missing = await this.unknownCompany(companyId);
    if (missing) return missing;
    return { ok: true, value: (await this.opts.store.listWebhooks(companyId)).map(view) };
  }

  async deleteCompanyWebhook(
    companyId: string,
    id: string,
    actor = 'admin',
  ): Promise<WebhookResult<WebhookView>> {
    const missing = await this.unknownCompany(companyId);
    if (missing) return missing;
    const gone = /^wh_[A-Za-z0-9_-]{1,32}$/.test(id)
      ? await this.opts.store.deleteWebhook(companyId, id)
      : null;
    if (!gone) return fail('ADMIN_UNKNOWN_ID', `company ${companyId} has no webhook with this id`);
    await this.opts.audit?.({ event: 'webhook.deleted', companyId, actor, details: { webhookId: id } });
    return { ok: true, value: view(gone) };
  }

  /** Deliveries, newest first: `status` (default all three), `companyId`, `limit` 1-500 (default 100). */
  async listDeliveries(query: Record<string, unknown>): Promise<WebhookResult<DeliveryView[]>> {
    const q = deliveryQuerySchema.safeParse(query);
    if (!q.success) return fail('ADMIN_INVALID_REQUEST', issues(q.error));
    const limit = q.data.limit ?? 100;
    if (limit < 1)
      return fail('ADMIN_INVALID_REQUEST', 'limit: must be a whole number ≥ 1 (at most 500 are returned)');
    const statuses = q.data.status ? [q.data.status] : (['pending', 'dead', 'delivered'] as const);
    const scan = q.data.companyId ? SCAN : Math.min(limit, 500);
    const lists = await Promise.all(statuses.map((s) => this.opts.store.listDeliveries(s, scan)));
    const all = lists
      .flat()
      .filter((d) => !q.data.companyId || d.companyId === q.data.companyId)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    return { ok: true, value: all.slice(0, Math.min(limit, 500)).map(deliveryView) };
  }

  /** A dead letter back to the queue (due now, attempts from 0); 404 when `id` is no dead letter. */
  async retryDelivery(id: string, actor = 'admin'): Promise<WebhookResult<DeliveryView>> {
    const r = /^dlv_[A-Za-z0-9_-]{1,32}$/.test(id)
      ? await this.opts.store.requeueDead(id, isoSeconds(this.now()))
      : null;
    if (!r) return fail('ADMIN_UNKNOWN_ID', 'no dead letter with this id (it may have been retried already)');
    await this.opts.audit?.({
      event: 'webhook.retried',
      ...(r.companyId ? { companyId: r.companyId } : {}),
      actor,
      details: { deliveryId: id, eventId: r.eventId, type: r.type },
    });
    return { ok: true, value: deliveryView(r) };
  }

  private async unknownCompany(companyId: string): Promise<WebhookResult<never> | null> {
    if (ID_PATTERN.test(companyId) && (await this.opts.companies.getCompany(companyId))) return null;
    return fail(
      'ADMIN_UNKNOWN_ID',
      ID_PATTERN.test(companyId) ? `company ${companyId} not found` : 'company not found',
    );
  }
}

function view(w: CompanyWebhook): WebhookView {
  return {
    id: w.id,
    scope: 'company',
    companyId: w.companyId,
    url: maskUrlCredentials(w.url),
    events: w.events,
    createdAt: w.createdAt,
  };
}

/** A stored delivery as the admin API shows it: the body parsed, nothing else added. */
export function deliveryView(r: DeliveryRecord): DeliveryView {
  const { body, ...rest } = r;
  return { ...rest, event: JSON.parse(body) as EventEnvelope };
}

/** Validation issues by field, never the value sent (a key pasted by mistake must not come back). */
function issues(e: z.ZodError): string {
  return e.issues
    .map((i) => {
      if (i.code === 'unrecognized_keys') return 'unknown field(s) in the body';
      const message = i.code === 'invalid_enum_value' ? `must be one of ${i.options.join(', ')}` : i.message;
      return i.path.length ? `${i.path.join('.')}: ${message}` : message;
    })
    .join('; ');
}

function fail(code: ErrorCode, details: string): WebhookResult<never> {
  const e = ERRORS[code];
  return { ok: false, code, status: e.status, error: e.error, details };
}

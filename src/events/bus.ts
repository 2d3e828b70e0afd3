import { randomBytes } from 'node:crypto';
import { matchesEventFilter, type EventType } from '../config/events.js';
import { safeMessage } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { isoSeconds, parseInstant } from '../time.js';
import type { EventMetrics } from './metrics.js';
import { eventDataSchemas } from './schemas.js';
import type { EnqueueResult, EventStore, OnceKey } from './store.js';
import type { DeliveryRecord, Endpoint, EventData, EventEnvelope, EventSink } from './types.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** How long before a rotated key's scheduled revocation `key.grace_ending` is sent. */
export const GRACE_ENDING_LEAD_MS = DAY_MS;

/** Events kept in memory while the event store cannot be reached, retried with each poll. */
const MAX_OUTBOX = 1000;

/** What became of one emit (the `result` label of `gateway_events_total`). */
export type EmitResult = EnqueueResult | 'no_endpoint' | 'invalid' | 'not_yet' | 'outbox' | 'dropped';

/**
 * The deduplication of each event type that several instances (or a repeated scan) may each
 * observe: one key per fact, held long enough that the fact is not reported twice. Admin actions
 * (one writer) and registrations need none. `quota.threshold` is keyed by the quota watcher, which
 * knows the window's end.
 */
function onceKeyOf(type: EventType, data: Record<string, unknown>, now: number): OnceKey | undefined {
  const until = (at: unknown, extra: number) => ({ ttlMs: (parseInstant(String(at)) ?? now) + extra - now });
  switch (type) {
    case 'key.exposed':
      // One per key and day: every exposure is in the audit trail, the alert needs the first.
      return { key: `key.exposed:${String(data.keyId)}`, ttlMs: DAY_MS };
    case 'key.expiring':
      return {
        key: `key.expiring:${String(data.keyId)}:${String(data.expiresAt)}`,
        ...until(data.expiresAt, DAY_MS),
      };
    case 'key.rotation_due':
      return { key: `key.rotation_due:${String(data.keyId)}`, ttlMs: 365 * DAY_MS };
    case 'key.grace_ending':
      return {
        key: `key.grace_ending:${String(data.keyId)}:${String(data.revokesAt)}`,
        ...until(data.revokesAt, DAY_MS),
      };
    case 'key.revoked':
      // The admin API and the scan (a grace period that ended) may both report one revocation.
      return { key: `key.revoked:${String(data.keyId)}`, ttlMs: 7 * DAY_MS };
    default:
      return undefined;
  }
}

/** What the bus needs: the store, the gateway's endpoints, a metric set and a logger. */
export interface EventBusOptions {
  store: EventStore;
  /** `events.webhooks`, resolved. */
  gatewayEndpoints: readonly Endpoint[];
  metrics: EventMetrics;
  logger: Logger;
  /** Called after deliveries were queued (the dispatcher sends them at once). */
  onQueued?: () => void;
  now?: () => number;
}

interface Pending {
  envelope: EventEnvelope;
  companyId: string | null;
  once: OnceKey | undefined;
}

/**
 * The `EventSink` of the gateway: checks each event against its schema, drops what was already
 * reported (`onceKeyOf`, atomically with the enqueue), and queues one delivery per endpoint that
 * asked for it (the gateway's, and the event's company's own). While the store cannot be reached,
 * events wait in a bounded outbox (1000; the oldest dropped) and are retried with each poll.
 */
export class EventBus implements EventSink {
  private readonly now: () => number;
  private readonly outbox: Pending[] = [];

  constructor(private readonly opts: EventBusOptions) {
    this.now = opts.now ?? Date.now;
  }

  emit<T extends EventType>(type: T, data: EventData<T>): void {
    void this.publish(type, data);
  }

  /** `emit`, with the outcome (tests, the quota watcher); `once` replaces the type's own key. */
  async publish<T extends EventType>(type: T, data: EventData<T>, once?: OnceKey): Promise<EmitResult> {
    const result = await this.queue(type, data, once).catch((err: unknown) => {
      this.opts.logger.error({ event: type, error: safeMessage(err) }, 'event not queued');
      return 'dropped' as const;
    });
    this.opts.metrics.events.inc({ type, result });
    return result;
  }

  /** Retries the events that waited for the store; stops at the first that fails again. */
  async flushOutbox(): Promise<void> {
    while (this.outbox.length > 0) {
      const p = this.outbox[0]!;
      const r = await this.enqueue(p);
      this.outbox.shift();
      this.opts.metrics.events.inc({ type: p.envelope.type, result: r });
    }
  }

  private async queue<T extends EventType>(type: T, data: EventData<T>, once?: OnceKey): Promise<EmitResult> {
    const parsed = eventDataSchemas[type].safeParse(data);
    if (!parsed.success) {
      // A bug in the emitting code, never user input: say which fields, never their values.
      const fields = parsed.error.issues.map((i) => i.path.join('.') || '(data)').join(', ');
      this.opts.logger.error({ event: type, fields }, 'event refused: data does not match its schema');
      return 'invalid';
    }
    const now = this.now();
    const d = parsed.data as Record<string, unknown>;
    if (type === 'key.grace_ending' && (parseInstant(String(d.revokesAt)) ?? 0) - now > GRACE_ENDING_LEAD_MS)
      return 'not_yet'; // the key scan sends it when the revocation is a day away
    const envelope: EventEnvelope = {
      id: `evt_${randomBytes(12).toString('base64url')}`,
      type,
      timestamp: isoSeconds(now),
      data: d,
    };
    const p: Pending = {
      envelope,
      companyId: typeof d.companyId === 'string' ? d.companyId : null,
      once: once ?? onceKeyOf(type, d, now),
    };
    try {
      return await this.enqueue(p);
    } catch (err) {
      if (this.outbox.length >= MAX_OUTBOX) {
        const dropped = this.outbox.shift()!;
        this.opts.metrics.events.inc({ type: dropped.envelope.type, result: 'dropped' });
      }
      this.outbox.push(p);
      this.opts.logger.warn(
        { event: type, error: safeMessage(err), waiting: this.outbox.length },
        'event store unreachable; the event waits in memory',
      );
      return 'outbox';
    }
  }

  /** Resolves the endpoints and queues one delivery per endpoint (throws when the store fails). */
  private async enqueue(p: Pending): Promise<EmitResult> {
    const { type } = p.envelope;
    const endpoints = this.opts.gatewayEndpoints.filter((e) => matchesEventFilter(e.events, type));
    if (p.companyId !== null)
      for (const w of await this.opts.store.listWebhooks(p.companyId))
        if (matchesEventFilter(w.events, type))
          endpoints.push({
            ref: { scope: 'company', id: w.id },
            url: w.url,
            secret: w.secret,
            events: w.events,
          });
    if (endpoints.length === 0) return 'no_endpoint';
    const at = isoSeconds(this.now());
    const body = JSON.stringify(p.envelope);
    const records: DeliveryRecord[] = endpoints.map((e) => ({
      id: `dlv_${randomBytes(12).toString('base64url')}`,
      eventId: p.envelope.id,
      type,
      companyId: p.companyId,
      endpoint: e.ref,
      status: 'pending',
      attempts: 0,
      createdAt: at,
      lastAttemptAt: null,
      nextAttemptAt: at,
      lastStatus: null,
      lastError: null,
      body,
    }));
    const r = await this.opts.store.enqueue(records, p.once);
    if (r === 'queued') this.opts.onQueued?.();
    if (r === 'full') this.opts.logger.error({ event: type }, 'webhook queue full: event dropped');
    return r;
  }
}

import type { EventsConfig } from '../config/events.js';
import { safeMessage } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { isoSeconds } from '../time.js';
import type { EventMetrics } from './metrics.js';
import { sendWebhook, type Attempt, type AttemptResult } from './send.js';
import type { ClaimedDelivery, EventStore, Settlement } from './store.js';
import type { DeliveryRecord, Endpoint, EndpointRef } from './types.js';

/** What the dispatcher needs. */
export interface DispatcherOptions {
  store: EventStore;
  delivery: EventsConfig['delivery'];
  /** The endpoint a delivery goes to now (null when it was removed: the delivery goes dead). */
  resolve: (ref: EndpointRef, companyId: string | null) => Promise<Endpoint | null>;
  metrics: EventMetrics;
  logger: Logger;
  /** Runs before each poll (the bus's outbox). */
  beforePoll?: () => Promise<void>;
  /** The HTTP attempt (tests may wrap it to count). */
  send?: (a: Attempt & { signal: AbortSignal }) => Promise<AttemptResult>;
  /** [0, 1) for the jitter (tests). */
  random?: () => number;
}

/**
 * The delay before attempt `attempts + 1`, after `attempts` failed ones (≥ 1): `backoffMs` doubled
 * per failure, capped at `maxBackoffMs`, with "equal jitter" (a random point in its upper half), so
 * that deliveries failing together do not retry together. A receiver's `Retry-After` is honoured
 * up to `maxBackoffMs`.
 */
export function backoffDelay(
  attempts: number,
  d: Pick<EventsConfig['delivery'], 'backoffMs' | 'maxBackoffMs'>,
  random: number,
  retryAfterMs: number | null = null,
): number {
  const full = Math.min(d.maxBackoffMs, d.backoffMs * 2 ** Math.min(attempts - 1, 40));
  const jittered = full / 2 + (full / 2) * random;
  return Math.round(Math.max(jittered, Math.min(retryAfterMs ?? 0, d.maxBackoffMs)));
}

/**
 * Sends the queued deliveries: every `pollIntervalMs` (and at once after a local enqueue) it claims
 * up to `concurrency` due deliveries from the store, each with a lease (visibility timeout) of
 * twice the attempt timeout plus 1 s; posts them; and settles each: delivered, retried later
 * (`backoffDelay`), or dead after `maxAttempts` (or a 410). A process that stops or dies while a
 * delivery is in flight loses its claim when the lease ends, and any process sends it again: at
 * least once, never lost. `close()` aborts what is in flight and gives the claims back at once.
 */
export class Dispatcher {
  private readonly inflight = new Map<string, AbortController>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private lastError = 0;
  private readonly leaseMs: number;
  private readonly send: NonNullable<DispatcherOptions['send']>;
  private readonly random: () => number;

  constructor(private readonly opts: DispatcherOptions) {
    this.leaseMs = opts.delivery.timeoutMs * 2 + 1000;
    this.send = opts.send ?? sendWebhook;
    this.random = opts.random ?? Math.random;
  }

  /** Starts polling. */
  start(): void {
    this.schedule(0);
  }

  /** Polls as soon as possible (deliveries were just queued). */
  kick(): void {
    if (this.closed) return;
    if (this.polling) this.again = true;
    else this.schedule(0);
  }

  /** Stops polling, aborts the attempts in flight and releases their claims. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const c of this.inflight.values()) c.abort();
    await this.polling?.catch(() => undefined);
    // The attempts settle themselves (as a release) once their abort lands.
    const deadline = Date.now() + 2000;
    while (this.inflight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.polling = this.poll().finally(() => {
        this.polling = null;
        const more = this.again;
        this.again = false;
        this.schedule(more ? 0 : this.opts.delivery.pollIntervalMs);
      });
    }, ms);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      await this.opts.beforePoll?.();
      const room = this.opts.delivery.concurrency - this.inflight.size;
      if (room <= 0 || this.closed) return;
      const { claimed, depth } = await this.opts.store.claimDue(room, this.leaseMs);
      this.opts.metrics.queueDepth.labels('pending').set(depth.pending);
      this.opts.metrics.queueDepth.labels('dead').set(depth.dead);
      for (const c of claimed) void this.attempt(c);
      if (claimed.length === room) this.again = true;
    } catch (err) {
      // Rate-limited: a Redis outage must not write a line per poll.
      if (Date.now() - this.lastError > 10_000) {
        this.lastError = Date.now();
        this.opts.logger.warn({ error: safeMessage(err) }, 'webhook queue unreachable; retrying');
      }
    }
  }

  private async attempt(c: ClaimedDelivery): Promise<void> {
    const abort = new AbortController();
    this.inflight.set(c.record.id, abort);
    try {
      const settlement = await this.run(c, abort.signal);
      await this.opts.store.settle(c, this.closed ? { kind: 'release' } : settlement);
    } catch (err) {
      // The lease ends by itself; the delivery is tried again then.
      this.opts.logger.warn(
        { delivery: c.record.id, error: safeMessage(err) },
        'webhook delivery not settled',
      );
    } finally {
      this.inflight.delete(c.record.id);
      if (!this.closed) this.kick();
    }
  }

  private async run(c: ClaimedDelivery, signal: AbortSignal): Promise<Settlement> {
    const r = c.record;
    const endpoint = await this.opts.resolve(r.endpoint, r.companyId);
    const now = Date.now();
    const base = { ...r, attempts: r.attempts + 1, lastAttemptAt: isoSeconds(now) };
    if (!endpoint) return this.dead({ ...base, lastStatus: null, lastError: 'endpoint removed' });
    const result = await this.send({
      url: endpoint.url,
      secret: endpoint.secret,
      id: r.eventId,
      body: r.body,
      timeoutMs: this.opts.delivery.timeoutMs,
      timestamp: Math.floor(now / 1000),
      signal,
    });
    if (this.closed) return { kind: 'release' };
    if (result.ok) {
      this.opts.metrics.deliveries.labels('delivered').inc();
      const done: DeliveryRecord = {
        ...base,
        status: 'delivered',
        nextAttemptAt: null,
        lastStatus: result.status,
        lastError: null,
      };
      return { kind: 'delivered', record: done };
    }
    const failed = { ...base, lastStatus: result.status, lastError: result.error };
    if (result.permanent || failed.attempts >= this.opts.delivery.maxAttempts)
      return this.dead(failed, endpoint);
    const delayMs = backoffDelay(failed.attempts, this.opts.delivery, this.random(), result.retryAfterMs);
    this.opts.metrics.deliveries.labels('retry').inc();
    this.opts.logger.info(
      {
        delivery: r.id,
        event: r.type,
        endpoint: r.endpoint.id,
        attempt: failed.attempts,
        error: result.error,
        retryInMs: delayMs,
      },
      'webhook delivery failed; retrying',
    );
    return { kind: 'retry', delayMs, record: { ...failed, nextAttemptAt: isoSeconds(now + delayMs) } };
  }

  private dead(record: DeliveryRecord, endpoint?: Endpoint): Settlement {
    this.opts.metrics.deliveries.labels('dead').inc();
    this.opts.logger.warn(
      {
        delivery: record.id,
        event: record.type,
        endpoint: record.endpoint.id,
        host: endpoint ? new URL(endpoint.url).host : undefined,
        attempts: record.attempts,
        error: record.lastError,
      },
      'webhook delivery failed for the last time: dead letter (retry it with POST /admin/v1/webhooks/deliveries/:id/retry)',
    );
    return { kind: 'dead', record: { ...record, status: 'dead', nextAttemptAt: null } };
  }
}

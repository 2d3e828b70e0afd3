import { randomBytes } from 'node:crypto';
import type { CompanyWebhook, DeliveryRecord } from './types.js';

/**
 * A deduplication key: claimed once for the deployment until it expires, after `ttlMs` or at
 * `untilMs` (the store's clock: Redis `TIME` for Redis, `Date.now()` for memory).
 */
export type OnceKey = { key: string; ttlMs: number } | { key: string; untilMs: number };

/** A delivery taken from the queue by one process, until it settles it or its lease ends. */
export interface ClaimedDelivery {
  record: DeliveryRecord;
  /** Proves the claim: a settle with a token that is no longer current changes nothing. */
  token: string;
}

/** What became of a claimed delivery. */
export type Settlement =
  | { kind: 'delivered'; record: DeliveryRecord }
  | { kind: 'retry'; record: DeliveryRecord; delayMs: number }
  | { kind: 'dead'; record: DeliveryRecord }
  /** Not attempted (the process stops): due again at once, for any process. */
  | { kind: 'release' };

/** How much the queue holds (the `gateway_webhook_queue_depth` gauge). */
export interface QueueDepth {
  pending: number;
  dead: number;
}

/** What `enqueue` did: queued, or nothing because the once-key was taken or the queue is full. */
export type EnqueueResult = 'queued' | 'duplicate' | 'full';

/** The bounds every event store keeps, so memory (and Redis) stay bounded by constants. */
export const STORE_LIMITS = {
  /** Deliveries waiting or in flight; beyond it new events are dropped (counted and logged). */
  maxPending: 100_000,
  /** Dead letters kept, newest first; the oldest go beyond it. */
  maxDead: 1000,
  /** Finished deliveries kept for the admin API, newest first. */
  maxDelivered: 1000,
  /** Webhook endpoints per company. */
  maxWebhooksPerCompany: 10,
} as const;

/**
 * The events' storage port: the delivery queue (pending, delivered, dead), the once-keys of the
 * deployment-wide deduplication, and the companies' webhook endpoints. Two implementations:
 * `RedisEventStore` (shared by every instance, survives restarts) and `MemoryEventStore` (this
 * process only). Every method that checks and changes state does both in one atomic step.
 */
export interface EventStore {
  readonly kind: 'memory' | 'redis';
  /** Adds deliveries, due now; with `once`, only if its key was free (claimed in the same step). */
  enqueue(records: readonly DeliveryRecord[], once?: OnceKey): Promise<EnqueueResult>;
  /** Claims `key` for `ttlMs` when free: true for the one caller that got it. */
  claimOnce(key: string, ttlMs: number): Promise<boolean>;
  /** Takes up to `max` due deliveries for `leaseMs` (due again after it unless settled). */
  claimDue(max: number, leaseMs: number): Promise<{ claimed: ClaimedDelivery[]; depth: QueueDepth }>;
  /** Settles a claim; false (and nothing changed) when the claim is no longer current. */
  settle(claim: ClaimedDelivery, s: Settlement): Promise<boolean>;
  /** Deliveries with `status`, newest first (pending: soonest due first), at most `limit`. */
  listDeliveries(status: DeliveryRecord['status'], limit: number): Promise<DeliveryRecord[]>;
  /** Moves a dead letter back to the queue, due now, attempts from 0; null when `id` is no dead letter. */
  requeueDead(id: string, now: string): Promise<DeliveryRecord | null>;
  /** Adds a company's endpoint unless it has `max` already (false then). */
  addWebhook(w: CompanyWebhook, max: number): Promise<boolean>;
  listWebhooks(companyId: string): Promise<CompanyWebhook[]>;
  /** Whether any company has an endpoint (the key scan reads nothing while nobody listens). */
  hasWebhooks(): Promise<boolean>;
  /** Removes an endpoint; null when the company has none with `id`. */
  deleteWebhook(companyId: string, id: string): Promise<CompanyWebhook | null>;
  close(): Promise<void>;
}

interface MemoryEntry {
  record: DeliveryRecord;
  dueAt: number;
  token: string | null;
}

/**
 * The event store in this process's memory: for the memory and file stores without a Redis. Each
 * process has its own queue, once-keys and company endpoints, and loses them when it stops (see
 * docs/events.md). Bounded by `STORE_LIMITS`; once-keys are swept when they expire.
 */
export class MemoryEventStore implements EventStore {
  readonly kind = 'memory' as const;
  private readonly pending = new Map<string, MemoryEntry>();
  private readonly dead = new Map<string, DeliveryRecord>();
  private readonly delivered = new Map<string, DeliveryRecord>();
  private readonly once = new Map<string, number>();
  private readonly webhooks = new Map<string, CompanyWebhook[]>();

  constructor(private readonly now: () => number = Date.now) {}

  enqueue(records: readonly DeliveryRecord[], once?: OnceKey): Promise<EnqueueResult> {
    if (once && !this.take(once.key, 'ttlMs' in once ? this.now() + once.ttlMs : once.untilMs))
      return Promise.resolve('duplicate');
    if (this.pending.size + records.length > STORE_LIMITS.maxPending) {
      if (once) this.once.delete(once.key);
      return Promise.resolve('full');
    }
    const now = this.now();
    for (const r of records) this.pending.set(r.id, { record: r, dueAt: now, token: null });
    return Promise.resolve('queued');
  }

  claimOnce(key: string, ttlMs: number): Promise<boolean> {
    return Promise.resolve(this.take(key, this.now() + ttlMs));
  }

  claimDue(max: number, leaseMs: number): Promise<{ claimed: ClaimedDelivery[]; depth: QueueDepth }> {
    const now = this.now();
    const due = [...this.pending.values()].filter((e) => e.dueAt <= now).sort((a, b) => a.dueAt - b.dueAt);
    const claimed = due.slice(0, max).map((e) => {
      e.token = randomBytes(8).toString('hex');
      e.dueAt = now + leaseMs;
      return { record: e.record, token: e.token };
    });
    return Promise.resolve({ claimed, depth: { pending: this.pending.size, dead: this.dead.size } });
  }

  settle(claim: ClaimedDelivery, s: Settlement): Promise<boolean> {
    const e = this.pending.get(claim.record.id);
    if (!e || e.token !== claim.token) return Promise.resolve(false);
    e.token = null;
    if (s.kind === 'release') e.dueAt = this.now();
    else if (s.kind === 'retry') Object.assign(e, { record: s.record, dueAt: this.now() + s.delayMs });
    else {
      this.pending.delete(s.record.id);
      capped(
        s.kind === 'dead' ? this.dead : this.delivered,
        s.record,
        s.kind === 'dead' ? STORE_LIMITS.maxDead : STORE_LIMITS.maxDelivered,
      );
    }
    return Promise.resolve(true);
  }

  listDeliveries(status: DeliveryRecord['status'], limit: number): Promise<DeliveryRecord[]> {
    const list =
      status === 'pending'
        ? [...this.pending.values()].sort((a, b) => a.dueAt - b.dueAt).map((e) => e.record)
        : [...(status === 'dead' ? this.dead : this.delivered).values()].reverse();
    return Promise.resolve(list.slice(0, limit));
  }

  requeueDead(id: string, now: string): Promise<DeliveryRecord | null> {
    const r = this.dead.get(id);
    if (!r) return Promise.resolve(null);
    this.dead.delete(id);
    const record: DeliveryRecord = { ...r, status: 'pending', attempts: 0, nextAttemptAt: now };
    this.pending.set(id, { record, dueAt: this.now(), token: null });
    return Promise.resolve(record);
  }

  addWebhook(w: CompanyWebhook, max: number): Promise<boolean> {
    const list = this.webhooks.get(w.companyId) ?? [];
    if (list.length >= max) return Promise.resolve(false);
    this.webhooks.set(w.companyId, [...list, w]);
    return Promise.resolve(true);
  }

  listWebhooks(companyId: string): Promise<CompanyWebhook[]> {
    return Promise.resolve([...(this.webhooks.get(companyId) ?? [])]);
  }

  deleteWebhook(companyId: string, id: string): Promise<CompanyWebhook | null> {
    const list = this.webhooks.get(companyId) ?? [];
    const hit = list.find((w) => w.id === id) ?? null;
    const rest = list.filter((w) => w !== hit);
    if (rest.length > 0) this.webhooks.set(companyId, rest);
    else this.webhooks.delete(companyId);
    return Promise.resolve(hit);
  }

  hasWebhooks(): Promise<boolean> {
    return Promise.resolve(this.webhooks.size > 0);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Claims a once-key until `until` when it is free or expired; sweeps expired ones when many. */
  private take(key: string, until: number): boolean {
    const now = this.now();
    const held = this.once.get(key);
    if (held !== undefined && held > now) return false;
    if (this.once.size >= 100_000) for (const [k, t] of this.once) if (t <= now) this.once.delete(k);
    this.once.set(key, until);
    return true;
  }
}

/** Adds `r` as the newest entry of `map`, dropping the oldest beyond `max`. */
function capped(map: Map<string, DeliveryRecord>, r: DeliveryRecord, max: number): void {
  map.delete(r.id);
  map.set(r.id, r);
  while (map.size > max) map.delete(map.keys().next().value!);
}

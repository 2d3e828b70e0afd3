import { createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { EventsConfig, GatewayWebhookConfig } from '../config/events.js';
import type { Logger } from '../observability/logger.js';
import type { RedisClient } from '../redis/connection.js';
import type { AuditEntry, KeyStore } from '../store/types.js';
import { WebhookAdmin } from './admin.js';
import { EventBus } from './bus.js';
import { Dispatcher, type DispatcherOptions } from './dispatcher.js';
import { createEventMetrics } from './metrics.js';
import { createQuotaWatcher, type WindowCount } from './quota.js';
import { RedisEventStore } from './redis-store.js';
import { KeyScanner } from './scanner.js';
import { MemoryEventStore, type EventStore } from './store.js';
import type { Endpoint, EndpointRef } from './types.js';

/** What `createEvents` needs from the gateway. */
export interface EventsOptions {
  config: EventsConfig;
  /** The deployment's Redis (the store's, else `rateLimit.redisUrl`); absent: this process's memory. */
  redis?: RedisClient;
  keyPrefix: string;
  /** The key store, for the key scan and the company checks of the webhook routes. */
  keys: KeyStore;
  rotationAgeDays: number;
  registry: Registry;
  logger: Logger;
  /** The admin service's audit, for the webhook routes' changes. */
  audit?: (e: Omit<AuditEntry, 'at'>) => Promise<void>;
  /** Replaces the HTTP attempt (tests that count or fail attempts). */
  send?: DispatcherOptions['send'];
}

/** The gateway's events, wired: what server.ts hands to the admin service, the limiter and the admin API. */
export interface GatewayEvents {
  /** Where events are emitted (`EventSink`), with `publish` for an awaited outcome. */
  bus: EventBus;
  /** The admin API's webhook routes. */
  admin: WebhookAdmin;
  /** The limiter's `onWindowUse` (`quota.threshold`). */
  onWindowUse: (c: WindowCount) => void;
  store: EventStore;
  dispatcher: Dispatcher;
  scanner: KeyScanner;
  /** Starts delivering and scanning. */
  start(): void;
  /** Stops both; deliveries in flight go back to the queue for any process. */
  close(): Promise<void>;
}

/** The gateway's endpoint of a config entry: its id is `id`, else `gw-` and 8 hex of the URL's SHA-256. */
export function gatewayEndpoint(w: GatewayWebhookConfig): Endpoint {
  const id = w.id ?? `gw-${createHash('sha256').update(w.url).digest('hex').slice(0, 8)}`;
  return { ref: { scope: 'gateway', id }, url: w.url, secret: w.secret, events: w.events };
}

/**
 * Builds the events of one gateway process: the store (Redis when there is one: one queue and
 * one deduplication for the whole deployment, kept across restarts; else memory, this process
 * only), the bus, the dispatcher, the key scan, the quota watcher and the webhook admin. Nothing
 * runs until `start()`.
 */
export function createEvents(opts: EventsOptions): GatewayEvents {
  const { config, logger, keys } = opts;
  const store: EventStore = opts.redis
    ? new RedisEventStore(opts.redis, opts.keyPrefix)
    : new MemoryEventStore();
  const metrics = createEventMetrics(opts.registry);
  const gatewayEndpoints = config.webhooks.map(gatewayEndpoint);
  let dispatcher: Dispatcher | null = null;
  const bus = new EventBus({ store, gatewayEndpoints, metrics, logger, onQueued: () => dispatcher?.kick() });
  const byId = new Map(gatewayEndpoints.map((e) => [e.ref.id, e]));
  const resolve = async (ref: EndpointRef, companyId: string | null): Promise<Endpoint | null> => {
    if (ref.scope === 'gateway') return byId.get(ref.id) ?? null;
    const w = companyId ? (await store.listWebhooks(companyId)).find((x) => x.id === ref.id) : undefined;
    return w ? { ref, url: w.url, secret: w.secret, events: w.events } : null;
  };
  dispatcher = new Dispatcher({
    store,
    delivery: config.delivery,
    resolve,
    metrics,
    logger,
    beforePoll: () => bus.flushOutbox(),
    ...(opts.send && { send: opts.send }),
  });
  const scanner = new KeyScanner({
    keys,
    events: bus,
    eventStore: store,
    intervalMs: config.scanIntervalMs,
    rotationAgeDays: opts.rotationAgeDays,
    logger,
    listening: async () => gatewayEndpoints.length > 0 || (await store.hasWebhooks()),
  });
  const admin = new WebhookAdmin({
    store,
    companies: keys,
    gatewayEndpoints,
    ...(opts.audit && { audit: opts.audit }),
  });
  const d = dispatcher;
  return {
    bus,
    admin,
    onWindowUse: createQuotaWatcher(bus),
    store,
    dispatcher: d,
    scanner,
    start() {
      d.start();
      scanner.start();
    },
    async close() {
      await scanner.close();
      await d.close();
      await store.close();
    },
  };
}

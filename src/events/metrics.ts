import { Counter, Gauge, type Registry } from 'prom-client';
import { EVENT_TYPES } from '../config/events.js';

/** The events' metrics: bounded labels only (event types, outcomes), never a company, URL or id. */
export interface EventMetrics {
  /** `gateway_events_total{type,result}`: what became of each emitted event. */
  events: Counter<'type' | 'result'>;
  /** `gateway_webhook_deliveries_total{outcome}`: attempts by outcome (delivered, retry, dead). */
  deliveries: Counter<'outcome'>;
  /** `gateway_webhook_queue_depth{state}`: deliveries pending (in flight included) and dead letters. */
  queueDepth: Gauge<'state'>;
}

/**
 * Registers the events' metrics on `registry`. The delivery outcomes and the queue depth exist from
 * the start at 0, so an alert on `increase(...{outcome="dead"}[1h]) > 0` sees the first dead letter.
 * The depth is the deployment's queue (read from the store at each poll), the same on every instance.
 */
export function createEventMetrics(registry: Registry): EventMetrics {
  const registers = [registry];
  const events = new Counter({
    name: 'gateway_events_total',
    help: 'Events emitted, by type and result (queued, duplicate: reported by another instance already, no_endpoint, not_yet, invalid, outbox: waiting for the store, dropped, full)',
    labelNames: ['type', 'result'],
    registers,
  });
  for (const t of EVENT_TYPES) events.labels(t, 'queued').inc(0);
  const deliveries = new Counter({
    name: 'gateway_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered (2xx), retry (failed, tried again later), dead (failed for the last time: a dead letter)',
    labelNames: ['outcome'],
    registers,
  });
  for (const o of ['delivered', 'retry', 'dead']) deliveries.labels(o).inc(0);
  const queueDepth = new Gauge({
    name: 'gateway_webhook_queue_depth',
    help: 'Webhook deliveries in the queue: pending (waiting or in flight) and dead (dead letters kept)',
    labelNames: ['state'],
    registers,
  });
  queueDepth.labels('pending').set(0);
  queueDepth.labels('dead').set(0);
  return { events, deliveries, queueDepth };
}

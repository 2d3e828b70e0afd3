import type { z } from 'zod';
import type { EventType } from '../config/events.js';
import type { deliveryViewSchema, eventDataSchemas, eventEnvelopeSchema } from './schemas.js';

export type { EventType } from '../config/events.js';

/** The `data` of an event of type `T` (src/events/schemas.ts, docs/events.md). */
export type EventData<T extends EventType> = z.infer<(typeof eventDataSchemas)[T]>;

/** A delivery's JSON body: `{id, type, timestamp, data}`. */
export type EventEnvelope = z.infer<typeof eventEnvelopeSchema>;

/**
 * Where the gateway's parts report events: the admin service (revocations, suspensions, exposed
 * keys, rotations), the exposure handler, the limiter's thresholds, the key scan, and the company
 * dashboard (`registration.pending`). `emit` never throws and never waits: the event is checked,
 * deduplicated across the deployment where needed, and queued in the background; failures are
 * logged and counted (`gateway_events_total`).
 *
 * @example
 * events.emit('registration.pending', {
 *   companyId: 'acme', name: 'Acme Ltd', email: 'ops@acme.test', registeredAt: isoSeconds(Date.now()),
 * });
 */
export interface EventSink {
  emit<T extends EventType>(type: T, data: EventData<T>): void;
}

/** An `EventSink` that drops everything: for parts built without events (tests, the CLI). */
export const NO_EVENTS: EventSink = { emit: () => undefined };

/** Which endpoint a delivery goes to: one of the config's (`gateway`) or a company's. */
export interface EndpointRef {
  scope: 'gateway' | 'company';
  id: string;
}

/** A company's webhook endpoint as stored (with its secret: it signs the deliveries). */
export interface CompanyWebhook {
  id: string;
  companyId: string;
  url: string;
  secret: string;
  events: string[];
  createdAt: string;
}

/** A resolved endpoint: where to POST and with which secret. */
export interface Endpoint {
  ref: EndpointRef;
  url: string;
  secret: string;
  events: readonly string[];
}

/** One delivery as stored and as the admin API shows it (with `event` parsed from `body`). */
export type DeliveryView = z.infer<typeof deliveryViewSchema>;

/** One delivery as stored: the view's fields, with the exact body that is signed and sent. */
export type DeliveryRecord = Omit<DeliveryView, 'event'> & { body: string };

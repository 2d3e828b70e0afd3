/**
 * Library entry point: what it takes to build a gateway (the app, its parts, the stores, the
 * config) and the signing helpers for upstream services. Nothing from the demo. The exact list of
 * runtime exports is pinned by test/unit/index.test.ts, so additions and removals are deliberate.
 */

/** Everything in one call: store, limiter, verifier, admin API, listening servers. */
export { startGateway, createStore, type GatewayHandle, type StartOptions } from './server.js';

/** The request pipeline as an Express app, for embedding or a server of your own; never listens. */
export { createApp, type AppDeps } from './http/app.js';

export { createRedisClient, type RedisClient } from './redis/connection.js';
export { KeyVerifier, type VerifierOptions, type Verification } from './auth/verify.js';
export {
  TierRateLimiter,
  AuthFailureLimiter,
  type TierLimiterOptions,
  type RateDecision,
  type WindowDecision,
  type LimitSubject,
  type FailurePolicy,
} from './ratelimit/tier-limiter.js';
export { createLogger, type Logger } from './observability/logger.js';
export { createMetrics, type GatewayMetrics } from './observability/metrics.js';
export { createTracing, tracingSettings, TRACING_OFF, type Tracing } from './observability/tracing.js';

export {
  AdminService,
  type AdminServiceOptions,
  type AdminResult,
  type AdminFailure,
  type KeyView,
  type CreatedKey,
} from './admin/service.js';

export { loadConfig, validateConfig, type LoadResult } from './config/load.js';
export {
  configSchema,
  type GatewayConfig,
  type ConfigInput,
  type Tier,
  type Route,
} from './config/schema.js';

export { generateApiKey, hashApiKey, parseApiKey, type ParsedKey } from './auth/api-key.js';
export { ERRORS, GatewayError, type ErrorCode } from './errors.js';

export {
  StoreReadOnlyError,
  type KeyStore,
  type KeyRecord,
  type Company,
  type CompanyStatus,
  type CompanyPatch,
  type KeyPatch,
  type Scope,
  type RateWindow,
  type Invalidation,
  type AuditEntry,
  type CreateKeyResult,
} from './store/types.js';
export { MemoryKeyStore } from './store/memory-store.js';
export { FileKeyStore, type FileKeyStoreOptions } from './store/file-store.js';
export { RedisKeyStore } from './store/redis-store.js';

export {
  signGatewayRequest,
  verifyGatewaySignature,
  gatewaySignatureMiddleware,
  signWebhook,
  verifyWebhook,
  generateWebhookSecret,
  WEBHOOK_HEADERS,
  type SignatureCheck,
  type SignedFields,
  type WebhookCheck,
  type HeaderSource,
} from './signing.js';

/** Events and their webhooks (docs/events.md): what an emitter calls and what a receiver gets. */
export type { EventSink, EventData, EventEnvelope, EventType } from './events/types.js';

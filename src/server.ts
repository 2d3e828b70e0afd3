import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createExpiryAuditor } from './admin/expiry-audit.js';
import { createAdminApp, isLoopbackName } from './admin/router.js';
import { findMissingTiers, missingTierAdvice } from './admin/missing-tiers.js';
import { AdminService } from './admin/service.js';
import type { Mailer } from './dashboard/mail.js';
import type { DashboardService } from './dashboard/service.js';
import type { DashboardStore } from './dashboard/store.js';
import { createExposedKeyHandler } from './auth/exposure.js';
import { KeyVerifier } from './auth/verify.js';
import { safeMessage } from './errors.js';
import { findStartupProblems } from './config/preflight.js';
import type { WebhookAdmin } from './events/admin.js';
import { createEvents, type GatewayEvents } from './events/events.js';
import type { EventSink } from './events/types.js';
import type { GatewayConfig } from './config/schema.js';
import { createApp, type AppDeps } from './http/app.js';
import type { Upstreams } from './http/route-proxies.js';
import { createAdminServer, createGatewayServer, drain, listen } from './http/server.js';
import { createMetricsReader } from './observability/cluster-metrics.js';
import { createLogger, type Logger } from './observability/logger.js';
import {
  childCache,
  createKeyFileMetrics,
  createMetrics,
  createUsageMetrics,
  type BuildInfo,
  type GatewayMetrics,
  type KeyFileMetrics,
} from './observability/metrics.js';
import {
  createReadinessCheck,
  type ReadinessCheck,
  type ReadinessCheckOptions,
} from './observability/readiness.js';
import { createTracing, type Tracing } from './observability/tracing.js';
import { AuthFailureLimiter, TierRateLimiter, type TierLimiterOptions } from './ratelimit/tier-limiter.js';
import type { RedisClient } from './redis/connection.js';
import { FileKeyStore, type FileReloadResult } from './store/file-store.js';
import { MemoryKeyStore } from './store/memory-store.js';
import type { AuditEntry, KeyStore } from './store/types.js';
import { UsageRecorder } from './usage/recorder.js';
import { MemoryUsageStore, type UsageStore } from './usage/usage-store.js';
import { certificateExpiry, readTlsFiles, watchTlsFiles, type TlsFiles, type TlsMaterial } from './tls.js';

/**
 * A running gateway, as `startGateway` returns it: its ports, its parts (for the CLI, tests and
 * embedding) and `close()`. The config is the validated, frozen one the gateway runs with.
 */
export interface GatewayHandle {
  /** Port the gateway listens on (useful with port 0). */
  port: number;
  /** Admin port, or null when the admin API is disabled. */
  adminPort: number | null;
  /** Company dashboard port, or null when `dashboard.enabled` is false. */
  dashboardPort: number | null;
  /** The company dashboard's rules (null when it is off). */
  dashboard: DashboardService | null;
  config: Readonly<GatewayConfig>;
  store: KeyStore;
  service: AdminService;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Exports the spans buffered so far (a no-op when tracing is off). */
  flushTraces(): Promise<void>;
  /** Events and webhooks (null when `events.enabled` is false); `events.bus` is the `EventSink`. */
  events: GatewayEvents | null;
  /** Usage counting (null when `usage.enabled` is false); `flush()` writes the counts now. */
  usage: { recorder: UsageRecorder; store: UsageStore } | null;
  /** The routes' upstream pools: targets, health, the admin view. */
  upstreams: Upstreams;
  /** Graceful stop: no new connections, in-flight requests drain up to `server.shutdownTimeoutMs`. */
  close(): Promise<void>;
}

/** Optional parts `startGateway` uses instead of building its own; none is needed in production. */
export interface StartOptions {
  /** Log here instead of a logger built from `config.log`. */
  logger?: Logger;
  /** Use this store instead of building one from config (tests, demo). */
  store?: KeyStore;
  /** Collect Node process metrics (off in tests that start many gateways). */
  processMetrics?: boolean;
  /** Export spans here (tracing on, whatever `OTEL_*` says); e.g. the SDK's InMemorySpanExporter. */
  traceExporter?: SpanExporter;
  /** The dashboard's store (tests); default: beside the key store (Redis, or memory). */
  dashboardStore?: DashboardStore;
  /** Where the `log` mail transport writes (the demo's terminal); default stderr. */
  mailPrint?: (text: string) => void;
}

/**
 * Builds the store and its clients from config. Redis clients are bounded (command timeout, no
 * offline queue) and reconnect by themselves; their errors are logged, rate-limited, never thrown.
 */
export async function createStore(
  config: Readonly<GatewayConfig>,
  logger: Logger,
  metrics?: GatewayMetrics,
): Promise<{ store: KeyStore; redis?: RedisClient }> {
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  switch (config.store.type) {
    case 'memory':
      return { store: new MemoryKeyStore() };
    case 'file': {
      const fileMetrics = metrics ? createKeyFileMetrics(metrics.registry) : undefined;
      const store = new FileKeyStore({
        path: config.store.file.path,
        knownTiers: tiers,
        knownRoutes: config.routes,
        onReload: createReloadReporter(config.store.file.path, logger, fileMetrics),
      });
      // The constructor throws on a broken file, so reaching here means the first load applied.
      fileMetrics?.lastReloadSuccess.set(1);
      return { store };
    }
    case 'redis': {
      // Loaded when used: ioredis is not needed by a file-store gateway (start time).
      const [{ createRedisClient, waitForReady }, { RedisKeyStore }] = await Promise.all([
        import('./redis/connection.js'),
        import('./store/redis-store.js'),
      ]);
      const client = createRedisClient(config.store.redis, 'notify-gateway');
      const subscriber = createRedisClient(config.store.redis, 'notify-gateway-sub');
      logRedisErrors(client, logger, 'redis');
      logRedisErrors(subscriber, logger, 'redis subscriber');
      const ready = await waitForReady(client, config.store.redis.connectTimeoutMs);
      if (!ready)
        logger.warn('Redis is not reachable yet; starting anyway (readiness reports 503 until it is)');
      return { store: new RedisKeyStore(client, subscriber, config.store.redis.keyPrefix), redis: client };
    }
  }
}

/**
 * Logs and counts each key file reload. A rejection lists every problem (never a hash: the parser
 * names positions); a reload that drops or postpones a revocation applies but warns per key.
 */
function createReloadReporter(
  path: string,
  logger: Logger,
  metrics: KeyFileMetrics | undefined,
): (r: FileReloadResult) => void {
  return function reportReload(r) {
    metrics?.reloads.inc({ result: r.ok ? 'ok' : 'rejected' });
    metrics?.lastReloadSuccess.set(r.ok ? 1 : 0);
    if (!r.ok) {
      logger.error({ file: path, problems: r.problems }, 'key file rejected; keeping the last good content');
      return;
    }
    logger.info({ companies: r.companies, keys: r.keys }, 'key file reloaded');
    for (const u of r.revocationsUndone) {
      metrics?.revocationsUndone.inc();
      logger.warn(
        { keyId: u.keyId, companyId: u.companyId, revokedAtBefore: u.was, revokedAtNow: u.now },
        u.now === null
          ? 'key file reload removes a revocation: the key works again'
          : 'key file reload postpones a revocation',
      );
    }
  };
}

function logRedisErrors(client: RedisClient, logger: Logger, what: string): void {
  let last = 0;
  let suppressed = 0;
  client.on('error', (err: Error) => {
    const now = Date.now();
    if (now - last < 10_000) {
      suppressed++;
      return;
    }
    last = now;
    // Only the message: ioredis errors can carry the failed command and its arguments (key names).
    logger.warn({ error: safeMessage(err), suppressed }, `${what} connection error`);
    suppressed = 0;
  });
  client.on('ready', () => {
    if (last !== 0) logger.info(`${what} connection restored`);
  });
}

/**
 * Starts the gateway (and the admin API on its own port) from a validated config: store, limiter,
 * verifier, admin API, listening servers. Throws on a config that cannot run (`findStartupProblems`:
 * admin API on a public address without a token, a key or TLS file that cannot be read; a port in use).
 *
 * @example
 * const r = loadConfig({ env: process.env });
 * if (!r.ok) throw new Error(r.problems.join('\n'));
 * const gw = await startGateway(r.config);
 * process.once('SIGTERM', () => void gw.close());
 */
export async function startGateway(
  config: Readonly<GatewayConfig>,
  opts: StartOptions = {},
): Promise<GatewayHandle> {
  const logger = opts.logger ?? createLogger({ level: config.log.level });
  // The same checks as `config check` (admin token, key file, TLS files), every problem at once.
  const problems = findStartupProblems(config, { isLoopback: isLoopbackName, checkKeyFile: !opts.store });
  if (problems.length) throw new Error(`the configuration cannot start:\n  - ${problems.join('\n  - ')}`);
  // Read before anything connects: a TLS file that cannot be used fails the start at once.
  const tls = readListenerTls(config);
  const metrics = createMetrics({ processMetrics: opts.processMetrics ?? true, build: readBuildInfo() });
  for (const [listener, m] of Object.entries(tls)) setTlsExpiry(metrics, listener, m.cert);
  // Off (and nothing of OpenTelemetry loaded) unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set.
  const tracing = await createTracing({ env: process.env, logger, exporter: opts.traceExporter });
  const built = opts.store
    ? { store: opts.store, redis: undefined }
    : await createStore(config, logger, metrics);
  const { store } = built;
  const limiterRedis = await createLimiterRedis(config, logger, built.redis);
  const events = createGatewayEvents(config, limiterRedis.client, store, metrics, logger, (e) =>
    service.audit(e),
  );
  const limiter = createLimiter(config, limiterRedis.client, metrics, events?.onWindowUse);
  const verifier = createVerifier(config, store, metrics, logger);
  void reportMissingTiers(config, store, logger);
  const usage = await createUsage(config, built.redis ?? limiterRedis.client, metrics, logger);
  const service = createAdminService(config, store, logger, events?.bus);
  // The pools are read at each check, once `app` exists.
  const ready = createReady(config, store, limiterRedis.client, built.redis, () =>
    app.upstreams.withoutHealthyTarget(),
  );
  const app = createApp({
    config,
    verifier,
    limiter,
    authFailures: createAuthFailures(config),
    logger,
    metrics,
    ready,
    onKeyExpired: createExpiryAuditor({ auditor: service }),
    onKeyInUrl: createKeyInUrlHandler(config, store, service, logger),
    tracing,
    onRequestFinished: usage?.onFinished,
  });
  const { upstreams } = app; // for the admin API and the handle
  const dashboard = await createDashboard(config, {
    service,
    usage,
    events: events?.bus,
    logger,
    opts,
    ...built,
  });
  const listeners = await startListeners(config, app, tls, {
    ...{ service, metrics, logger, usage, ready, webhooks: events?.admin ?? null, upstreams },
    dashboard: dashboard?.service ?? null,
  });
  events?.start();
  const stopTlsReload = startTlsReload(config, logger, tls, listeners.server, listeners.adminServer, metrics);
  const { port, adminPort, dashboardPort } = announce(config, logger, store, listeners);
  const closing = { stopTlsReload, ready, app, dashboard, store, limiter, limiterRedis, metrics, logger };
  const close = createCloser(config, {
    ...closing,
    ...listeners,
    tracing,
    events,
    usage: usage?.recorder ?? null,
  });
  const parts = { config, store, service, metrics, logger, usage, events, upstreams, close };
  const flushTraces = () => tracing.forceFlush();
  return { port, adminPort, dashboardPort, dashboard: dashboard?.service ?? null, flushTraces, ...parts };
}

/** The listeners' ports, logged once as `gateway listening`. */
function announce(
  config: Readonly<GatewayConfig>,
  logger: Logger,
  store: KeyStore,
  listeners: { server: Server; adminServer: Server | null; dashboardServer: Server | null },
): { port: number; adminPort: number | null; dashboardPort: number | null } {
  const portOf = (s: Server | null) => (s ? (s.address() as AddressInfo).port : null);
  const ports = {
    port: portOf(listeners.server)!,
    adminPort: portOf(listeners.adminServer),
    dashboardPort: portOf(listeners.dashboardServer),
  };
  logger.info(
    { ...ports, store: store.kind, routes: config.routes.map((r) => r.prefix) },
    'gateway listening',
  );
  return ports;
}

/** The readiness check of the store, the limiter's Redis and the routes' pools. */
function createReady(
  config: Readonly<GatewayConfig>,
  store: KeyStore,
  limiterRedis: ReadinessCheckOptions['limiterRedis'],
  redis: Parameters<typeof readyOnce>[0],
  upstreams: () => string[],
): ReadinessCheck {
  return createReadinessCheck({
    store,
    limiterRedis,
    failurePolicy: config.rateLimit.failurePolicy,
    started: readyOnce(redis),
    upstreams,
  });
}

/**
 * Listens: the gateway, then the admin API and the dashboard when enabled (each closes the ones
 * already listening when it cannot listen).
 */
async function startListeners(
  config: Readonly<GatewayConfig>,
  app: Parameters<typeof createGatewayServer>[1],
  tls: ListenerTls,
  deps: Omit<Parameters<typeof startAdminServer>[1], 'tls'>,
): Promise<{ server: Server; adminServer: Server | null; dashboardServer: Server | null }> {
  const server = createGatewayServer(config.server, app, tls.server);
  await listen(server, config.server.port, config.server.host);
  const adminServer = await startAdminServer(config, { ...deps, tls: tls.admin }, server);
  const dashboardServer = deps.dashboard
    ? await startDashboardServer(config, deps.dashboard, deps.logger, [server, adminServer])
    : null;
  return { server, adminServer, dashboardServer };
}

/** The per-address failed-authentication budget, or null when `rateLimit.authFailures` is off. */
function createAuthFailures(config: Readonly<GatewayConfig>): AuthFailureLimiter | null {
  const c = config.rateLimit.authFailures;
  return c.enabled ? new AuthFailureLimiter(c) : null;
}

/**
 * Events and webhooks when `events.enabled`: on the limiter's Redis (the store's, or
 * `rateLimit.redisUrl`), so the deployment has one queue and one deduplication; else in memory.
 */
function createGatewayEvents(
  config: Readonly<GatewayConfig>,
  redis: RedisClient | undefined,
  store: KeyStore,
  metrics: GatewayMetrics,
  logger: Logger,
  audit: (e: Omit<AuditEntry, 'at'>) => Promise<void>,
): GatewayEvents | null {
  if (!config.events.enabled) return null;
  return createEvents({
    config: config.events,
    ...(redis && { redis }),
    keyPrefix: config.store.redis.keyPrefix,
    keys: store,
    rotationAgeDays: config.keys.rotationAgeDays,
    registry: metrics.registry,
    logger,
    audit,
  });
}

/**
 * A valid key seen in a URL: flag it exposed (audited, with where it was seen: client address,
 * route, request id), or revoke it (`keys.exposedKeys`). Runs after the answer, in the background.
 */
function createKeyInUrlHandler(
  config: Readonly<GatewayConfig>,
  store: KeyStore,
  service: AdminService,
  logger: Logger,
): NonNullable<AppDeps['onKeyInUrl']> {
  const onKeyInUrl = createExposedKeyHandler({
    store,
    recorder: service,
    keyFormat: { maxLength: config.keys.maxLength, acceptLegacy: config.keys.acceptLegacyFormat },
    revoke: config.keys.exposedKeys === 'revoke',
    onError: (err) => logger.warn({ error: safeMessage(err) }, 'exposed-key handling failed'),
  });
  return (candidates, req) =>
    void onKeyInUrl(candidates, { clientIp: req.gw.clientIp, route: req.gw.route, requestId: req.gw.id });
}

/**
 * Usage counting: in Redis (the store's, or `rateLimit.redisUrl`) when there is one, shared and
 * exact across instances; else in this process's memory (per instance). Flushes are counted in
 * `gateway_usage_flushes_total`; a failed one is logged (message only) and retried.
 */
async function createUsage(
  config: Readonly<GatewayConfig>,
  redis: RedisClient | undefined,
  metrics: GatewayMetrics,
  logger: Logger,
): Promise<{ recorder: UsageRecorder; store: UsageStore; onFinished: AppDeps['onRequestFinished'] } | null> {
  if (!config.usage.enabled) return null;
  const { retentionDays, flushIntervalMs } = config.usage;
  const store: UsageStore = redis
    ? new (await import('./usage/redis-usage-store.js')).RedisUsageStore(
        redis,
        config.store.redis.keyPrefix,
        retentionDays,
      )
    : new MemoryUsageStore(retentionDays);
  const { flushes } = createUsageMetrics(metrics.registry);
  const recorder = new UsageRecorder({
    store,
    flushIntervalMs,
    onFlush: (r) => {
      flushes.inc({ result: r.ok ? 'ok' : 'error' });
      if (!r.ok)
        logger.warn({ error: safeMessage(r.error), entries: r.entries }, 'usage flush failed; retrying');
    },
  });
  const onFinished: AppDeps['onRequestFinished'] = (st, status) => {
    if (st.company) recorder.record(st.company.id, st.error, status, st.key?.id);
  };
  return { recorder, store, onFinished };
}

/** The company dashboard's parts, when `dashboard.enabled`. */
interface BuiltDashboard {
  service: DashboardService;
  close(): void;
}

/**
 * The dashboard's store (beside the key store: its Redis, a Redis client of its own when the key
 * store was handed in, or memory), its mailer and its service; null when `dashboard.enabled` is off.
 * Its modules (and nodemailer) are loaded only when it is on (start time).
 */
async function createDashboard(
  config: Readonly<GatewayConfig>,
  parts: {
    service: AdminService;
    usage: { store: UsageStore } | null;
    events: EventSink | undefined;
    logger: Logger;
    opts: StartOptions;
    redis?: RedisClient | undefined;
  },
): Promise<BuiltDashboard | null> {
  const d = config.dashboard;
  if (!d.enabled) return null;
  const [{ createMailer }, { DashboardService }, { MemoryDashboardStore }] = await Promise.all([
    import('./dashboard/mail.js'),
    import('./dashboard/service.js'),
    import('./dashboard/store.js'),
  ]);
  let own: RedisClient | undefined;
  let store = parts.opts.dashboardStore;
  if (!store && config.store.type === 'redis') {
    const [{ createRedisClient }, { RedisDashboardStore }] = await Promise.all([
      import('./redis/connection.js'),
      import('./dashboard/redis-store.js'),
    ]);
    const client = parts.redis ?? (own = createRedisClient(config.store.redis, 'notify-gateway-dashboard'));
    store = new RedisDashboardStore(client, config.store.redis.keyPrefix);
  }
  const print = parts.opts.mailPrint ?? ((text: string) => void process.stderr.write(text));
  const mailer: Mailer = createMailer(d.mail, print);
  const tiers = config.rateLimit.tiers.map((t) => t.name);
  const service = new DashboardService({
    admin: parts.service,
    store: store ?? new MemoryDashboardStore(),
    mailer,
    usage: parts.usage ? { reader: parts.usage.store, retentionDays: config.usage.retentionDays } : null,
    ...(parts.events && { events: parts.events }),
    onMailError: (err) => parts.logger.warn({ error: safeMessage(err) }, 'dashboard mail could not be sent'),
    settings: {
      registration: d.registration,
      publicOrigin: d.publicOrigin ?? '',
      idleMs: d.session.idleMinutes * 60_000,
      absoluteMs: d.session.absoluteHours * 3_600_000,
      resendCooldownMs: d.signIn.resendCooldownSeconds * 1000,
      perAddressPerHour: d.signIn.perAddressPerHour,
      perClientPerHour: d.signIn.perClientPerHour,
      tier: tiers.includes('free') ? 'free' : tiers[0]!,
    },
  });
  return {
    service,
    close() {
      mailer.close();
      own?.disconnect();
    },
  };
}

/**
 * Starts the dashboard's listener. Its origin (for the same-origin rule and the links in mails) is
 * `dashboard.publicOrigin`, or `http://<host>:<port>` once the port is known (loopback only:
 * `findStartupProblems` refuses plain HTTP elsewhere). When it cannot listen, closes the servers
 * already listening and rethrows.
 */
async function startDashboardServer(
  config: Readonly<GatewayConfig>,
  service: DashboardService,
  logger: Logger,
  started: (Server | null)[],
): Promise<Server> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createAdminServer((req, res) => handler(req, res));
  try {
    await listen(server, config.dashboard.port, config.dashboard.host);
  } catch (err) {
    for (const s of started) s?.close();
    throw err;
  }
  const { host } = config.dashboard;
  const port = (server.address() as AddressInfo).port;
  const origin = config.dashboard.publicOrigin ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  service.useOrigin(origin);
  const { createDashboardApp } = await import('./dashboard/app.js');
  handler = createDashboardApp({
    service,
    origin,
    policy: { maxActiveKeys: config.keys.maxActiveKeys, rotationAgeDays: config.keys.rotationAgeDays },
    trustedProxies: config.server.trustedProxies,
    logger,
  });
  return server;
}

/** The admin service over the store, logging each audit entry and emitting its events. */
function createAdminService(
  config: Readonly<GatewayConfig>,
  store: KeyStore,
  logger: Logger,
  events: EventSink | undefined,
): AdminService {
  return new AdminService({
    ...(events && { events }),
    store,
    tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
    routes: config.routes,
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
    onAudit: (entry) => logger.info({ audit: entry }, `audit ${entry.event}`),
  });
}

/**
 * Whether the store's Redis has been ready once (always true without one): until then nothing is
 * cached and nothing can be served, so readiness answers `starting`.
 */
function readyOnce(client: RedisClient | undefined): () => boolean {
  let once = !client || client.status === 'ready';
  if (!once) client?.once('ready', () => (once = true));
  return () => once;
}

/** The TLS material of each listener that has TLS files (`server.tls`, `admin.tls`), read and checked. */
interface ListenerTls {
  server?: TlsMaterial;
  admin?: TlsMaterial;
}

function readListenerTls(config: Readonly<GatewayConfig>): ListenerTls {
  const admin = config.admin.enabled ? config.admin.tls : undefined;
  return {
    ...(config.server.tls ? { server: readTlsFiles(config.server.tls, 'server.tls') } : {}),
    ...(admin ? { admin: readTlsFiles(admin, 'admin.tls') } : {}),
  };
}

/**
 * Reloads each TLS listener's certificate when its files change (cert-manager's Secret rotation),
 * without a restart. Returns the function that stops watching.
 */
function startTlsReload(
  config: Readonly<GatewayConfig>,
  logger: Logger,
  tls: ListenerTls,
  server: Server,
  adminServer: Server | null,
  metrics: GatewayMetrics,
): () => void {
  const watch = (s: Server, files: TlsFiles, m: TlsMaterial, listener: 'server' | 'admin') =>
    watchTlsFiles(s as unknown as HttpsServer, files, {
      configKey: `${listener}.tls`,
      logger,
      identity: m.identity,
      onInstalled: (cert) => setTlsExpiry(metrics, listener, cert),
    });
  const stops = [
    tls.server && config.server.tls ? watch(server, config.server.tls, tls.server, 'server') : null,
    tls.admin && adminServer && config.admin.tls
      ? watch(adminServer, config.admin.tls, tls.admin, 'admin')
      : null,
  ];
  return () => stops.forEach((stop) => stop?.());
}

/** `gateway_tls_certificate_expiry_timestamp_seconds{listener}` from the chain a listener serves. */
function setTlsExpiry(metrics: GatewayMetrics, listener: string, cert: Buffer): void {
  const at = certificateExpiry(cert);
  if (at !== null) metrics.tlsExpiry.labels(listener).set(at);
}

/**
 * What `gateway_build_info` reports: the package's version (package.json beside `src/` and
 * `dist/`) and the commit from `GATEWAY_COMMIT` (the image build sets it), `unknown` otherwise.
 */
function readBuildInfo(): BuildInfo {
  let version = 'unknown';
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    if (typeof pkg.version === 'string') version = pkg.version;
  } catch {
    // Embedded without its package.json: the version stays unknown.
  }
  const commit = process.env.GATEWAY_COMMIT;
  return { version, commit: commit && /^[0-9a-f]{7,40}$/i.test(commit) ? commit : undefined };
}

/** The limiter's Redis: the store's client when there is one, else `rateLimit.redisUrl` if set. */
interface LimiterRedis {
  client: RedisClient | undefined;
  /** Set when the client was opened here (and must be closed with the gateway). */
  own: RedisClient | undefined;
}

/**
 * The limiter shares the store's Redis, or (file-store sidecars) a Redis of its own from
 * `rateLimit.redisUrl`. An unreachable own Redis is logged, not thrown: the limiter starts on its
 * failure policy and the client reconnects by itself.
 */
async function createLimiterRedis(
  config: Readonly<GatewayConfig>,
  logger: Logger,
  storeRedis: RedisClient | undefined,
): Promise<LimiterRedis> {
  if (storeRedis || !config.rateLimit.redisUrl) return { client: storeRedis, own: undefined };
  const { createRedisClient, waitForReady } = await import('./redis/connection.js');
  const own = createRedisClient(
    { ...config.store.redis, url: config.rateLimit.redisUrl },
    'notify-gateway-limiter',
  );
  logRedisErrors(own, logger, 'rate-limit redis');
  if (!(await waitForReady(own, config.store.redis.connectTimeoutMs))) {
    logger.warn('the rate-limit Redis is not reachable yet; starting on the failure policy');
  }
  return { client: own, own };
}

/** The tier limiter from `rateLimit`, counting store errors in `gateway_store_errors`. */
function createLimiter(
  config: Readonly<GatewayConfig>,
  redis: RedisClient | undefined,
  metrics: GatewayMetrics,
  onWindowUse: TierLimiterOptions['onWindowUse'],
): TierRateLimiter {
  return new TierRateLimiter({
    ...(onWindowUse && { onWindowUse }),
    tiers: config.rateLimit.tiers,
    ...(redis ? { redis } : {}),
    keyPrefix: config.store.redis.keyPrefix,
    failurePolicy: config.rateLimit.failurePolicy,
    lease: config.rateLimit.lease,
    instances: config.rateLimit.instances,
    onStoreError: () => metrics.storeErrors.inc({ op: 'rate_limit' }),
  });
}

/** The key verifier from `cache` and `keys`, reporting cache outcomes and store errors as metrics. */
function createVerifier(
  config: Readonly<GatewayConfig>,
  store: KeyStore,
  metrics: GatewayMetrics,
  logger: Logger,
): KeyVerifier {
  const cacheBy = childCache(metrics.cache);
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  return new KeyVerifier({
    store,
    maxEntries: config.cache.maxEntries,
    positiveTtlMs: config.cache.positiveTtlMs,
    negativeTtlMs: config.cache.negativeTtlMs,
    staleIfErrorMs: config.cache.staleIfErrorMs,
    maxKeyLength: config.keys.maxLength,
    acceptLegacyFormat: config.keys.acceptLegacyFormat,
    lastUsedIntervalMs: config.keys.lastUsedIntervalMs,
    onCache: (kind, result) => cacheBy(kind, result).inc(),
    onStoreError: (op) => metrics.storeErrors.inc({ op }),
    tiers,
    onRecordRefused: (r) =>
      r.reason === 'tier_missing'
        ? logger.error(
            { companyId: r.companyId, tier: r.tier },
            `company ${r.companyId ?? '(id not shown)'} is on tier "${r.tier ?? ''}", which rateLimit.tiers does not have; ${missingTierAdvice(tiers)}`,
          )
        : logger.error(
            { record: r.kind, keyId: r.keyId, companyId: r.companyId, fields: r.fields },
            `stored ${r.kind} record breaks the field rules (${r.fields.join(', ')}); its requests are refused (401) until the record is fixed`,
          ),
  });
}

/**
 * At start: names every company whose tier the config lacks (their requests would get 503
 * `TIER_NOT_CONFIGURED`), one error line per tier with up to 100 ids (`config check` lists all).
 * The gateway starts anyway: the other companies are served, and the store may not be readable
 * yet (a warning says so).
 */
async function reportMissingTiers(
  config: Readonly<GatewayConfig>,
  store: KeyStore,
  logger: Logger,
): Promise<void> {
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  try {
    for (const m of await findMissingTiers(store, tiers))
      logger.error(
        { tier: m.tier, companies: m.companies.slice(0, 100), count: m.companies.length },
        `${m.companies.length} compan${m.companies.length === 1 ? 'y is' : 'ies are'} on tier "${m.tier}", which rateLimit.tiers does not have; ${missingTierAdvice(tiers)}`,
      );
  } catch (err) {
    logger.warn({ error: safeMessage(err) }, 'could not read the companies to check their tiers');
  }
}

/**
 * Starts the admin API on its own port when `admin.enabled`, else returns null. When it cannot
 * listen, closes the already listening gateway server and rethrows.
 */
async function startAdminServer(
  config: Readonly<GatewayConfig>,
  deps: {
    service: AdminService;
    metrics: GatewayMetrics;
    logger: Logger;
    usage: { store: UsageStore } | null;
    ready: ReadinessCheck;
    tls: TlsMaterial | undefined;
    webhooks: WebhookAdmin | null;
    upstreams: Upstreams;
    dashboard: DashboardService | null;
  },
  gatewayServer: Server,
): Promise<Server | null> {
  if (!config.admin.enabled) return null;
  const adminApp = createAdminApp({
    service: deps.service,
    token: config.admin.token ?? null,
    tokens: config.admin.tokens,
    readMetrics: createMetricsReader(deps.metrics.registry),
    logger: deps.logger,
    console: config.admin.console
      ? {
          origin: config.admin.consoleOrigin ?? null,
          host: config.admin.host,
          tiers: config.rateLimit.tiers.map((t) => t.name),
          tierWindows: Object.fromEntries(config.rateLimit.tiers.map((t) => [t.name, t.windows])),
        }
      : null,
    usage: deps.usage ? { reader: deps.usage.store, retentionDays: config.usage.retentionDays } : null,
    ready: deps.ready,
    tls: deps.tls !== undefined,
    webhooks: deps.webhooks,
    upstreams: deps.upstreams,
    dashboard: deps.dashboard,
  });
  const adminServer = createAdminServer(adminApp, deps.tls);
  if (!deps.tls && config.admin.token && !isLoopbackName(config.admin.host)) {
    // Not refused: a service mesh or a private network may encrypt below the gateway. Said loudly.
    deps.logger.warn(
      { host: config.admin.host },
      'the admin API binds a non-loopback address over plain HTTP: its bearer token crosses the network in clear; set admin.tls (or encrypt in front)',
    );
  }
  try {
    await listen(adminServer, config.admin.port, config.admin.host);
  } catch (err) {
    gatewayServer.close();
    throw err;
  }
  return adminServer;
}

/**
 * What `close()` stops, in order: readiness (to `draining`), servers (drained), proxy agents, limiter leases, store, own limiter
 * Redis, metrics.
 */
interface Closeable {
  stopTlsReload: () => void;
  ready: ReadinessCheck;
  server: Server;
  adminServer: Server | null;
  dashboardServer: Server | null;
  dashboard: BuiltDashboard | null;
  app: { closeAgents(): void };
  store: KeyStore;
  limiter: TierRateLimiter;
  limiterRedis: LimiterRedis;
  metrics: GatewayMetrics;
  logger: Logger;
  tracing: Tracing;
  usage: UsageRecorder | null;
  events: GatewayEvents | null;
}

/** The handle's `close()`: graceful, and idempotent (every call returns the same promise). */
function createCloser(config: Readonly<GatewayConfig>, parts: Closeable): () => Promise<void> {
  const { ready, server, adminServer, app, store, limiter, limiterRedis, metrics, logger, tracing, usage } =
    parts;
  let closing: Promise<void> | null = null;
  return function close() {
    closing ??= (async () => {
      parts.stopTlsReload();
      // /readyz answers 503 `draining` from now on. The admin port stays up while the gateway port
      // drains, so its /readyz and /metrics keep answering until the last request is done.
      ready.drain();
      await drain(server, config.server.shutdownTimeoutMs);
      if (adminServer) await drain(adminServer, 1000);
      if (parts.dashboardServer) await drain(parts.dashboardServer, 1000);
      parts.dashboard?.close();
      app.closeAgents();
      // Deliveries in flight go back to the queue while its Redis is still open.
      await parts.events?.close();
      // Unused leased quota goes back while the Redis client is still open.
      await limiter.close();
      // The last counts go out while Redis is still open.
      await usage?.close();
      await store.close();
      limiterRedis.own?.disconnect();
      metrics.registry.clear();
      // The last spans (the drained requests') are exported before the process goes.
      await tracing.shutdown().catch(() => undefined);
      logger.info('gateway stopped');
      logger.flush?.();
    })();
    return closing;
  };
}

import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createExpiryAuditor } from './admin/expiry-audit.js';
import { createAdminApp, isLoopbackName } from './admin/router.js';
import { AdminService } from './admin/service.js';
import { createExposedKeyHandler } from './auth/exposure.js';
import { KeyVerifier } from './auth/verify.js';
import { rawErrorResponse, safeMessage, type ErrorCode } from './errors.js';
import type { GatewayConfig } from './config/schema.js';
import { createApp } from './http/app.js';
import { securityHeaderSet } from './http/steps/security-headers.js';
import { createMetricsReader } from './observability/cluster-metrics.js';
import { createLogger, type Logger } from './observability/logger.js';
import {
  childCache,
  createKeyFileMetrics,
  createMetrics,
  type GatewayMetrics,
  type KeyFileMetrics,
} from './observability/metrics.js';
import { createReadinessCheck } from './observability/readiness.js';
import { methodRuleOf } from './proxy/routes.js';
import { AuthFailureLimiter, TierRateLimiter } from './ratelimit/tier-limiter.js';
import { createRedisClient, waitForReady, type RedisClient } from './redis/connection.js';
import { FileKeyStore, type FileReloadResult } from './store/file-store.js';
import { MemoryKeyStore } from './store/memory-store.js';
import { RedisKeyStore } from './store/redis-store.js';
import type { KeyStore } from './store/types.js';

/**
 * A running gateway, as `startGateway` returns it: its ports, its parts (for the CLI, tests and
 * embedding) and `close()`. The config is the validated, frozen one the gateway runs with.
 */
export interface GatewayHandle {
  /** Port the gateway listens on (useful with port 0). */
  port: number;
  /** Admin port, or null when the admin API is disabled. */
  adminPort: number | null;
  config: Readonly<GatewayConfig>;
  store: KeyStore;
  service: AdminService;
  metrics: GatewayMetrics;
  logger: Logger;
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
        onReload: createReloadReporter(config.store.file.path, logger, fileMetrics),
      });
      // The constructor throws on a broken file, so reaching here means the first load applied.
      fileMetrics?.lastReloadSuccess.set(1);
      return { store };
    }
    case 'redis': {
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
 * verifier, admin API, listening servers. Throws on a config that cannot run (admin API on a
 * public address without a token, bad TLS files, a port in use).
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
  if (config.admin.enabled && !config.admin.token && !isLoopbackName(config.admin.host)) {
    throw new Error(
      `the admin API binds ${config.admin.host}, which is not loopback: set ADMIN_TOKEN (admin.token)`,
    );
  }
  const metrics = createMetrics({ processMetrics: opts.processMetrics ?? true });
  const built = opts.store
    ? { store: opts.store, redis: undefined }
    : await createStore(config, logger, metrics);
  const { store } = built;
  const limiterRedis = await createLimiterRedis(config, logger, built.redis);
  const limiter = createLimiter(config, limiterRedis.client, metrics);
  const verifier = createVerifier(config, store, metrics);
  const service = new AdminService({
    store,
    tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
    onAudit: (entry) => logger.info({ audit: entry }, `audit ${entry.event}`),
  });
  const onKeyInUrl = createExposedKeyHandler({
    store,
    recorder: service,
    keyFormat: { maxLength: config.keys.maxLength, acceptLegacy: config.keys.acceptLegacyFormat },
    revoke: config.keys.exposedKeys === 'revoke',
    onError: (err) => logger.warn({ error: safeMessage(err) }, 'exposed-key handling failed'),
  });
  const app = createApp({
    config,
    verifier,
    limiter,
    authFailures: config.rateLimit.authFailures.enabled
      ? new AuthFailureLimiter(config.rateLimit.authFailures)
      : null,
    logger,
    metrics,
    ready: createReadinessCheck({ store, limiterRedis: limiterRedis.client }),
    onKeyExpired: createExpiryAuditor({ auditor: service }),
    onKeyInUrl: (candidates) => void onKeyInUrl(candidates),
  });

  const server = createGatewayServer(config, app);
  await listen(server, config.server.port, config.server.host);
  const adminServer = await startAdminServer(config, { service, metrics, logger }, server);
  const port = (server.address() as AddressInfo).port;
  const adminPort = adminServer ? (adminServer.address() as AddressInfo).port : null;
  logger.info(
    { port, adminPort, store: store.kind, routes: config.routes.map((r) => r.prefix) },
    'gateway listening',
  );
  const close = createCloser(config, {
    server,
    adminServer,
    app,
    store,
    limiter,
    limiterRedis,
    metrics,
    logger,
  });
  return { port, adminPort, config, store, service, metrics, logger, close };
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
): TierRateLimiter {
  return new TierRateLimiter({
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
): KeyVerifier {
  const cacheBy = childCache(metrics.cache);
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
  });
}

/**
 * Starts the admin API on its own port when `admin.enabled`, else returns null. When it cannot
 * listen, closes the already listening gateway server and rethrows.
 */
async function startAdminServer(
  config: Readonly<GatewayConfig>,
  deps: { service: AdminService; metrics: GatewayMetrics; logger: Logger },
  gatewayServer: Server,
): Promise<Server | null> {
  if (!config.admin.enabled) return null;
  const adminApp = createAdminApp({
    service: deps.service,
    token: config.admin.token ?? null,
    readMetrics: createMetricsReader(deps.metrics.registry),
    logger: deps.logger,
  });
  const adminServer = createHttpServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, adminApp);
  try {
    await listen(adminServer, config.admin.port, config.admin.host);
  } catch (err) {
    gatewayServer.close();
    throw err;
  }
  return adminServer;
}

/**
 * What `close()` stops, in order: servers (drained), proxy agents, limiter leases, store, own limiter
 * Redis, metrics.
 */
interface Closeable {
  server: Server;
  adminServer: Server | null;
  app: { closeAgents(): void };
  store: KeyStore;
  limiter: TierRateLimiter;
  limiterRedis: LimiterRedis;
  metrics: GatewayMetrics;
  logger: Logger;
}

/** The handle's `close()`: graceful, and idempotent (every call returns the same promise). */
function createCloser(config: Readonly<GatewayConfig>, parts: Closeable): () => Promise<void> {
  const { server, adminServer, app, store, limiter, limiterRedis, metrics, logger } = parts;
  let closing: Promise<void> | null = null;
  return function close() {
    closing ??= (async () => {
      await Promise.all([
        drain(server, config.server.shutdownTimeoutMs),
        adminServer ? drain(adminServer, 1000) : undefined,
      ]);
      app.closeAgents();
      // Unused leased quota goes back while the Redis client is still open.
      await limiter.close();
      await store.close();
      limiterRedis.own?.disconnect();
      metrics.registry.clear();
      logger.info('gateway stopped');
      logger.flush?.();
    })();
    return closing;
  };
}

/** The gateway's HTTP(S) server with the slow-client guards and Expect: 100-continue handling. */
function createGatewayServer(
  config: Readonly<GatewayConfig>,
  app: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const s = config.server;
  const options = {
    maxHeaderSize: s.maxHeaderSize,
    headersTimeout: s.headersTimeoutMs,
    requestTimeout: s.requestTimeoutMs,
    keepAliveTimeout: s.keepAliveTimeoutMs,
    // Node checks header/request timeouts on this interval (default 30 s): without it a slowloris
    // client could hold a socket for up to 30 s past headersTimeoutMs.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(s.headersTimeoutMs / 4))),
    // Never the lenient parser: smuggling shapes (CL+TE, bare LF...) must be refused by Node.
    insecureHTTPParser: false,
    requireHostHeader: true,
  };
  const server = s.tls
    ? createHttpsServer(
        { ...options, cert: readFileSync(s.tls.certFile), key: readFileSync(s.tls.keyFile) },
        app,
      )
    : createHttpServer(options, app);
  // Without this listener Node answers `100 Continue` by itself before we know who is calling.
  // The pipeline sends it after authentication and the rate limit (app.ts, forward).
  server.on('checkContinue', app);
  // Requests Node's parser refuses (smuggling shapes, bad bytes), oversized headers and slow
  // clients get the spec's error body too, and the connection is closed.
  // Answers written to the socket are gateway-made too: the full set of security headers (HSTS
  // when the gateway terminates TLS itself; a trusted X-Forwarded-Proto cannot be read here).
  const security = securityHeaderSet();
  const rawHeaders = s.tls && security.hsts ? [...security.common, security.hsts] : security.common;
  const rawWithAllow = [...rawHeaders, ['Allow', RAW_ALLOW] as const];
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const code = clientErrorCode(err);
    const headers = code === 'METHOD_NOT_ALLOWED' ? rawWithAllow : rawHeaders;
    // Write, then destroy: a half-closed socket could stay open while a slow client keeps sending.
    socket.end(rawErrorResponse(code, headers), () => socket.destroy());
  });
  // CONNECT never reaches the app: Node hands it to this event (without a listener it closes the
  // socket without a word). The gateway opens no tunnels: 405 in the spec's shape, then close.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    if (!socket.writable) return void socket.destroy();
    socket.end(rawErrorResponse('METHOD_NOT_ALLOWED', rawWithAllow), () => socket.destroy());
  });
  return server;
}

/** `Allow` of the 405s written to the socket: no route is known there, so the default list. */
const RAW_ALLOW = methodRuleOf({}).allow;

/** A method token followed by a space: a request line whose method Node's parser does not know. */
const UNKNOWN_METHOD_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32} /;

/** The registry code of a request Node's parser refused. */
function clientErrorCode(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): ErrorCode {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'HEADERS_TOO_LARGE';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return 'REQUEST_TIMEOUT';
    case 'HPE_INVALID_METHOD': {
      // A well-formed method Node does not know (`TRACK`, a lowercase `trace`): 405, like `TRACE`.
      // Anything else on the request line stays a malformed request.
      const line = err.rawPacket?.subarray(0, 34).toString('latin1') ?? '';
      return UNKNOWN_METHOD_LINE.test(line) ? 'METHOD_NOT_ALLOWED' : 'BAD_REQUEST';
    }
    default:
      return 'BAD_REQUEST';
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Stops accepting, lets in-flight requests finish up to `ms`, then cuts what remains. */
function drain(server: Server, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), ms);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

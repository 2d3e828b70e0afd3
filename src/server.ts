import { readFileSync } from 'node:fs';
import { LRUCache } from 'lru-cache';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createAdminApp, isLoopbackName } from './admin/router.js';
import { AdminService } from './admin/service.js';
import { hashApiKey, parseApiKey } from './auth/api-key.js';
import { KeyVerifier } from './auth/verify.js';
import { rawErrorResponse, safeMessage } from './errors.js';
import type { GatewayConfig } from './config/schema.js';
import { createApp } from './http/app.js';
import { createMetricsReader } from './observability/cluster-metrics.js';
import { createLogger, type Logger } from './observability/logger.js';
import { childCache, createMetrics, type GatewayMetrics } from './observability/metrics.js';
import { AuthFailureLimiter, TierRateLimiter } from './ratelimit/tier-limiter.js';
import { FileKeyStore } from './store/file-store.js';
import { MemoryKeyStore } from './store/memory-store.js';
import { createRedisClient, waitForReady, type RedisClient } from './redis/connection.js';
import { RedisKeyStore } from './store/redis-store.js';
import { isKeyActive, type KeyStore } from './store/types.js';

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

export interface StartOptions {
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
): Promise<{ store: KeyStore; redis?: RedisClient }> {
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  switch (config.store.type) {
    case 'memory':
      return { store: new MemoryKeyStore() };
    case 'file':
      return {
        store: new FileKeyStore({
          path: config.store.file.path,
          knownTiers: tiers,
          onReload: (r) => {
            if (r.ok) logger.info({ companies: r.companies, keys: r.keys }, 'key file reloaded');
            else logger.error({ problems: r.problems }, 'key file rejected; keeping the last good content');
          },
        }),
      };
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
 * Starts the gateway (and the admin API on its own port) from a validated config.
 * Throws on a config that cannot run (admin API on a public address without a token, bad TLS files,
 * a port in use).
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
  const built = opts.store ? { store: opts.store, redis: undefined } : await createStore(config, logger);
  const { store } = built;
  // The limiter shares the store's Redis, or (file-store sidecars) a Redis of its own.
  let limiterRedis: RedisClient | undefined = built.redis;
  let ownLimiterRedis: RedisClient | undefined;
  if (!limiterRedis && config.rateLimit.redisUrl) {
    ownLimiterRedis = limiterRedis = createRedisClient(
      { ...config.store.redis, url: config.rateLimit.redisUrl },
      'notify-gateway-limiter',
    );
    logRedisErrors(ownLimiterRedis, logger, 'rate-limit redis');
    if (!(await waitForReady(ownLimiterRedis, config.store.redis.connectTimeoutMs))) {
      logger.warn('the rate-limit Redis is not reachable yet; starting on the failure policy');
    }
  }

  const limiter = new TierRateLimiter({
    tiers: config.rateLimit.tiers,
    ...(limiterRedis ? { redis: limiterRedis } : {}),
    keyPrefix: config.store.redis.keyPrefix,
    failurePolicy: config.rateLimit.failurePolicy,
    onStoreError: () => metrics.storeErrors.inc({ op: 'rate_limit' }),
  });
  const cacheBy = childCache(metrics.cache);
  const verifier = new KeyVerifier({
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
  const service = new AdminService({
    store,
    tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
    onAudit: (entry) => logger.info({ audit: entry }, `audit ${entry.event}`),
  });

  const expiredSeen = new LRUCache<string, true>({ max: 10_000 });
  const keyFormat = { maxLength: config.keys.maxLength, acceptLegacy: config.keys.acceptLegacyFormat };
  const app = createApp({
    config,
    verifier,
    limiter,
    authFailures: config.rateLimit.authFailures.enabled
      ? new AuthFailureLimiter(config.rateLimit.authFailures)
      : null,
    logger,
    metrics,
    ready: async () => {
      const checks: Record<string, string> = {};
      try {
        await store.ping();
        checks.store = 'ok';
      } catch {
        checks.store = 'unavailable';
      }
      checks.rateLimiter = limiterRedis
        ? limiterRedis.status === 'ready'
          ? 'ok'
          : `redis ${limiterRedis.status}`
        : 'ok';
      return { ok: Object.values(checks).every((v) => v === 'ok'), checks };
    },
    onKeyExpired: (key) => {
      // One audit entry per key and instance: expiry has no writer to record it, so the first
      // gateway that refuses the key does.
      if (expiredSeen.has(key.id)) return;
      expiredSeen.set(key.id, true);
      void service.audit({
        event: 'key.expired',
        companyId: key.companyId,
        keyId: key.id,
        keyPrefix: key.prefix,
        actor: 'gateway',
        details: { expiresAt: key.expiresAt },
      });
    },
    onKeyInUrl: (candidates) => {
      // One store read for the first candidate that passes the format check, straight from the
      // store: a cache entry per URL-borne guess would let such requests push real keys out.
      const candidate = candidates.find((c) => c !== '' && parseApiKey(c, keyFormat).ok);
      if (candidate === undefined) return;
      void (async () => {
        const rec = await store.findKeyByHash(hashApiKey(candidate));
        if (rec && isKeyActive(rec, Date.now()))
          await service.markExposed(rec, config.keys.exposedKeys === 'revoke');
      })().catch((err: unknown) => logger.warn({ error: safeMessage(err) }, 'exposed-key handling failed'));
    },
  });

  const server = createGatewayServer(config, app);
  await listen(server, config.server.port, config.server.host);
  let adminServer: Server | null = null;
  if (config.admin.enabled) {
    const adminApp = createAdminApp({
      service,
      token: config.admin.token ?? null,
      readMetrics: createMetricsReader(metrics.registry),
      logger,
    });
    adminServer = createHttpServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, adminApp);
    try {
      await listen(adminServer, config.admin.port, config.admin.host);
    } catch (err) {
      server.close();
      throw err;
    }
  }
  const port = (server.address() as AddressInfo).port;
  const adminPort = adminServer ? (adminServer.address() as AddressInfo).port : null;
  logger.info(
    { port, adminPort, store: store.kind, routes: config.routes.map((r) => r.prefix) },
    'gateway listening',
  );

  let closing: Promise<void> | null = null;
  return {
    port,
    adminPort,
    config,
    store,
    service,
    metrics,
    logger,
    close() {
      closing ??= (async () => {
        await Promise.all([
          drain(server, config.server.shutdownTimeoutMs),
          adminServer ? drain(adminServer, 1000) : undefined,
        ]);
        app.closeAgents();
        await store.close();
        ownLimiterRedis?.disconnect();
        metrics.registry.clear();
        logger.info('gateway stopped');
        logger.flush?.();
      })();
      return closing;
    },
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
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const code =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 'HEADERS_TOO_LARGE'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'HPE_HEADERS_TIMEOUT'
          ? 'REQUEST_TIMEOUT'
          : 'BAD_REQUEST';
    // Write, then destroy: a half-closed socket could stay open while a slow client keeps sending.
    socket.end(rawErrorResponse(code), () => socket.destroy());
  });
  return server;
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

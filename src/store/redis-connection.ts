import { Redis, Cluster, type RedisOptions } from 'ioredis';
import type { GatewayConfig } from '../config/schema.js';

export type RedisClient = Redis | Cluster;

/**
 * Creates the ioredis client for single node, Sentinel or Cluster, with bounded behaviour when
 * Redis is down: every command has a timeout and nothing waits in an offline queue, so a request
 * never hangs on a dead or paused Redis (ioredis's defaults can wait ~70 s).
 */
export function createRedisClient(
  cfg: GatewayConfig['store']['redis'],
  name = 'notify-gateway',
): RedisClient {
  const base: RedisOptions = {
    connectionName: name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: cfg.commandTimeoutMs,
    connectTimeout: cfg.connectTimeoutMs,
    enableReadyCheck: true,
    // Reconnect forever, backing off to 1 s, so the gateway recovers by itself.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
    lazyConnect: false,
  };
  const url = new URL(cfg.url);
  const auth: RedisOptions = {
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:' ? {} : undefined,
  };
  if (cfg.cluster?.length) {
    return new Cluster(cfg.cluster, {
      enableOfflineQueue: false,
      enableReadyCheck: true,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
      redisOptions: { ...base, ...auth },
      slotsRefreshTimeout: cfg.connectTimeoutMs,
    });
  }
  if (cfg.sentinels?.length) {
    return new Redis({
      ...base,
      ...auth,
      sentinels: cfg.sentinels,
      name: cfg.sentinelName ?? 'mymaster',
      db: dbOf(url),
    });
  }
  return new Redis(cfg.url, base);
}

function dbOf(url: URL): number {
  const n = Number(url.pathname.slice(1));
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/** Resolves when the client is ready or after `ms` (whichever first); never rejects. */
export function waitForReady(client: RedisClient, ms: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    client.on('ready', onReady);
  });
}

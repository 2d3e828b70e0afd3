import { Redis, Cluster, type ClusterOptions, type Command, type RedisOptions } from 'ioredis';
import type { GatewayConfig } from '../config/schema.js';

/**
 * A client from `createRedisClient`: an ioredis single-node (or Sentinel) client or a Cluster
 * client. Both speak the same commands; code that needs one or the other checks `instanceof`.
 */
export type RedisClient = Redis | Cluster;

/**
 * Creates the ioredis client for single node, Sentinel or Cluster, with bounded behaviour when
 * Redis is down: every command has a timeout and nothing waits in an offline queue, so a request
 * never hangs on a dead or paused Redis (ioredis's defaults can wait ~70 s).
 *
 * Topology comes from config (see docs/scaling.md): `cluster: [{host, port}]` seed nodes for Redis
 * Cluster, else `sentinels: [{host, port}]` + `sentinelName` for Sentinel, else the single node of
 * `url`. Credentials (`redis://user:pw@...`), TLS (`rediss://`) and, outside Cluster, the database
 * number (`/2`) always come from `url`; with Sentinel or Cluster its host and port are not used.
 */
export function createRedisClient(
  cfg: GatewayConfig['store']['redis'],
  name = 'notify-gateway',
): RedisClient {
  const url = new URL(cfg.url);
  const auth: RedisOptions = {
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    tls: url.protocol === 'rediss:' ? {} : undefined,
  };
  const bounded: RedisOptions = {
    connectionName: name,
    commandTimeout: cfg.commandTimeoutMs,
    connectTimeout: cfg.connectTimeoutMs,
    maxRetriesPerRequest: 1,
    enableReadyCheck: true,
    enableAutoPipelining: false,
    // When ioredis drops a connection (failover announced, READONLY, dead subscriber) it ends the
    // socket and waits this long for the peer's FIN before destroying it, and reconnects only then.
    // A hung server never answers: the default 2 s would add 2 s to every such failover.
    disconnectTimeout: 200,
  };

  if (cfg.cluster?.length) {
    const options: ClusterOptions = {
      // Fail fast while the cluster as a whole is unreachable (the limiter falls back, auth serves
      // cached keys); the slot map is fetched again on MOVED, on failover and every 5 s.
      enableOfflineQueue: false,
      enableReadyCheck: true,
      scaleReads: 'master',
      enableAutoPipelining: false,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      maxRedirections: 16,
      slotsRefreshTimeout: cfg.connectTimeoutMs,
      slotsRefreshInterval: 5000,
      // Per-node connections. ioredis forces retryStrategy null and an offline queue on them (a lost
      // node is replaced through a slot refresh), so only these options matter here.
      redisOptions: { ...bounded, ...auth },
    };
    return boundCommands(new Cluster(cfg.cluster, options), cfg.commandTimeoutMs);
  }

  const base: RedisOptions = {
    ...bounded,
    ...auth,
    enableOfflineQueue: false,
    // Reconnect forever, backing off to 1 s, so the gateway recovers by itself.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1000),
    // A node demoted to replica (failover behind a DNS name, or a Sentinel switch we learnt of late)
    // answers writes with READONLY: reconnect, which finds the current master.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
    lazyConnect: false,
  };
  if (cfg.sentinels?.length) {
    return new Redis({
      ...base,
      sentinels: cfg.sentinels,
      name: cfg.sentinelName ?? 'mymaster',
      role: 'master',
      db: dbOf(url),
      // Ask the next sentinel at once, then back off to 1 s; never give up.
      sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
      sentinelCommandTimeout: cfg.commandTimeoutMs,
      // Subscribe to +switch-master on the sentinels and reconnect as soon as a failover is
      // announced, instead of writing to the old master until it is demoted (writes there are lost).
      failoverDetector: true,
      // With rediss://, the data nodes use TLS too (Sentinel itself is reached in plain TCP).
      enableTLSForSentinelMode: url.protocol === 'rediss:',
    });
  }
  return new Redis(cfg.url, base);
}

/**
 * ioredis arms `commandTimeout` only when a command reaches a node connection; in a Cluster a command
 * can first spend up to `maxRedirections` × `retryDelayOnFailover` (1.6 s) being retried while a node
 * is down. Arm the timer when the command is issued instead, so `commandTimeoutMs` bounds each
 * command end to end in every topology.
 *
 * A hung node (paused, partitioned) closes no connection and sends no MOVED, so ioredis would keep
 * sending its slots' commands there after a replica took over, until the periodic slot refresh. A
 * timeout therefore also triggers a slot refresh (at most one per second).
 */
function boundCommands(cluster: Cluster, ms: number): Cluster {
  const send = cluster.sendCommand.bind(cluster) as (c: Command, ...r: unknown[]) => unknown;
  let lastRefresh = 0;
  const onError = (err: unknown) => {
    if (!(err instanceof Error) || err.message !== 'Command timed out') return;
    const now = Date.now();
    if (now - lastRefresh < 1000 || cluster.status !== 'ready') return;
    lastRefresh = now;
    cluster.refreshSlotsCache();
  };
  cluster.sendCommand = (command: Command, ...rest: unknown[]) => {
    command.setTimeout(ms);
    command.promise.catch(onError);
    return send(command, ...rest);
  };
  return cluster;
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

import { userInfo } from 'node:os';
import { AdminService } from '../admin/service.js';
import type { GatewayConfig } from '../config/schema.js';
import { maskUrlCredentials } from '../redact.js';
import type { KeyStore } from '../store/types.js';
import { EXIT_USAGE, fail, type CliContext, type CliIo } from './io.js';
import { loadConfigOrFail } from './load-config.js';
import type { StoreSession } from './session.js';

/**
 * A session on the configured store, as the management commands use it: the admin service (the
 * same validation, cap and audit as the admin API) over the key file or Redis. Root: no role
 * applies, and the audit trail names the OS user (`cli:<user>`). Exit 2 for an invalid config or
 * the memory store (it lives inside a running gateway), exit 1 when the store cannot be opened or
 * Redis does not answer.
 */
export async function openStoreSession(ctx: CliContext): Promise<StoreSession> {
  const config = loadConfigOrFail(ctx);
  if (config.store.type === 'memory') {
    fail(
      'the memory store lives inside a running gateway; manage it through its admin API, or use REDIS_URL',
      EXIT_USAGE,
    );
  }
  const store = await openStore(config).catch((err: Error) => fail(err.message));
  if (config.store.type === 'redis') {
    try {
      await store.ping();
    } catch {
      await store.close();
      fail(`cannot reach Redis at ${maskUrlCredentials(config.store.redis.url)}`);
    }
  }
  const service = new AdminService({
    store,
    tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
    routes: config.routes,
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
  });
  return {
    via: config.store.type,
    config,
    companies: service,
    keys: service,
    audit: service,
    service,
    store,
    actor: cliActor(ctx.io),
    close: () => store.close(),
  };
}

/**
 * The file or Redis store as a short-lived client: no metrics, no reload reports, no logs (what
 * `createStore` in `server.ts` adds for a running gateway), and only the chosen store's code is
 * loaded (ioredis is not, for the file store). A Redis that does not answer within
 * `connectTimeoutMs` is found by the caller's PING.
 */
export async function openStore(config: Readonly<GatewayConfig>): Promise<KeyStore> {
  if (config.store.type === 'file') {
    const { FileKeyStore } = await import('../store/file-store.js');
    return new FileKeyStore({
      path: config.store.file.path,
      knownTiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
      knownRoutes: config.routes,
    });
  }
  const [{ createRedisClient, waitForReady }, { RedisKeyStore }] = await Promise.all([
    import('../redis/connection.js'),
    import('../store/redis-store.js'),
  ]);
  const client = createRedisClient(config.store.redis, 'notify-gateway');
  // Connection errors surface as the PING's failure; an unhandled 'error' event would crash instead.
  client.on('error', () => undefined);
  await waitForReady(client, config.store.redis.connectTimeoutMs);
  // One connection: the subscriber only serves `subscribe()` (a gateway's caches), which a
  // command never calls; the changes it makes are published on `client`.
  return new RedisKeyStore(client, client, config.store.redis.keyPrefix);
}

/** Who the audit trail names for CLI changes: `cli:<os user>`. */
function cliActor(io: CliIo): string {
  let user: string;
  try {
    user = userInfo().username || 'unknown';
  } catch {
    user = io.env.USER ?? 'unknown';
  }
  return `cli:${user}`;
}

/** The answer of a readiness check: `checks` names each dependency and its state (`'ok'` or why not). */
export interface Readiness {
  ok: boolean;
  checks: Record<string, string>;
}

export interface ReadinessCheckOptions {
  /** The key store: ready when `ping()` resolves. */
  store: { ping(): Promise<void> };
  /** The limiter's Redis client (ioredis), when the limiter has one; read at every check. */
  limiterRedis?: { readonly status: string } | undefined;
}

/**
 * Builds the readiness check behind `/readyz`. It reports `store` (`ok` or `unavailable`) and
 * `rateLimiter` (`ok`, or `redis <status>` while the limiter's Redis connection is not ready), and
 * is `ok` only when every check is. Never rejects: a failing `ping` is a check result.
 *
 * @example
 * const ready = createReadinessCheck({ store, limiterRedis });
 * await ready(); // { ok: true, checks: { store: 'ok', rateLimiter: 'ok' } }
 */
export function createReadinessCheck(opts: ReadinessCheckOptions): () => Promise<Readiness> {
  const { store, limiterRedis } = opts;
  return async function ready() {
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
  };
}

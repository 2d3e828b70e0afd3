/**
 * What `/readyz` says: `ready` and `degraded` are 200 (the instance serves; `degraded` lists the
 * checks that are not `ok`), `starting`, `draining` and `not ready` are 503.
 */
export type ReadinessStatus = 'ready' | 'degraded' | 'starting' | 'draining' | 'not ready';

/** The answer of a readiness check: `checks` names each dependency and its state (`'ok'` or why not). */
export interface Readiness {
  /** Whether the instance should receive traffic (`/readyz` 200). */
  ok: boolean;
  status: ReadinessStatus;
  checks: Record<string, string>;
  /** The checks that are not `ok` (empty when all are). */
  degraded: string[];
}

/** The check behind `/readyz`, and the switch that starts the drain. */
export interface ReadinessCheck {
  (): Promise<Readiness>;
  /** From now on the check answers `draining` (not ready), whatever its dependencies say. */
  drain(): void;
}

export interface ReadinessCheckOptions {
  /** The key store: ready when `ping()` resolves. */
  store: { ping(): Promise<void> };
  /**
   * The limiter's Redis client (ioredis), when the limiter has one; checked at every check: its
   * connection status, and a `PING` (bounded by the client's command timeout) when it has `ping`,
   * since a hung Redis keeps its connection `ready` while every command times out.
   */
  limiterRedis?: { readonly status: string; ping?(): Promise<unknown> } | undefined;
  /**
   * The limiter's failure policy. Under `closed` every request is refused while the limiter's
   * Redis is down, so the instance cannot serve: `not ready`. Otherwise that is `degraded`.
   */
  failurePolicy?: 'insurance' | 'open' | 'closed';
  /**
   * Whether config and keys have loaded once (default: yes). Until it returns true, or a store
   * ping succeeds, the check answers `starting`: with nothing cached, nothing can be served.
   */
  started?: () => boolean;
  /** The routes with no healthy upstream target: `degraded` (panic mode still serves), never unready. */
  upstreams?: () => string[];
}

/**
 * Builds the readiness check behind `/readyz`. It reports `store` (`ok` or `unavailable`) and
 * `rateLimiter` (`ok`, or `redis <status>` while the limiter's Redis connection is not ready).
 * A store outage after the first load is `degraded` (cached keys keep being served), and so is the
 * limiter's Redis under the `insurance` or `open` policy; under `closed` it is `not ready`. Before
 * the first load it answers `starting`, after `drain()` `draining`. Never rejects: a failing `ping`
 * is a check result.
 *
 * @example
 * const ready = createReadinessCheck({ store, limiterRedis, failurePolicy: 'insurance' });
 * await ready(); // { ok: true, status: 'ready', checks: { store: 'ok', rateLimiter: 'ok' }, degraded: [] }
 * ready.drain(); // on SIGTERM
 */
export function createReadinessCheck(opts: ReadinessCheckOptions): ReadinessCheck {
  const { store, limiterRedis, failurePolicy = 'insurance', started = () => true, upstreams } = opts;
  let draining = false;
  let loaded = false;
  const check = async function ready(): Promise<Readiness> {
    const checks: Record<string, string> = {};
    try {
      await store.ping();
      checks.store = 'ok';
      loaded = true;
    } catch {
      checks.store = 'unavailable';
    }
    loaded ||= started();
    let limiterOk = !limiterRedis || limiterRedis.status === 'ready';
    checks.rateLimiter = limiterOk ? 'ok' : `redis ${limiterRedis!.status}`;
    if (limiterOk && limiterRedis?.ping) {
      try {
        await limiterRedis.ping();
      } catch {
        limiterOk = false;
        checks.rateLimiter = 'redis unavailable';
      }
    }
    // Named only while a route has no healthy target, so the usual answer stays as it was.
    const down = upstreams?.() ?? [];
    if (down.length > 0) checks.upstreams = `no healthy target: ${down.join(', ')}`;
    const degraded = Object.keys(checks).filter((k) => checks[k] !== 'ok');
    const status: ReadinessStatus = draining
      ? 'draining'
      : !loaded
        ? 'starting'
        : !limiterOk && failurePolicy === 'closed'
          ? 'not ready'
          : degraded.length > 0
            ? 'degraded'
            : 'ready';
    return { ok: status === 'ready' || status === 'degraded', status, checks, degraded };
  };
  return Object.assign(check, {
    drain() {
      draining = true;
    },
  });
}

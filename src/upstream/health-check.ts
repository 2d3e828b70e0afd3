import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PoolTarget, UpstreamPool } from './pool.js';

/** `routes[].healthCheck`. */
export interface HealthCheckOptions {
  path: string;
  intervalMs: number;
  timeoutMs: number;
  expectedStatuses: readonly number[];
}

/** One check of one target: resolves true when it passed; never rejects. */
export type HealthProbe = (target: PoolTarget, opts: HealthCheckOptions) => Promise<boolean>;

/**
 * Active health checks of a pool: every `intervalMs`, a probe of each target (a GET of `path` by
 * default; passes on an expected status within `timeoutMs`), its result to `pool.onCheck` (which
 * applies the thresholds). The timers are unref'd; the returned function stops them.
 *
 * @example
 * const stop = startHealthChecks(pool, route.healthCheck);
 */
export function startHealthChecks(
  pool: UpstreamPool,
  opts: HealthCheckOptions,
  probe: HealthProbe = probeHttp,
): () => void {
  let stopped = false;
  const running = new Set<PoolTarget>();
  const round = () => {
    for (const t of pool.targets) {
      if (running.has(t)) continue; // a slow probe is not stacked
      running.add(t);
      void probe(t, opts).then((passed) => {
        running.delete(t);
        if (!stopped) pool.onCheck(t, passed);
      });
    }
  };
  const timer = setInterval(round, opts.intervalMs);
  timer.unref();
  setImmediate(round).unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** A GET of the check path on its own connection (not the pooled ones), bounded by `timeoutMs`. */
export function probeHttp(target: PoolTarget, opts: HealthCheckOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const https = target.url.protocol === 'https:';
    const req = (https ? httpsRequest : httpRequest)(
      {
        hostname: target.url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: target.url.port || (https ? 443 : 80),
        path: opts.path,
        method: 'GET',
        headers: { host: target.hostHeader, 'user-agent': 'notify-gateway-health-check' },
        agent: false,
        timeout: opts.timeoutMs,
      },
      (res) => {
        res.resume();
        resolve(opts.expectedStatuses.includes(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.on('close', () => resolve(false));
    req.end();
  });
}

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The gateway's own Prometheus registry. Labels are bounded: route prefixes, status codes, reasons
 * and tiers from config — never a key, a hash or (unless enabled) a company id.
 */
export interface GatewayMetrics {
  registry: Registry;
  requests: Counter<'route' | 'status'>;
  /** By route prefix and status class (`2xx`...`5xx`, `aborted`): bounded labels. */
  duration: Histogram<'route' | 'status_class'>;
  upstreamDuration: Histogram<'route'>;
  authFailures: Counter<'reason'>;
  rateLimited: Counter<'tier' | 'company'>;
  storeErrors: Counter<'op'>;
  cache: Counter<'kind' | 'result'>;
  limiterFallback: Counter<'policy'>;
  /** Requests refused by a scope: by route prefix and whose scope (`company` or `key`). */
  scopeDenied: Counter<'route' | 'reason'>;
  inflight: Gauge;
  /** Requests refused with 503 OVERLOADED, by reason (`in_flight`, `event_loop_delay`). */
  overloadRefused: Counter<'reason'>;
  /** The earliest `notAfter` of each TLS listener's certificate chain (Unix seconds). */
  tlsExpiry: Gauge<'listener'>;
}

/** What `gateway_build_info` says: the package version, and the commit when known. */
export interface BuildInfo {
  version: string;
  /** A git commit (`GATEWAY_COMMIT`), or absent. */
  commit?: string | undefined;
}

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Creates a fresh registry with the gateway's metrics, `gateway_build_info`, and the process and
 * Node metrics under prom-client's standard names (`process_cpu_seconds_total`,
 * `nodejs_heap_size_used_bytes`, ..., no prefix: stock dashboards look for exactly these) unless
 * turned off.
 */
export function createMetrics(
  opts: { processMetrics: boolean; build?: BuildInfo } = { processMetrics: true },
): GatewayMetrics {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  createBuildInfo(registry, opts.build ?? { version: 'unknown' });
  return {
    registry,
    requests: new Counter({
      name: 'gateway_requests_total',
      help: 'Requests answered, by route prefix and status code',
      labelNames: ['route', 'status'],
      registers,
    }),
    duration: new Histogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time from request to response end, by route prefix and status class (2xx, 4xx, 5xx, aborted)',
      labelNames: ['route', 'status_class'],
      buckets: BUCKETS,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: 'gateway_upstream_duration_seconds',
      help: 'Time from forwarding to upstream response headers, by route prefix',
      labelNames: ['route'],
      buckets: BUCKETS,
      registers,
    }),
    authFailures: new Counter({
      name: 'gateway_auth_failures_total',
      help: 'Refused authentications by reason',
      labelNames: ['reason'],
      registers,
    }),
    rateLimited: new Counter({
      name: 'gateway_rate_limited_total',
      help: 'Requests refused with 429 by tier (company only when metrics.companyLabel is on)',
      labelNames: ['tier', 'company'],
      registers,
    }),
    storeErrors: new Counter({
      name: 'gateway_store_errors_total',
      help: 'Failed key-store or limiter operations, by operation',
      labelNames: ['op'],
      registers,
    }),
    cache: new Counter({
      name: 'gateway_cache_lookups_total',
      help: 'In-process cache lookups by record kind and result (hit, miss, stale)',
      labelNames: ['kind', 'result'],
      registers,
    }),
    limiterFallback: new Counter({
      name: 'gateway_rate_limiter_fallback_total',
      help: 'Requests decided by the failure policy while the shared limiter was unreachable',
      labelNames: ['policy'],
      registers,
    }),
    scopeDenied: new Counter({
      name: 'gateway_scope_denied_total',
      help: 'Requests refused with 403 SCOPE_DENIED, by route prefix and whose scope refused (company or key)',
      labelNames: ['route', 'reason'],
      registers,
    }),
    inflight: new Gauge({ name: 'gateway_inflight_requests', help: 'Requests being served', registers }),
    overloadRefused: createOverloadRefused(registers),
    tlsExpiry: new Gauge({
      name: 'gateway_tls_certificate_expiry_timestamp_seconds',
      help: "When the TLS listener's certificate chain stops being valid (the earliest notAfter), Unix seconds",
      labelNames: ['listener'],
      // Under --workers every worker serves the same files: the earliest, not the sum.
      aggregator: 'min',
      registers,
    }),
  };
}

function createOverloadRefused(registers: Registry[]): Counter<'reason'> {
  return new Counter({
    name: 'gateway_overload_refused_total',
    help: 'Requests refused with 503 OVERLOADED, by reason (in_flight, event_loop_delay)',
    labelNames: ['reason'],
    registers,
  });
}

/** `gateway_build_info{version, node_version, commit}` = 1 (commit `unknown` when not known). */
function createBuildInfo(registry: Registry, build: BuildInfo): void {
  const info = new Gauge({
    name: 'gateway_build_info',
    help: 'Always 1; the labels say which build runs: package version, Node.js version, git commit',
    labelNames: ['version', 'node_version', 'commit'],
    // One per process: under --workers the aggregate must stay 1, not the number of workers.
    aggregator: 'max',
    registers: [registry],
  });
  info.labels(build.version, process.version, build.commit || 'unknown').set(1);
}

/** The status class label of an answer's status: `2xx`...`5xx`, or `aborted` (status 0). */
export function statusClass(status: number): string {
  return STATUS_CLASSES[Math.floor(status / 100)] ?? 'aborted';
}
const STATUS_CLASSES: readonly string[] = ['aborted', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** The file store's reload metrics, registered only when the file store is in use. */
export interface KeyFileMetrics {
  reloads: Counter<'result'>;
  lastReloadSuccess: Gauge;
  revocationsUndone: Counter;
}

/**
 * Registers the key-file metrics on `registry`: reloads by result (`ok`, `rejected`), whether the
 * last (re)load applied (1) or was rejected (0), and revocations a reload dropped or postponed.
 * Separate from {@link createMetrics} so gateways on other stores do not export a `0` that an
 * alert on the gauge would take for a broken file.
 */
export function createKeyFileMetrics(registry: Registry): KeyFileMetrics {
  const registers = [registry];
  const reloads = new Counter({
    name: 'gateway_key_file_reloads_total',
    help: 'Key file reloads by result: ok (applied) or rejected (broken file, last good content kept)',
    labelNames: ['result'],
    registers,
  });
  // Both series exist from the start, so `increase()` sees the first rejection.
  reloads.labels('ok').inc(0);
  reloads.labels('rejected').inc(0);
  return {
    reloads,
    lastReloadSuccess: new Gauge({
      name: 'gateway_key_file_last_reload_success',
      help: '1 when the last key file (re)load applied, 0 when it was rejected',
      registers,
    }),
    revocationsUndone: new Counter({
      name: 'gateway_key_file_revocations_undone_total',
      help: 'Keys whose revokedAt a key file reload removed or moved later (applied, and logged as a warning)',
      registers,
    }),
  };
}

/**
 * Label children resolved once per label values: prom-client hashes a label object on every
 * `inc({...})`/`observe({...})` otherwise, which is per-request work on the hot path. Label values
 * must stay bounded (they are here: routes, statuses, reasons, tiers from config).
 *
 * @example
 * const requestsBy = childCache(metrics.requests);
 * requestsBy(route, '200').inc();
 */
export function childCache<C>(metric: { labels(...values: string[]): C }): (...values: string[]) => C {
  const children = new Map<string, C>();
  return (...values) => {
    const k = values.join('\u0000');
    let c = children.get(k);
    if (c === undefined) children.set(k, (c = metric.labels(...values)));
    return c;
  };
}

/**
 * Label children by route and status, resolved once per pair and then found with two map lookups
 * and no allocation (no label string is built per request). `label` turns the status into the
 * metric's second label value (`String` for the status itself, `statusClass` for its class).
 *
 * @example
 * const durationBy = routeStatusCache(metrics.duration, statusClass);
 * durationBy('/notify/v1', 204).observe(0.012);
 */
export function routeStatusCache<C>(
  metric: { labels(...values: string[]): C },
  label: (status: number) => string,
): (route: string, status: number) => C {
  const byRoute = new Map<string, Map<number, C>>();
  return (route, status) => {
    let byStatus = byRoute.get(route);
    if (byStatus === undefined) byRoute.set(route, (byStatus = new Map()));
    let c = byStatus.get(status);
    if (c === undefined) byStatus.set(status, (c = metric.labels(route, label(status))));
    return c;
  };
}

/** `gateway_usage_flushes_total{result}`: usage flushes (one pipeline each) by result; no company label. */
export function createUsageMetrics(registry: Registry): { flushes: Counter<'result'> } {
  const flushes = new Counter({
    name: 'gateway_usage_flushes_total',
    help: 'Usage counter flushes by result: ok, or error (the counts are kept and retried with the next flush)',
    labelNames: ['result'],
    registers: [registry],
  });
  flushes.labels('ok').inc(0);
  flushes.labels('error').inc(0);
  return { flushes };
}

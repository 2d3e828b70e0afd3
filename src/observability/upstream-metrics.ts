import { Counter, Gauge, type Registry } from 'prom-client';

/** The upstream pools' metrics (docs/upstreams.md); labels are route prefixes and target URLs from config or DNS. */
export interface UpstreamMetrics {
  /** Attempts by route, target and result: status class (`2xx`...`5xx`) or failure (`connect`, `headers-timeout`, ...). */
  attempts: Counter<'route' | 'target' | 'result'>;
  retries: Counter<'route'>;
  retriesRefused: Counter<'route'>;
  ejections: Counter<'route' | 'target'>;
  busy: Counter<'route'>;
  timeouts: Counter<'route' | 'phase'>;
  noHealthy: Counter<'route' | 'mode'>;
  healthy: Gauge<'route' | 'target'>;
}

const UPSTREAM_METRIC_NAMES = [
  'gateway_upstream_requests_total',
  'gateway_upstream_retries_total',
  'gateway_upstream_retries_refused_total',
  'gateway_upstream_ejections_total',
  'gateway_upstream_busy_total',
  'gateway_upstream_timeouts_total',
  'gateway_upstream_no_healthy_total',
  'gateway_upstream_target_healthy',
];

/**
 * Registers the upstream metrics on `registry`. `healthy` reads `health()` at each scrape: 1 for a
 * healthy target, 0 for an ejected or unhealthy one (credentials in target URLs are masked by the
 * caller).
 *
 * @example
 * const m = createUpstreamMetrics(metrics.registry, () => [{ route: '/a', target: 'http://b/', healthy: true }]);
 */
export function createUpstreamMetrics(
  registry: Registry,
  health: () => { route: string; target: string; healthy: boolean }[],
): UpstreamMetrics {
  const registers = [registry];
  // A second app on the same registry (tests, embedding) takes the names over.
  for (const name of UPSTREAM_METRIC_NAMES) registry.removeSingleMetric(name);
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Counter<L>({ name, help, labelNames, registers });
  return {
    attempts: counter(
      'gateway_upstream_requests_total',
      'Attempts sent to upstream targets, by route, target and result (status class, or what failed)',
      ['route', 'target', 'result'],
    ),
    retries: counter('gateway_upstream_retries_total', 'Retries on another target, by route', ['route']),
    retriesRefused: counter(
      'gateway_upstream_retries_refused_total',
      'Retries the retry budget refused, by route',
      ['route'],
    ),
    ejections: counter('gateway_upstream_ejections_total', 'Targets ejected by outlier detection', [
      'route',
      'target',
    ]),
    busy: counter(
      'gateway_upstream_busy_total',
      'Requests refused by the bulkhead (503 UPSTREAM_BUSY), by route',
      ['route'],
    ),
    timeouts: counter(
      'gateway_upstream_timeouts_total',
      'Upstream timeouts by route and phase (connect, headers, idle, total)',
      ['route', 'phase'],
    ),
    noHealthy: counter(
      'gateway_upstream_no_healthy_total',
      'Times a route found no healthy target, by route and mode (panic: tried all; refuse: 503)',
      ['route', 'mode'],
    ),
    healthy: new Gauge({
      name: 'gateway_upstream_target_healthy',
      help: '1 when the target is healthy, 0 when ejected or failing its health checks',
      labelNames: ['route', 'target'],
      registers,
      collect() {
        this.reset();
        for (const h of health()) this.labels(h.route, h.target).set(h.healthy ? 1 : 0);
      },
    }),
  };
}

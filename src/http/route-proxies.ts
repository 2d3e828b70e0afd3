import { Agent as HttpAgent, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { UpstreamMetrics } from '../observability/upstream-metrics.js';
import { statusClass } from '../observability/metrics.js';
import { createRouteProxy, type ProxyObserver, type SecurityHeadersMode } from '../proxy/route-proxy.js';
import { maskUrlCredentials } from '../redact.js';
import { signGatewayRequest } from '../signing.js';
import type { BalancingKind } from '../upstream/balancer.js';
import { Bulkhead } from '../upstream/bulkhead.js';
import { startHealthChecks } from '../upstream/health-check.js';
import { startResolving } from '../upstream/resolve.js';
import { UpstreamPool, type PoolEvent, type TargetView } from '../upstream/pool.js';
import { RetryBudget } from '../upstream/retry-budget.js';
import '../request-state.js';

export interface RouteProxies {
  /** Each route's proxy by route prefix. */
  proxies: Map<string, ReturnType<typeof createRouteProxy>>;
  /** Each route's pool of targets: health, the admin view, readiness. */
  upstreams: Upstreams;
  /** Destroys the keep-alive agents' pooled sockets and stops the health checks (shutdown). */
  closeAgents(): void;
}

/** The routes' pools, as the admin API, readiness and metrics see them. */
export interface Upstreams {
  pools: ReadonlyMap<string, UpstreamPool>;
  /** Every route with its balancing and targets (`GET /admin/v1/upstreams`). */
  view(): {
    route: string;
    balancing: BalancingKind;
    whenNoneHealthy: 'panic' | 'refuse';
    targets: TargetView[];
  }[];
  /** The routes with no healthy target (readiness `degraded`). */
  withoutHealthyTarget(): string[];
}

export interface RouteProxiesOptions {
  routes: GatewayConfig['routes'];
  upstream: Pick<GatewayConfig['upstream'], 'maxSockets' | 'keepAliveMs' | 'timeoutMs' | 'resolveIntervalMs'>;
  /** 0 = no limit; enforced on streamed bodies by the proxy. */
  bodyLimitBytes: number;
  /** Sign each request as it leaves; `null` = no signature. */
  signing: { secret: string; header: string } | null;
  /** The upstream answered with headers after `seconds`. */
  onUpstreamResponse: (req: IncomingMessage, seconds: number) => void;
  /** The gateway's security headers on proxied answers (`securityHeaders.proxied`, their names). */
  securityHeaders: { mode: SecurityHeadersMode; names: readonly string[] };
  /** Counters of the pools; absent in tests that do not read them. */
  metrics?: UpstreamMetrics;
  /** Ejections and routes without a healthy target are logged as warnings. */
  logger?: Pick<Logger, 'warn' | 'info'>;
}

/**
 * One proxy per route over its pool of targets (balancing, ejection, health checks, retry budget,
 * bulkhead, as the route says) and two shared keep-alive agents (HTTP and HTTPS), signing requests
 * on their way out when signing is on.
 *
 * @example
 * const { proxies, upstreams, closeAgents } = createRouteProxies({ routes, upstream, bodyLimitBytes, signing: null, onUpstreamResponse, securityHeaders });
 */
export function createRouteProxies(opts: RouteProxiesOptions): RouteProxies {
  const agentOptions = {
    keepAlive: true,
    maxSockets: opts.upstream.maxSockets,
    keepAliveMsecs: opts.upstream.keepAliveMs,
  };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent(agentOptions);
  const signProxyRequest = opts.signing ? createProxyRequestSigner(opts.signing) : null;
  const pools = new Map<string, UpstreamPool>();
  const stops: (() => void)[] = [];
  const proxies = new Map(
    opts.routes.map((r) => {
      const pool = createPool(r, opts);
      pools.set(r.prefix, pool);
      if (r.healthCheck) stops.push(startHealthChecks(pool, r.healthCheck));
      stops.push(
        startResolving(pool, r.targets, {
          intervalMs: opts.upstream.resolveIntervalMs,
          onError: (url, err) =>
            opts.logger?.warn(
              { route: r.prefix, target: maskUrlCredentials(url), err: String(err) },
              'upstream target did not resolve',
            ),
        }),
      );
      const proxy = createRouteProxy({
        pool,
        timeoutMs: r.timeoutMs ?? opts.upstream.timeoutMs,
        timeouts: { ...r.timeouts },
        retries: {
          attempts: r.retries.attempts,
          idempotentMethods: r.retries.idempotentMethods,
          budget: new RetryBudget(r.retries.budget),
        },
        ...(r.maxInFlight && { bulkhead: new Bulkhead(r.maxInFlight) }),
        bodyLimitBytes: opts.bodyLimitBytes,
        agent: httpAgent,
        httpsAgent,
        onUpstreamResponse: opts.onUpstreamResponse,
        securityHeaders: opts.securityHeaders,
        ...(opts.metrics && { observe: createObserver(opts.metrics) }),
        // Signed here, on the request as it leaves: proxyReq.path is what the upstream receives.
        ...(signProxyRequest ? { onProxyReq: signProxyRequest } : {}),
      });
      return [r.prefix, proxy] as const;
    }),
  );
  return {
    proxies,
    upstreams: createUpstreams(opts.routes, pools),
    closeAgents() {
      for (const stop of stops) stop();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

function createPool(r: GatewayConfig['routes'][number], opts: RouteProxiesOptions): UpstreamPool {
  return new UpstreamPool({
    targets: r.targets,
    balancing: r.balancing,
    outlier: r.outlier,
    whenNoneHealthy: r.whenNoneHealthy,
    ...(r.healthCheck && {
      healthyThreshold: r.healthCheck.healthyThreshold,
      unhealthyThreshold: r.healthCheck.unhealthyThreshold,
    }),
    onEvent: (e) => onPoolEvent(r.prefix, e, opts),
  });
}

/** Ejections and health changes are logged and counted; a route without a healthy target too. */
function onPoolEvent(route: string, e: PoolEvent, opts: RouteProxiesOptions): void {
  const m = opts.metrics;
  const log = opts.logger;
  if (e.kind === 'ejected') {
    const target = maskUrlCredentials(e.target.id);
    m?.ejections.labels(route, target).inc();
    log?.warn(
      { route, target, forMs: e.forMs, ejections: e.target.ejections, lastError: e.target.lastError },
      'upstream target ejected',
    );
  } else if (e.kind === 'none-healthy') {
    m?.noHealthy.labels(route, e.mode).inc();
    if (e.first) log?.warn({ route, mode: e.mode }, 'no healthy upstream target');
  } else {
    log?.info(
      { route, target: maskUrlCredentials(e.target.id), healthy: e.healthy },
      'upstream target health check changed',
    );
  }
}

function createObserver(m: UpstreamMetrics): ProxyObserver {
  return {
    attempt(req, target, status) {
      const result = typeof status === 'number' ? statusClass(status) : status;
      m.attempts.labels(req.gw.route, maskUrlCredentials(target.id), result).inc();
    },
    retry(req, granted) {
      (granted ? m.retries : m.retriesRefused).labels(req.gw.route).inc();
    },
    timeout(req, phase) {
      m.timeouts.labels(req.gw.route, phase).inc();
    },
    busy(req) {
      m.busy.labels(req.gw.route).inc();
    },
  };
}

function createUpstreams(routes: GatewayConfig['routes'], pools: Map<string, UpstreamPool>): Upstreams {
  return {
    pools,
    view: () =>
      routes.map((r) => ({
        route: r.prefix,
        balancing: r.balancing,
        whenNoneHealthy: r.whenNoneHealthy,
        targets: pools.get(r.prefix)!.view(),
      })),
    withoutHealthyTarget: () => [...pools].filter(([, p]) => p.healthyCount() === 0).map(([route]) => route),
  };
}

/** Sets the gateway signature header on an outgoing request; needs `req.gw` with key and company. */
function createProxyRequestSigner(signing: { secret: string; header: string }) {
  return function signProxyRequest(proxyReq: ClientRequest, req: IncomingMessage): void {
    const st = req.gw;
    proxyReq.setHeader(
      signing.header,
      signGatewayRequest(signing.secret, {
        method: proxyReq.method,
        target: proxyReq.path,
        companyId: st.company!.id,
        keyId: st.key!.id,
        tier: st.company!.tier,
      }),
    );
  };
}

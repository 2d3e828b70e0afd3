import type { IncomingMessage } from 'node:http';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { KeyVerifier } from '../auth/verify.js';
import type { GatewayConfig } from '../config/schema.js';
import type { KeyRecord } from '../store/types.js';
import type { RequestState } from '../request-state.js';
import { childCache, type GatewayMetrics } from '../observability/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import { createKeyMatcherOf } from '../guards/key-material.js';
import { createUrlKeyGuard } from '../guards/url-key-guard.js';
import { createRouteMatcher } from '../proxy/routes.js';
import type { AuthFailureLimiter, TierRateLimiter } from '../ratelimit/tier-limiter.js';
import { createKeyInUrlNotes } from './key-in-url.js';
import { runInOrder } from './pipeline.js';
import { createUpstreamMetrics } from '../observability/upstream-metrics.js';
import { createRouteProxies, type RouteProxies, type Upstreams } from './route-proxies.js';
import { createAuthenticate } from './steps/authenticate.js';
import { createBodyLimit } from './steps/body-limit.js';
import { createErrorHandler } from './steps/error-handler.js';
import { createForward } from './steps/forward.js';
import { createMessageGuard } from './steps/message-guard.js';
import { createMethodOverrideBody } from './steps/method-override-body.js';
import { createNotFound } from './steps/not-found.js';
import { createOwnEndpoints } from './steps/own-endpoints.js';
import { createOverloadGuard } from './steps/overload-guard.js';
import { createPresentedKeyInUrl } from './steps/presented-key-in-url.js';
import { createRateLimit } from './steps/rate-limit.js';
import { createScopeCheck } from './steps/scope-check.js';
import { createRequestContext } from './steps/request-context.js';
import { createRouteMatch } from './steps/route-match.js';
import { createSecurityHeaders, securityHeaderSet } from './steps/security-headers.js';
import { createTransportGuard } from './steps/transport-guard.js';
import { createUrlKeyGuardStep } from './steps/url-key-guard.js';

/** Everything the request pipeline needs; built by server.ts (or a test). */
export interface AppDeps {
  config: Readonly<GatewayConfig>;
  verifier: KeyVerifier;
  limiter: TierRateLimiter;
  authFailures: AuthFailureLimiter | null;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Readiness of the store and the limiter. */
  ready: () => Promise<{ ok: boolean; status?: string }>;
  /** A URL carried something key-like; called after the 401 is sent (exposed-key handling). */
  onKeyInUrl?: (candidates: string[], req: IncomingMessage) => void;
  /** An expired key was presented (audit: the first time this instance sees it). */
  onKeyExpired?: (key: KeyRecord) => void;
  /** OpenTelemetry spans (`createTracing`); off when absent. */
  tracing?: Tracing;
  /** Every finished request, with its final status (usage counting; 0 = aborted). */
  onRequestFinished?: (state: RequestState, status: number) => void;
}

/**
 * Builds the gateway's Express app, for embedding or a server of your own; never listens
 * (server.ts does). The steps below, one module each under `steps/`, are the request's path
 * through the gateway, top to bottom. `closeAgents()` closes the upstream keep-alive sockets.
 *
 * @example
 * const { store } = await createStore(config, logger);
 * const app = createApp({
 *   config, logger, metrics: createMetrics(),
 *   verifier: new KeyVerifier({ store, ...cacheAndKeyOptions }),
 *   limiter: new TierRateLimiter({ tiers: config.rateLimit.tiers, keyPrefix: 'ng:', failurePolicy: 'insurance' }),
 *   authFailures: new AuthFailureLimiter(config.rateLimit.authFailures),
 *   ready: async () => ({ ok: true, checks: {} }),
 * });
 * http.createServer(app).listen(8080);
 */
export function createApp(deps: AppDeps): Express & { closeAgents(): void; upstreams: Upstreams } {
  const { config, logger, metrics, authFailures } = deps;
  const tracing = deps.tracing ? { tracing: deps.tracing } : {};
  const { proxies, closeAgents, upstreams } = createProxies(config, metrics, logger);
  const { checkUrlForKey, keyMatcherOf } = createGuards(config);
  const matchRoute = createRouteMatcher(config.routes);
  const { noteKeyInUrl, checkAndNoteKeyInUrl } = createKeyInUrlNotes({
    checkUrlForKey,
    authFailures,
    failureCounter: metrics.authFailures,
    onKeyInUrl: deps.onKeyInUrl,
  });

  // The request's path through the gateway, top to bottom, run in order by one function.
  const pipeline = runInOrder([
    createRequestContext({
      requestIdHeader: config.headers.requestId,
      acceptClientRequestId: config.headers.acceptClientRequestId,
      trustedProxies: config.server.trustedProxies,
      keyMatcherOf,
      checkUrlForKey,
      accessLog: config.log.accessLog,
      logger,
      metrics,
      ...tracing,
      onFinished: deps.onRequestFinished,
    }),
    createSecurityHeaders(),
    createMessageGuard({ matchRoute, checkAndNoteKeyInUrl }),
    createOwnEndpoints({ ready: deps.ready, checkAndNoteKeyInUrl }),
    createOverloadGuard({ ...config.overload, refused: metrics.overloadRefused }),
    createTransportGuard({
      requireHttps: config.server.requireHttps,
      refuseBrowserRequests: config.browser.refuseBrowserRequests,
      checkAndNoteKeyInUrl,
    }),
    createRouteMatch({ matchRoute, checkAndNoteKeyInUrl }),
    createUrlKeyGuardStep({ checkUrlForKey, noteKeyInUrl }),
    createAuthenticate({
      verifier: deps.verifier,
      authFailures,
      failureCounter: metrics.authFailures,
      onKeyExpired: deps.onKeyExpired,
      ...tracing,
    }),
    createPresentedKeyInUrl({ keyMatcherOf, noteKeyInUrl }),
    createScopeCheck({ metrics }),
    createRateLimit({
      limiter: deps.limiter,
      metrics,
      companyLabel: config.metrics.companyLabel,
      ...tracing,
    }),
    createBodyLimit({ bodyLimitBytes: config.server.bodyLimitBytes }),
    createMethodOverrideBody({
      names: config.methodOverride.inBody === 'refuse' ? config.methodOverride.params : [],
      routes: config.routes,
      bodyScanLimitBytes: config.methodOverride.bodyScanLimitBytes,
      bodyLimitBytes: config.server.bodyLimitBytes,
    }),
    createForward({
      headers: config.headers,
      // A client-sent signature header is as untrusted as a client-sent company id.
      untrustedHeaders: [config.signing.header, ...config.headers.stripFromClients],
      ...(config.headers.allowFromClients && { allowedHeaders: config.headers.allowFromClients }),
      keyMatcherOf,
      proxies,
      ...tracing,
    }),
  ]);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  // No step uses Express's request or response API, so the app's own handle (prototype swap of
  // req and res, router, finalhandler: ~4 % of a proxied request's CPU) is replaced by the steps.
  // Mounted in another Express app, it still answers every request itself.
  Object.assign(app, { handle: direct(pipeline, createNotFound(), createErrorHandler({ logger })) });
  return Object.assign(app, { closeAgents, upstreams });
}

/** The URL key guard and the presented key's matcher, at the configured level (`guards.level`). */
function createGuards(config: Readonly<GatewayConfig>) {
  const level = config.guards.level;
  return {
    checkUrlForKey: createUrlKeyGuard({
      ...config.urlKeyGuard,
      overrideNames: config.methodOverride.params,
      level,
    }),
    keyMatcherOf: createKeyMatcherOf(level, {
      maxLength: config.keys.maxLength,
      acceptLegacy: config.keys.acceptLegacyFormat,
    }),
  };
}

/** The upstream proxies of the configured routes, with signing and the upstream-duration metric. */
function createProxies(
  config: Readonly<GatewayConfig>,
  metrics: GatewayMetrics,
  logger: Logger,
): RouteProxies {
  const upstreamDurationBy = childCache(metrics.upstreamDuration);
  const proxies: RouteProxies = createRouteProxies({
    // Read at each scrape, long after `proxies` is set.
    metrics: createUpstreamMetrics(metrics.registry, () => upstreamHealth(proxies.upstreams)),
    logger,
    routes: config.routes,
    upstream: config.upstream,
    bodyLimitBytes: config.server.bodyLimitBytes,
    signing:
      config.signing.enabled && config.signing.secret
        ? { secret: config.signing.secret, header: config.signing.header }
        : null,
    onUpstreamResponse: (req, s) => upstreamDurationBy(req.gw.route).observe(s),
    securityHeaders: { mode: config.securityHeaders.proxied, names: securityHeaderSet().names },
  });
  return proxies;
}

/** Each target's health for the gauge (credentials masked by the view). */
function upstreamHealth(upstreams: Upstreams) {
  return upstreams
    .view()
    .flatMap((r) =>
      r.targets.map((t) => ({ route: r.route, target: t.url, healthy: t.state === 'healthy' })),
    );
}

/**
 * The app's request handler: the steps, then 404 for anything they left, or the error handler.
 * An error handler that throws leaves the response destroyed rather than hanging.
 */
function direct(
  pipeline: RequestHandler,
  notFound: RequestHandler,
  errorHandler: ErrorRequestHandler,
): (req: Request, res: Response) => void {
  return function handleRequest(req, res) {
    const noop = () => undefined;
    void pipeline(req, res, (err?: unknown) => {
      try {
        if (err === undefined || err === null || err === 'route') void notFound(req, res, noop);
        else errorHandler(err, req, res, noop);
      } catch {
        res.destroy();
      }
    });
  };
}

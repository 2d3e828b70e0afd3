import { randomUUID } from 'node:crypto';
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import helmet from 'helmet';
import proxyAddr from 'proxy-addr';
import { createUrlKeyGuard } from '../auth/url-key-guard.js';
import type { KeyVerifier } from '../auth/verify.js';
import type { GatewayConfig, Route } from '../config/schema.js';
import type { KeyRecord } from '../store/types.js';
import { ERRORS, GatewayError, safeMessage, sendError, type ErrorCode } from '../errors.js';
import { childCache, type GatewayMetrics } from '../observability/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createRouteProxy } from '../proxy/route-proxy.js';
import { createRouteMatcher, isSafeRequestPath } from '../proxy/routes.js';
import { createHeaderScrubber } from '../proxy/trusted-headers.js';
import { signGatewayRequest } from '../signing.js';
import type { AuthFailureLimiter, TierRateLimiter } from '../ratelimit/tier-limiter.js';
import type { RequestState } from './state.js';
import './state.js';

/** Everything the request pipeline needs; built by server.ts (or a test). */
export interface AppDeps {
  config: Readonly<GatewayConfig>;
  verifier: KeyVerifier;
  limiter: TierRateLimiter;
  authFailures: AuthFailureLimiter | null;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Readiness of the store and the limiter. */
  ready: () => Promise<{ ok: boolean; checks: Record<string, string> }>;
  /** A URL carried something key-like; called after the 401 is sent (exposed-key handling). */
  onKeyInUrl?: (candidates: string[], req: IncomingMessage) => void;
  /** An expired key was presented (audit: the first time this instance sees it). */
  onKeyExpired?: (key: KeyRecord) => void;
}

interface RouteRuntime extends Route {
  proxy: ReturnType<typeof createRouteProxy>;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds the gateway's Express app; never listens (server.ts does). The middleware order below is
 * the request's path through the gateway, top to bottom.
 */
export function createApp(deps: AppDeps): Express & { closeAgents(): void } {
  const { config, logger, metrics } = deps;
  const h = config.headers;
  const requestsBy = childCache(metrics.requests);
  const durationBy = childCache(metrics.duration);
  const upstreamDurationBy = childCache(metrics.upstreamDuration);
  const authFailuresBy = childCache(metrics.authFailures);

  const httpAgent = new HttpAgent({
    keepAlive: true,
    maxSockets: config.upstream.maxSockets,
    keepAliveMsecs: config.upstream.keepAliveMs,
  });
  const httpsAgent = new HttpsAgent({
    keepAlive: true,
    maxSockets: config.upstream.maxSockets,
    keepAliveMsecs: config.upstream.keepAliveMs,
  });
  const signing =
    config.signing.enabled && config.signing.secret
      ? { secret: config.signing.secret, header: config.signing.header }
      : null;
  const routes: RouteRuntime[] = config.routes.map((r) => ({
    ...r,
    proxy: createRouteProxy({
      target: r.target,
      timeoutMs: r.timeoutMs ?? config.upstream.timeoutMs,
      bodyLimitBytes: config.server.bodyLimitBytes,
      agent: r.target.startsWith('https:') ? httpsAgent : httpAgent,
      onUpstreamResponse: (req, s) => upstreamDurationBy(req.gw.route).observe(s),
      // Signed here, on the request as it leaves: proxyReq.path is what the upstream receives
      // (target base path joined, as http-proxy builds it).
      ...(signing ? { onProxyReq: (proxyReq, req) => signProxyRequest(proxyReq, req) } : {}),
    }),
  }));
  const matchRoute = createRouteMatcher(routes);
  const routeByPrefix = new Map(routes.map((r) => [r.prefix, r]));
  const checkUrlForKey = createUrlKeyGuard(config.urlKeyGuard.paramNames, config.urlKeyGuard);
  function signProxyRequest(proxyReq: ClientRequest, req: IncomingMessage): void {
    const st = req.gw;
    proxyReq.setHeader(
      signing!.header,
      signGatewayRequest(signing!.secret, {
        method: proxyReq.method,
        target: proxyReq.path,
        companyId: st.company!.id,
        keyId: st.key!.id,
        tier: st.company!.tier,
      }),
    );
  }
  // A client-sent signature header is as untrusted as a client-sent company id.
  const scrubHeaders = createHeaderScrubber(h, [config.signing.header]);
  const trust = config.server.trustedProxies.length ? proxyAddr.compile(config.server.trustedProxies) : null;

  /** Answers with a registry error and records it for the access log. */
  function deny(req: IncomingMessage, res: ServerResponse, code: ErrorCode): void {
    req.gw.error = code;
    // A refused request's body is never read: close the connection instead of draining it. A
    // malformed request closes it too (the client is confused about something).
    if (
      code === 'BAD_REQUEST' ||
      (!req.complete &&
        (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined))
    ) {
      res.setHeader('Connection', 'close');
    }
    sendError(res, code);
  }

  // ---- 1. request context: id, client address, access log line and metrics on finish
  const requestContext: RequestHandler = function requestContext(req, res, next) {
    const clientId = h.acceptClientRequestId ? req.headers[h.requestId] : undefined;
    const id = typeof clientId === 'string' && REQUEST_ID_PATTERN.test(clientId) ? clientId : randomUUID();
    const peer = req.socket.remoteAddress ?? '';
    const peerTrusted = trust !== null && trust(peer, 0);
    const state: RequestState = {
      id,
      start: process.hrtime.bigint(),
      clientIp: peerTrusted ? proxyAddr(req, trust) : peer,
      peerTrusted,
      route: '-',
    };
    req.gw = state;
    res.setHeader(h.requestId, id);
    metrics.inflight.inc();
    res.once('close', () => {
      metrics.inflight.dec();
      const seconds = Number(process.hrtime.bigint() - state.start) / 1e9;
      const status = res.writableFinished ? res.statusCode : 0;
      requestsBy(state.route, String(status)).inc();
      durationBy(state.route).observe(seconds);
      if (!config.log.accessLog) return;
      const path = pathOf(req.url ?? '');
      // Probes hit every pod every few seconds: keep them out of the info-level access log.
      const log =
        state.route === '-' && (path === '/healthz' || path === '/readyz') ? logger.debug : logger.info;
      log.call(
        logger,
        {
          requestId: id,
          method: req.method,
          route: state.route,
          // Never the query string. A URL that carried a key is not logged at all: a key-named
          // parameter can hide in the path too (`;api_key=...`), and legacy keys have no shape to redact.
          path: state.keyInUrl ? '[redacted: key in URL]' : path,
          status,
          aborted: !res.writableFinished || undefined,
          durationMs: Math.round(seconds * 1e4) / 10,
          companyId: state.company?.id,
          keyId: state.key?.id,
          error: state.error,
          denyReason: state.denyReason,
          clientIp: state.clientIp,
        },
        'request',
      );
    });
    next();
  };

  // ---- 2. security headers: helmet's policy, computed once (its headers do not depend on the
  // request), then set on every response; X-Powered-By is disabled below.
  const helmetHeaders = captureHeaders(
    helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } }),
  );
  const securityHeaders: RequestHandler = function securityHeaders(_req, res, next) {
    for (const [name, value] of helmetHeaders) res.setHeader(name, value);
    next();
  };

  /**
   * A URL carried a key: never logged, counted as a failed authentication for the address, and a
   * valid key among the candidates is flagged exposed — whatever the answer to the request is.
   */
  function noteKeyInUrl(req: IncomingMessage, candidates: string[]): void {
    req.gw.keyInUrl = true;
    authFailuresBy('key_in_url').inc();
    const ip = req.gw.clientIp;
    void (async () => {
      // A blocked address gets no more store lookups for exposure checks either.
      if (deps.authFailures && (await deps.authFailures.blockedFor(ip)) > 0) return;
      await deps.authFailures?.recordFailure(ip);
      deps.onKeyInUrl?.(candidates, req);
    })();
  }
  function checkAndNoteKeyInUrl(req: IncomingMessage): boolean {
    const found = checkUrlForKey(req.url ?? '');
    if (found.found) noteKeyInUrl(req, found.candidates);
    else if (found.overLimit) req.gw.keyInUrl = true; // not read to the end: never logged either
    return found.found;
  }

  // ---- 3. the gateway's own endpoints, no key needed
  const ownEndpoints: RequestHandler = async function ownEndpoints(req, res, next) {
    const url = req.url;
    if (url.charCodeAt(1) !== 104 && url.charCodeAt(1) !== 114) return next(); // fast path: not /h… or /r…
    const path = pathOf(url);
    if (path !== '/healthz' && path !== '/readyz') return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (path.length !== url.length) checkAndNoteKeyInUrl(req); // probes need no query; flag a key if one came
    if (path === '/healthz') return void res.json({ status: 'ok' });
    const r = await deps.ready();
    res.status(r.ok ? 200 : 503).json({ status: r.ok ? 'ready' : 'not ready', checks: r.checks });
  };

  // ---- 4. transport rules: a routable path, HTTPS when required, no browser callers when refused
  const transportGuard: RequestHandler = function transportGuard(req, res, next) {
    const url = req.url;
    const q = url.indexOf('?');
    if (!isSafeRequestPath(q === -1 ? url : url.slice(0, q))) {
      // A refused path must not hide that a key was exposed.
      checkAndNoteKeyInUrl(req);
      return deny(req, res, 'BAD_REQUEST');
    }
    if (config.server.requireHttps && !isHttps(req)) return deny(req, res, 'HTTPS_REQUIRED');
    if (config.browser.refuseBrowserRequests && isBrowserRequest(req))
      return deny(req, res, 'BROWSER_REQUEST');
    next();
  };

  // ---- 5. route match: no route → 404
  const routeMatch: RequestHandler = function routeMatch(req, res, next) {
    const route = matchRoute(pathOf(req.url));
    if (!route) {
      checkAndNoteKeyInUrl(req);
      return deny(req, res, 'NOT_FOUND');
    }
    req.gw.route = route.prefix;
    next();
  };

  // ---- 6. a key in the URL is refused, never forwarded
  const urlKeyGuard: RequestHandler = async function urlKeyGuard(req, res, next) {
    const found = checkUrlForKey(req.url);
    // Past the guard's caps the URL was not read to the end: refused, and its path never logged.
    if (!found.found && found.overLimit) req.gw.keyInUrl = true;
    if (!found.found) return found.overLimit ? deny(req, res, 'BAD_REQUEST') : next();
    // Keys in URLs count against the same per-address budget as bad header keys.
    const wait = (await deps.authFailures?.blockedFor(req.gw.clientIp)) ?? 0;
    noteKeyInUrl(req, found.candidates);
    if (wait > 0) {
      req.gw.denyReason = 'auth_failures';
      res.setHeader('Retry-After', String(wait));
      return deny(req, res, 'AUTH_RATE_LIMITED');
    }
    deny(req, res, 'KEY_IN_URL');
  };

  // ---- 7. X-API-Key → key record → company; failures are limited per client address
  const authenticate: RequestHandler = async function authenticate(req, res, next) {
    const st = req.gw;
    if (deps.authFailures) {
      const wait = await deps.authFailures.blockedFor(st.clientIp);
      if (wait > 0) {
        res.setHeader('Retry-After', String(wait));
        st.denyReason = 'auth_failures';
        return deny(req, res, 'AUTH_RATE_LIMITED');
      }
    }
    const result = await deps.verifier.verify(req.headers['x-api-key']);
    if (!result.ok) {
      st.denyReason = result.reason;
      authFailuresBy(result.reason).inc();
      if (result.reason === 'expired' && result.key) deps.onKeyExpired?.(result.key);
      if (result.code === 'MISSING_KEY' || result.code === 'INVALID_KEY')
        await deps.authFailures?.recordFailure(st.clientIp);
      return deny(req, res, result.code);
    }
    st.key = result.key;
    st.company = result.company;
    next();
  };

  // ---- 8. the company's tier limit (shared through Redis); 401/403 above consumed nothing
  const rateLimit: RequestHandler = async function rateLimit(req, res, next) {
    const company = req.gw.company!;
    const d = await deps.limiter.consume(company.id, company.tier);
    if (d.source !== 'primary') metrics.limiterFallback.inc({ policy: d.source });
    res.setHeader('RateLimit-Limit', String(d.limit));
    res.setHeader('RateLimit-Remaining', String(d.remaining));
    res.setHeader('RateLimit-Reset', String(d.resetSeconds));
    if (!d.allowed) {
      res.setHeader('Retry-After', String(d.resetSeconds));
      metrics.rateLimited.inc({ tier: company.tier, company: config.metrics.companyLabel ? company.id : '' });
      return deny(req, res, 'RATE_LIMITED');
    }
    next();
  };

  // ---- 9. declared body size over the limit → 413 before anything is read (streamed bodies are counted by the proxy)
  const bodyLimit: RequestHandler = function bodyLimit(req, res, next) {
    const limit = config.server.bodyLimitBytes;
    const cl = req.headers['content-length'];
    if (limit > 0 && cl !== undefined && Number(cl) > limit) return deny(req, res, 'PAYLOAD_TOO_LARGE');
    next();
  };

  // ---- 10. forward: scrub client headers, set the trusted ones, stream to the upstream
  const forward: RequestHandler = function forward(req, res, next) {
    const st = req.gw;
    const route = routeByPrefix.get(st.route)!;
    const peer = req.socket.remoteAddress ?? '';
    const xff = req.headers['x-forwarded-for'];
    // Client-sent X-Forwarded-* are believed only from a trusted proxy; otherwise they are replaced.
    const forwardedFor = st.peerTrusted && typeof xff === 'string' && xff !== '' ? `${xff}, ${peer}` : peer;
    const proto = isHttps(req) ? 'https' : 'http';
    const host = (st.peerTrusted && firstValue(req.headers['x-forwarded-host'])) || req.headers.host || '';
    const expectContinue = /100-continue/i.test(req.headers.expect ?? '');
    const connection = req.headers.connection;
    if (typeof connection === 'string' && /(^|,)\s*close\s*(,|$)/i.test(connection)) st.clientClose = true;
    const headers = scrubHeaders(req.headers);
    req.headers = headers; // http-proxy builds the upstream request from req.headers
    headers[h.companyId] = st.company!.id;
    headers[h.keyId] = st.key!.id;
    headers[h.companyTier] = st.company!.tier;
    headers[h.requestId] = st.id;
    headers['x-forwarded-for'] = forwardedFor;
    headers['x-forwarded-proto'] = proto;
    if (host) headers['x-forwarded-host'] = host;
    // The client waited for our go: only now, authenticated and within limits, may it send the body.
    if (expectContinue) res.writeContinue();
    void route.proxy(req, res, next);
  };

  /** HTTPS on our own socket, or X-Forwarded-Proto: https from a trusted terminator. */
  function isHttps(req: IncomingMessage): boolean {
    if ((req.socket as { encrypted?: boolean }).encrypted) return true;
    return (
      req.gw.peerTrusted === true && firstValue(req.headers['x-forwarded-proto'])?.toLowerCase() === 'https'
    );
  }

  // ---- 11. anything left: 404; errors: the spec's shape, never a stack or a message from below
  const notFound: RequestHandler = function notFound(req, res) {
    deny(req, res, 'NOT_FOUND');
  };
  const errorHandler: ErrorRequestHandler = function errorHandler(err, req, res, _next) {
    const known = err instanceof GatewayError;
    const parserStatus = !known && typeof err?.status === 'number' && err.status >= 400 && err.status < 500;
    const code: ErrorCode = known ? err.code : parserStatus ? 'BAD_REQUEST' : 'INTERNAL';
    if (!known)
      logger.error(
        { err: { message: safeMessage(err), type: err?.name }, requestId: req.gw?.id },
        'unhandled error',
      );
    else if (ERRORS[code].status >= 500)
      logger.warn(
        { code, cause: err.cause === undefined ? undefined : safeMessage(err.cause), requestId: req.gw?.id },
        err.message,
      );
    if (res.headersSent) return void res.destroy();
    if (req.gw) deny(req, res, code);
    else sendError(res, code);
  };

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  // The request's path through the gateway, top to bottom. One Express layer runs the steps in
  // order (Express's per-layer routing would otherwise run for each of them).
  app.use(
    runInOrder([
      requestContext,
      securityHeaders,
      ownEndpoints,
      transportGuard,
      routeMatch,
      urlKeyGuard,
      authenticate,
      rateLimit,
      bodyLimit,
      forward,
    ]),
  );
  app.use(notFound);
  app.use(errorHandler);
  return Object.assign(app, {
    closeAgents() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  });
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

function firstValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s?.split(',')[0]?.trim() || undefined;
}

function isBrowserRequest(req: IncomingMessage): boolean {
  const mode = req.headers['sec-fetch-mode'];
  return req.headers.origin !== undefined || (typeof mode === 'string' && mode.toLowerCase() === 'cors');
}

/**
 * Runs middleware steps in order with Express semantics: `next()` goes on, `next(err)` and a
 * rejected promise go to Express's error handling.
 */
function runInOrder(steps: RequestHandler[]): RequestHandler {
  return function gatewayPipeline(req, res, done) {
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') return done(err);
      const step = steps[i++];
      if (!step) return done();
      try {
        const r = step(req, res, next) as unknown;
        if (r instanceof Promise) r.catch(done);
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}

/** The headers a (request-independent) middleware such as helmet sets, captured once. */
function captureHeaders(mw: RequestHandler): [string, string][] {
  const headers: [string, string][] = [];
  const res = {
    setHeader: (name: string, value: string | number | string[]) => void headers.push([name, String(value)]),
    removeHeader: () => undefined,
    getHeader: () => undefined,
  };
  let called = false;
  mw({ headers: {}, method: 'GET', url: '/' } as never, res as never, () => (called = true));
  if (!called) throw new Error('security header middleware did not complete synchronously');
  return headers;
}

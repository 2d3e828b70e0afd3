import type { Agent as HttpAgent, ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { sendError, type ErrorCode } from '../errors.js';
import { scrubResponseHeaders } from '../guards/header-scrub.js';
import type { Bulkhead } from '../upstream/bulkhead.js';
import { UpstreamPool, type PoolTarget } from '../upstream/pool.js';
import type { RetryBudget } from '../upstream/retry-budget.js';
import { sendAttempt, type AttemptFailure, type Timeouts } from './attempt.js';
import '../request-state.js';

export interface RouteProxyOptions {
  /** The one target, when there is no `pool`. */
  target?: string;
  /** The route's targets and their health (`UpstreamPool`). */
  pool?: UpstreamPool;
  /** Time to the response headers and the longest idle gap after them, unless `timeouts` says otherwise. */
  timeoutMs: number;
  /** `routes[].timeouts`: connect, headers, idle, total (ms; total unset = no bound). */
  timeouts?: Partial<Timeouts>;
  /** `routes[].retries`; absent: one attempt. */
  retries?: RetryOptions;
  /** `routes[].maxInFlight`: requests in flight per company (and key); absent: no cap. */
  bulkhead?: Bulkhead;
  /** 0 = no limit. */
  bodyLimitBytes: number;
  /** Keep-alive agent for `http:` targets (and `https:` ones without `httpsAgent`). */
  agent: HttpAgent | HttpsAgent;
  httpsAgent?: HttpsAgent;
  /** Called before the request leaves, to add signed headers etc. */
  onProxyReq?: (proxyReq: ClientRequest, req: IncomingMessage) => void;
  /** Called once the upstream answered with headers, with the seconds it took. */
  onUpstreamResponse?: (req: IncomingMessage, seconds: number) => void;
  /** Observers for metrics and logs; none of them may throw. */
  observe?: ProxyObserver;
  /**
   * The gateway's security headers (already set on the response, lowercase `names`) on the
   * upstream's answer: `fill` keeps the upstream's own values and adds the others, `override`
   * keeps the gateway's, `off` drops the gateway's. Default: `fill`.
   */
  securityHeaders?: { mode: SecurityHeadersMode; names: readonly string[] };
}

export interface RetryOptions {
  /** Attempts per request, the first included. */
  attempts: number;
  /** Methods also retried on 502/503/504 or a timeout before the headers, when bodyless. */
  idempotentMethods: readonly string[];
  budget: RetryBudget | null;
}

/** What the route proxy reports as it goes (metrics). */
export interface ProxyObserver {
  /** An attempt ended: the target's status, or what failed. */
  attempt?(req: IncomingMessage, target: PoolTarget, status: number | AttemptFailure): void;
  /** A retry was wanted: `granted` false when the budget refused it. */
  retry?(req: IncomingMessage, granted: boolean): void;
  /** A timeout fired: `connect`, `headers`, `idle` or `total`. */
  timeout?(req: IncomingMessage, phase: keyof Timeouts): void;
  /** The bulkhead refused the request (503 UPSTREAM_BUSY). */
  busy?(req: IncomingMessage): void;
}

/** What happens to the gateway's security headers on a proxied answer (`securityHeaders.proxied`). */
export type SecurityHeadersMode = 'fill' | 'override' | 'off';

/** The longest `Retry-After` a retry waits for; a longer one is passed to the client instead. */
const MAX_RETRY_AFTER_MS = 1000;
const GATEWAY_ERRORS = new Set([502, 503, 504]);

/**
 * The forwarder of one route, over its pool of targets (node:http; docs/architecture.md says why
 * not http-proxy). Per request: the bulkhead first (503 `UPSTREAM_BUSY` before any byte leaves),
 * then one attempt per picked target. A request that never reached a target (refused, DNS, connect
 * timeout) is retried on another whatever its method; a bodyless request of an idempotent method
 * also on a reset, a timeout before the headers, or 502/503/504 (a `Retry-After` over 1 s is
 * passed to the client instead). A body is streamed only once a connection is up, and a request
 * whose body started is never sent again. Attempts are bounded, retries also by the budget.
 * Failures answer in the spec's shape: 502, 504 (headers, connect, total timeout), 413 for a
 * streamed body over the limit; a response already begun is cut instead, never left looking complete.
 */
export function createRouteProxy(
  opts: RouteProxyOptions,
): (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (err?: unknown) => void,
  onAdmitted?: () => void,
) => Promise<void> {
  const pool = opts.pool ?? onePool(opts.target);
  const timeouts: Timeouts = {
    connect: opts.timeouts?.connect ?? opts.timeoutMs,
    headers: opts.timeouts?.headers ?? opts.timeoutMs,
    idle: opts.timeouts?.idle ?? opts.timeoutMs,
    total: opts.timeouts?.total ?? 0,
  };
  const idempotent = new Set(opts.retries?.idempotentMethods ?? []);
  return async function proxyRoute(req, res, _next, onAdmitted) {
    const st = req.gw;
    if (opts.bulkhead) {
      const release = opts.bulkhead.tryAcquire(st.company?.id ?? '', st.key?.id ?? '');
      if (release === null) {
        opts.observe?.busy?.(req);
        answer(req, res, 'UPSTREAM_BUSY', '1');
        return;
      }
      res.once('close', release);
    }
    onAdmitted?.();
    const hasBody =
      st.body !== undefined ||
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    new Forwarding(req, res, opts, pool, timeouts, !hasBody && idempotent.has(req.method ?? '')).start();
    await Promise.resolve();
  };
}

/** The pool of the one-target form. */
function onePool(target: string | undefined): UpstreamPool {
  if (target === undefined) throw new TypeError('createRouteProxy needs a target or a pool');
  return new UpstreamPool({
    targets: [{ url: target, weight: 1 }],
    balancing: 'round-robin',
    outlier: { consecutiveFailures: 1, baseEjectionMs: 1, maxEjectionMs: 1, maxEjectedPercent: 0 },
    whenNoneHealthy: 'panic',
  });
}

/** One request's way through the pool: its attempts, the total bound, the answer. */
class Forwarding {
  readonly #tried = new Set<PoolTarget>();
  #current: ClientRequest | null = null;
  #done = false;
  #bodyStarted = false;
  #totalTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly opts: RouteProxyOptions,
    readonly pool: UpstreamPool,
    readonly timeouts: Timeouts,
    readonly retryable: boolean,
  ) {}

  start(): void {
    this.opts.retries?.budget?.onRequest();
    // A client that breaks off mid-body: answered by the close below, not an uncaught error.
    this.req.on('error', () => undefined);
    // The client went away before the answer was complete: stop the upstream request too.
    this.res.once('close', () => {
      clearTimeout(this.#totalTimer);
      if (!this.res.writableFinished) {
        this.#done = true;
        this.#current?.destroy();
      }
    });
    if (this.timeouts.total > 0) {
      this.#totalTimer = setTimeout(() => this.#onTotalTimeout(), this.timeouts.total);
    }
    const first = this.pool.pick(this.req.gw.company?.id ?? '', this.#tried);
    if (first === 'refuse' || first === undefined)
      this.#fail(first === 'refuse' ? 'NO_HEALTHY_UPSTREAM' : null);
    else this.#attempt(first);
  }

  #attempt(target: PoolTarget): void {
    if (this.#done) return;
    this.#tried.add(target);
    target.inFlight++;
    let ended = false;
    const end = () => {
      if (!ended) target.inFlight--;
      ended = true;
    };
    this.#current = sendAttempt({
      req: this.req,
      res: this.res,
      target,
      agent: target.url.protocol === 'https:' ? (this.opts.httpsAgent ?? this.opts.agent) : this.opts.agent,
      timeouts: this.timeouts,
      bodyLimitBytes: this.opts.bodyLimitBytes,
      ...(this.opts.onProxyReq && { onProxyReq: this.opts.onProxyReq }),
      onBodyStart: () => (this.#bodyStarted = true),
      onResponse: (proxyRes, seconds) => {
        this.opts.onUpstreamResponse?.(this.req, seconds);
        this.opts.observe?.attempt?.(this.req, target, proxyRes.statusCode ?? 0);
        this.#onResponse(target, proxyRes, end);
      },
      onFailure: (failure, reached) => {
        end();
        this.opts.observe?.attempt?.(this.req, target, failure);
        if (failure === 'connect-timeout' || failure === 'headers-timeout')
          this.opts.observe?.timeout?.(this.req, failure === 'connect-timeout' ? 'connect' : 'headers');
        this.#onFailure(target, failure, reached);
      },
    });
  }

  #onResponse(target: PoolTarget, proxyRes: IncomingMessage, end: () => void): void {
    proxyRes.once('idle-timeout', () => {
      this.opts.observe?.timeout?.(this.req, 'idle');
      this.pool.onResult(target, 'idle-timeout');
    });
    const status = proxyRes.statusCode ?? 0;
    const gatewayError = GATEWAY_ERRORS.has(status);
    this.pool.onResult(target, gatewayError ? `status ${status}` : null);
    if (this.#done) {
      // The client went away, or the total timeout answered, while the headers were on their way.
      proxyRes.resume();
      proxyRes.once('close', end);
      return;
    }
    if (gatewayError && this.retryable) {
      const wait = retryAfterMs(proxyRes.headers['retry-after']);
      const next = wait <= MAX_RETRY_AFTER_MS ? this.#nextTarget() : undefined;
      if (next !== undefined) {
        proxyRes.resume();
        proxyRes.once('close', end);
        setTimeout(() => this.#attempt(next), wait);
        return;
      }
    }
    proxyRes.once('close', end);
    clearTimeoutOnFinish(this.res, this.#totalTimer);
    copyResponse(this.req, this.res, proxyRes, this.opts.securityHeaders);
  }

  #onFailure(target: PoolTarget, failure: AttemptFailure, reached: boolean): void {
    this.#current = null;
    if (failure !== 'body-error' && failure !== 'too-large' && failure !== 'total-timeout')
      this.pool.onResult(target, failure);
    // Already answered (a total timeout's 504): destroying now could drop that answer unsent.
    if (this.res.writableEnded) return;
    if (this.#done || this.res.headersSent) {
      this.res.destroy();
      return;
    }
    // Never again once the body started; a refused connection goes elsewhere whatever the method.
    const final = failure === 'body-error' || failure === 'too-large' || failure === 'total-timeout';
    const again = !final && !this.#bodyStarted && (!reached || this.retryable);
    const next = again ? this.#nextTarget() : undefined;
    if (next !== undefined) this.#attempt(next);
    else this.#fail(codeOf(failure, this.req));
  }

  /** The next target, when the attempts and the budget allow a retry. */
  #nextTarget(): PoolTarget | undefined {
    const retries = this.opts.retries;
    if (retries === undefined || this.#tried.size >= retries.attempts) return undefined;
    const next = this.pool.pick(this.req.gw.company?.id ?? '', this.#tried);
    if (next === undefined || next === 'refuse') return undefined;
    const granted = retries.budget?.tryRetry() ?? true;
    this.opts.observe?.retry?.(this.req, granted);
    return granted ? next : undefined;
  }

  #onTotalTimeout(): void {
    this.opts.observe?.timeout?.(this.req, 'total');
    this.req.gw.upstreamTimedOut = true;
    if (this.res.headersSent) {
      this.#done = true;
      this.#current?.destroy();
      this.res.destroy();
      return;
    }
    this.#done = true;
    this.#current?.destroy();
    this.#fail('UPSTREAM_TOTAL_TIMEOUT');
  }

  #fail(code: ErrorCode | null): void {
    this.#done = true;
    clearTimeout(this.#totalTimer);
    if (this.res.headersSent || this.res.writableEnded) {
      this.res.destroy();
      return;
    }
    answer(this.req, this.res, code ?? this.req.gw.error ?? 'UPSTREAM_UNREACHABLE');
  }
}

function clearTimeoutOnFinish(res: ServerResponse, timer: NodeJS.Timeout | undefined): void {
  if (timer !== undefined) res.once('finish', () => clearTimeout(timer));
}

/** The answer of a failed attempt that is not retried. */
function codeOf(failure: AttemptFailure, req: IncomingMessage): ErrorCode {
  if (req.gw.error !== undefined) return req.gw.error; // a body step that failed set its own answer
  if (failure === 'too-large') return 'PAYLOAD_TOO_LARGE';
  if (failure === 'connect-timeout') return 'UPSTREAM_CONNECT_TIMEOUT';
  if (failure === 'headers-timeout') return 'UPSTREAM_TIMEOUT';
  if (failure === 'total-timeout') return 'UPSTREAM_TOTAL_TIMEOUT';
  return 'UPSTREAM_UNREACHABLE';
}

/** An answer of the gateway's own, in the spec's shape; `Connection: close` while the body is unread. */
function answer(req: IncomingMessage, res: ServerResponse, code: ErrorCode, retryAfter?: string): void {
  req.gw.error = code;
  if (code === 'UPSTREAM_TIMEOUT' || code === 'UPSTREAM_CONNECT_TIMEOUT' || code === 'UPSTREAM_TOTAL_TIMEOUT')
    req.gw.upstreamTimedOut = true;
  if (!req.complete) res.setHeader('Connection', 'close');
  if (retryAfter !== undefined) res.setHeader('Retry-After', retryAfter);
  sendError(res, code);
}

/** `Retry-After` in ms (seconds or an HTTP date); 0 when absent or unreadable. */
function retryAfterMs(value: string | undefined): number {
  if (value === undefined) return 0;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

/**
 * The upstream's answer to the client: its hop-by-hop headers stay here (RFC 9110 §7.6.1), the
 * connection header is the gateway's, the security headers per mode, then the body streams. A body
 * cut short by the upstream makes the client connection abort, so it never looks complete.
 */
function copyResponse(
  req: IncomingMessage,
  res: ServerResponse,
  proxyRes: IncomingMessage,
  security: RouteProxyOptions['securityHeaders'],
): void {
  const headers = proxyRes.headers;
  scrubResponseHeaders(headers);
  // `!res.shouldKeepAlive`: the server drains (http/server.ts), or the request did not ask to keep it.
  headers.connection = req.gw.clientClose || !res.shouldKeepAlive ? 'close' : 'keep-alive';
  if (req.httpVersion === '1.0') delete headers['transfer-encoding'];
  applySecurityHeaders(security?.mode ?? 'fill', security?.names ?? [], headers, res);
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value !== undefined) res.setHeader(name, value);
  }
  res.statusCode = proxyRes.statusCode ?? 502;
  if (proxyRes.statusMessage) res.statusMessage = proxyRes.statusMessage;
  proxyRes.once('close', () => {
    if (!proxyRes.complete) res.destroy();
  });
  proxyRes.pipe(res);
}

/**
 * The gateway's security headers on an upstream answer, before its headers are copied onto `res`
 * (where the security-headers step set the gateway's). That copy overwrites, so `fill` needs no
 * work: a header the upstream set replaces the gateway's, the others stay. `override` takes the
 * upstream's copies out first; `off` removes the gateway's that the upstream did not replace.
 */
function applySecurityHeaders(
  mode: SecurityHeadersMode,
  names: readonly string[],
  upstream: IncomingMessage['headers'],
  res: ServerResponse,
): void {
  if (mode === 'override') for (const name of names) delete upstream[name];
  else if (mode === 'off') for (const name of names) if (upstream[name] === undefined) res.removeHeader(name);
}

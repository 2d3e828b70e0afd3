import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { RequestHandler } from 'express';
import proxyAddr from 'proxy-addr';
import { ENVIRONMENT_SOURCE } from '../../config/field-patterns.js';
import { routeStatusCache, statusClass, type GatewayMetrics } from '../../observability/metrics.js';
import { unredactedChild, type Logger } from '../../observability/logger.js';
import { TRACING_OFF, type Tracing } from '../../observability/tracing.js';
import type { KeyMatcher } from '../../guards/key-material.js';
import type { UrlKeyCheck } from '../../guards/url-key-guard.js';
import type { RequestState } from '../../request-state.js';
import { assertBoolean, assertFunction, assertHeaderName } from '../option-checks.js';
import { createLoggedPath } from '../logged-path.js';
import { pathOf } from '../request-url.js';

export interface RequestContextOptions {
  /** Lowercase name of the request id header (set on every response). */
  requestIdHeader: string;
  /** Reuse a well-formed client request id instead of generating one. */
  acceptClientRequestId: boolean;
  /** Addresses or CIDRs whose X-Forwarded-* headers are believed (proxy-addr syntax). */
  trustedProxies: readonly string[];
  /** The presented key's matcher (`createKeyMatcherOf`): client values logged or echoed are checked with it. */
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher;
  /** The URL key guard: a logged path it was not run on is checked with it (see `createLoggedPath`). */
  checkUrlForKey: (url: string) => UrlKeyCheck;
  /** Write one info-level line per request (probes at debug level). */
  accessLog: boolean;
  logger: Logger;
  metrics: Pick<GatewayMetrics, 'requests' | 'duration' | 'inflight'>;
  /** The request's server span (OpenTelemetry); off by default. */
  tracing?: Tracing;
  /** Called once per finished (or aborted, status 0) request, after the metrics (usage counting). */
  onFinished?: (state: RequestState, status: number) => void;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Step 1, request context: sets `req.gw` (request id, client address, whether the peer is a trusted
 * proxy, route `-`), answers the request id header, and on close counts the request and writes the
 * access log line. Never stops a request. Every client value it logs or echoes goes through the
 * request's key-material check first (threat model: T5): an accepted client request id (else a new
 * one), a trusted proxy's `tracestate` entries; the client address from a trusted proxy's
 * `X-Forwarded-For` must be an IP address (else the peer's is used); the logged path follows
 * `createLoggedPath`. Throws at creation on invalid options (proxy-addr throws for an invalid
 * trusted address).
 *
 * @example
 * const requestContext = createRequestContext({ requestIdHeader: 'x-request-id', acceptClientRequestId: false,
 *   trustedProxies: [], keyMatcherOf, checkUrlForKey, accessLog: true, logger, metrics });
 */
export function createRequestContext(opts: RequestContextOptions): RequestHandler {
  assertHeaderName(opts.requestIdHeader, 'requestIdHeader');
  assertBoolean(opts.acceptClientRequestId, 'acceptClientRequestId');
  assertBoolean(opts.accessLog, 'accessLog');
  assertFunction(opts.keyMatcherOf, 'keyMatcherOf');
  assertFunction(opts.checkUrlForKey, 'checkUrlForKey');
  if (!Array.isArray(opts.trustedProxies)) throw new TypeError('trustedProxies must be an array');
  const { requestIdHeader, acceptClientRequestId, metrics, keyMatcherOf } = opts;
  const trust = opts.trustedProxies.length ? proxyAddr.compile([...opts.trustedProxies]) : null;
  const requestsBy = routeStatusCache(metrics.requests, String);
  const durationBy = routeStatusCache(metrics.duration, statusClass);
  const logRequest = createAccessLog(
    opts.logger,
    createLoggedPath({ checkUrlForKey: opts.checkUrlForKey, keyMatcherOf }),
    keyMatcherOf,
  );
  const tracing = opts.tracing ?? TRACING_OFF;

  return function requestContext(req, res, next) {
    const peer = req.socket.remoteAddress ?? '';
    const peerTrusted = trust !== null && trust(peer, 0);
    // proxy-addr returns whatever the list holds where the trusted hops end: only an address is one.
    const forwarded = peerTrusted ? proxyAddr(req, trust) : peer;
    const state: RequestState = {
      id: '',
      start: process.hrtime.bigint(),
      clientIp: isIP(forwarded) !== 0 ? forwarded : peer,
      peerTrusted,
      route: '-',
    };
    req.gw = state;
    const clientId = acceptClientRequestId ? req.headers[requestIdHeader] : undefined;
    // A client id that carries a key would put it in every log line and upstream request.
    const id =
      typeof clientId === 'string' && REQUEST_ID_PATTERN.test(clientId) && !keyMatcherOf(req).holds(clientId)
        ? clientId
        : randomUUID();
    state.id = id;
    if (tracing.on) tracing.startRequest(state, req, (text) => keyMatcherOf(req).holds(text));
    res.setHeader(requestIdHeader, id);
    metrics.inflight.inc();
    res.once('close', () => {
      metrics.inflight.dec();
      const seconds = Number(process.hrtime.bigint() - state.start) / 1e9;
      const status = res.writableFinished ? res.statusCode : 0;
      requestsBy(state.route, status).inc();
      durationBy(state.route, status).observe(seconds);
      const traceId = tracing.on ? tracing.traceIdOf(state) : undefined;
      if (tracing.on) tracing.endRequest(state, status);
      opts.onFinished?.(state, status);
      if (!opts.accessLog) return;
      logRequest(req, res, state, status, seconds, traceId);
    });
    next();
  };
}

/** The fields of the access line, all scalars: none may be a name the logger redacts (tested). */
export const ACCESS_LINE_FIELDS = [
  'requestId',
  'method',
  'route',
  'path',
  'status',
  'aborted',
  'durationMs',
  'companyId',
  'keyId',
  'error',
  'denyReason',
  'upstreamError',
  'clientIp',
  'userAgent',
  'bytesIn',
  'bytesOut',
  // OpenTelemetry's name for it in logs, which log stores link to the trace by.
  'trace_id',
] as const;
type AccessLine = Record<(typeof ACCESS_LINE_FIELDS)[number], string | number | boolean | undefined>;

/**
 * The access log line of one finished (or aborted) request. Written without the redaction pass
 * (`unredactedChild`): the line is `AccessLine`, fixed scalar fields, none of them redacted names.
 */
function createAccessLog(
  parent: Logger,
  loggedPath: (req: IncomingMessage, st: RequestState) => string,
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher,
) {
  const logger = unredactedChild(parent);
  return function logRequest(
    req: IncomingMessage,
    res: ServerResponse,
    state: RequestState,
    status: number,
    seconds: number,
    traceId: string | undefined,
  ): void {
    const bytes = connectionBytes(req.socket as MarkedSocket);
    const path = pathOf(req.url ?? '');
    // Probes hit every pod every few seconds: keep them out of the info-level access log.
    const log =
      state.route === '-' && (path === '/healthz' || path === '/readyz') ? logger.debug : logger.info;
    const line: AccessLine = {
      requestId: state.id,
      method: req.method,
      route: state.route,
      // Never the query string. A path that carried key material is not logged at all (one rule for
      // every outcome: createLoggedPath): a key-named parameter can hide in the path too
      // (`;api_key=...`), and legacy keys have no shape to redact.
      path: loggedPath(req, state),
      status,
      aborted: !res.writableFinished || undefined,
      durationMs: Math.round(seconds * 1e4) / 10,
      companyId: state.company?.id,
      keyId: state.key?.id,
      error: state.error,
      denyReason: state.denyReason,
      upstreamError: state.upstreamError && upstreamCause(state.upstreamError),
      clientIp: state.clientIp,
      userAgent: loggedUserAgent(req, keyMatcherOf),
      bytesIn: bytes.in,
      bytesOut: bytes.out,
      trace_id: traceId,
    };
    log.call(logger, line, 'request');
  };
}

/** Most characters of an upstream failure's cause in the access line. */
const MAX_CAUSE = 200;

/**
 * Why the upstream request failed, for the access line: the error's code with the host or address
 * it concerns (`ENOTFOUND backend`, `ECONNREFUSED 127.0.0.1:9090`, `ECONNRESET`), else the
 * gateway's own message (`upstream timeout`). Built from the error's fields, which name the
 * configured target, never the client's request.
 */
export function upstreamCause(err: Error): string {
  const e = err as NodeJS.ErrnoException & { hostname?: string; address?: string; port?: number };
  if (typeof e.code !== 'string') return err.message.slice(0, MAX_CAUSE);
  const where = e.hostname ?? (e.address !== undefined ? `${e.address}${e.port ? `:${e.port}` : ''}` : '');
  return `${e.code}${where ? ` ${where}` : ''}`.slice(0, MAX_CAUSE);
}

/** What the access line shows for a user agent it does not log. */
export const USER_AGENT_NOT_LOGGED = { tooLong: '[not logged: too long]', key: '[redacted: key material]' };
/** Longest user agent logged as it is (browsers send about 150 characters). */
const MAX_USER_AGENT = 512;
/** A gateway key's shape, or a run as long as a key's random part: checked whatever the key header. */
const KEY_SHAPED = new RegExp(`nk_${ENVIRONMENT_SOURCE}_|[0-9A-Za-z]{32}`);

/**
 * The request's `User-Agent` for the access line: a client-supplied value, so checked like every
 * logged client value (threat model T5) with the request's key-material check (`keyMatcherOf`,
 * made once per request and shared with the other steps), and for any key's shape; a longer one
 * than 512 characters is not logged. The string is the header's own (no copy). Absent when the
 * client sent none.
 */
function loggedUserAgent(
  req: IncomingMessage,
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher,
): string | undefined {
  const ua = req.headers['user-agent'];
  if (ua === undefined || ua === '') return undefined;
  if (ua.length > MAX_USER_AGENT) return USER_AGENT_NOT_LOGGED.tooLong;
  if (KEY_SHAPED.test(ua) || keyMatcherOf(req).holds(ua)) return USER_AGENT_NOT_LOGGED.key;
  return ua;
}

/** A socket with the byte counts it had when its previous request ended. */
type MarkedSocket = IncomingMessage['socket'] & { [READ_MARK]?: number; [WRITTEN_MARK]?: number };
const READ_MARK = Symbol('bytesRead at the last request end');
const WRITTEN_MARK = Symbol('bytesWritten at the last request end');
const BYTES = { in: 0, out: 0 };

/**
 * Bytes read from and written to the connection since the previous request on it ended: this
 * request's head and body each way (keep-alive requests follow each other on a connection; a
 * pipelining client's next request may count in part). No allocation: the answer object is
 * reused, read at once by the caller.
 */
function connectionBytes(socket: MarkedSocket): { in: number; out: number } {
  const read = socket.bytesRead;
  const written = socket.bytesWritten;
  BYTES.in = read - (socket[READ_MARK] ?? 0);
  BYTES.out = written - (socket[WRITTEN_MARK] ?? 0);
  socket[READ_MARK] = read;
  socket[WRITTEN_MARK] = written;
  return BYTES;
}
